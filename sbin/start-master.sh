#!/usr/bin/env bash
# Starts a master in the background: `sbin/start-master.sh [svc master options]`, e.g. `--conf key=value`.
# Its pid file and log are under SVC_PID_DIR and SVC_LOG_DIR; docs/deployment.md.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/svc-daemon.sh"
svc_start master "$@"
