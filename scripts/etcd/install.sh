#!/usr/bin/env bash
# Installs etcd (Debian's etcd-server, 3.4) and etcdctl (etcd-client) when missing: the coordination store of a
# high-availability master group, which the tests of runtime/ha/ and `npm start -- --ha` start on loopback; the
# tests of etcd's authentication set its users up with etcdctl. The package's own service is not used:
# each test runs its own etcd in a temporary directory.
set -euo pipefail
if command -v etcd >/dev/null && command -v etcdctl >/dev/null; then
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "etcd or etcdctl is missing; install them as root (apt-get install etcd-server etcd-client)" >&2
  exit 1
fi
apt-get update
# policy-rc.d on containers refuses to start the packaged service, which is what we want here.
apt-get install -y --no-install-recommends etcd-server etcd-client
etcd --version | head -1
