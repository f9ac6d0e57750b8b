#!/usr/bin/env bash
# Stops the master this host's pid file names (SIGTERM, then SIGKILL after SVC_MASTER_STOP_TIMEOUT seconds).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/svc-daemon.sh"
svc_stop master "${SVC_MASTER_STOP_TIMEOUT}"
