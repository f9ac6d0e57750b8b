#!/usr/bin/env bash
# Starts a worker in the background: `sbin/start-worker.sh [svc://<master-host>:<master-port>] [svc worker options]`
# (the contract's form; without the URL, the first of svc.master.endpoints). SVC_INSTANCE numbers several workers on
# one host. Its pid file and log are under SVC_PID_DIR and SVC_LOG_DIR; docs/deployment.md.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/svc-daemon.sh"
svc_start worker "$@"
