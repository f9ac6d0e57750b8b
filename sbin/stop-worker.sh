#!/usr/bin/env bash
# Stops worker SVC_INSTANCE of this host with SIGTERM: its configured exit, graceful when
# svc.worker.graceful.shutdown.enabled (it then keeps its recovery store for a restart under the same ports). It is
# killed only after SVC_WORKER_STOP_TIMEOUT seconds, which is longer than the graceful-shutdown timeout by default.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/svc-daemon.sh"
svc_stop worker "${SVC_WORKER_STOP_TIMEOUT}"
