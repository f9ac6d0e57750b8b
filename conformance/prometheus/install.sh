#!/usr/bin/env bash
# Installs Debian's prometheus package when the prometheus binary is missing, as .ci/run installs openssl: the
# top-50 check (conformance/checks/top50.ts) runs the contract's query through a real Prometheus.
set -euo pipefail
if command -v prometheus >/dev/null; then
  exit 0
fi
apt-get update
DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends prometheus
