#!/usr/bin/env bash
# The container's entrypoint: `entrypoint.sh master|worker [svc options]`. It runs the role in the foreground
# (signals reach node directly: SIGTERM is the worker's configured exit), configured by SVC_CONF_DIR/svc-defaults.conf
# (the image's own, deploy/container/svc-defaults.conf, unless one is mounted over /etc/svc) and the options.
set -euo pipefail
role="${1:-}"
case "${role}" in
  master | worker) shift ;;
  *)
    echo "usage: entrypoint.sh master|worker [svc options]" >&2
    exit 2
    ;;
esac
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export SVC_HOME="${SVC_HOME:-$(cd "${here}/../.." && pwd)}"
export SVC_FOREGROUND=1
exec "${SVC_HOME}/sbin/start-${role}.sh" "$@"
