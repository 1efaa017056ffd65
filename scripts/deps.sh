#!/usr/bin/env bash
# Installs what cellar's build and tests need on a Debian machine. It is
# idempotent: run it as often as you like. The build needs Go (go.mod's
# toolchain line fetches the right version through the module proxy) and
# the Go modules. "deps.sh bench" also installs the benchmark's peers that
# come as Debian packages (etcd-server).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v go >/dev/null 2>&1; then
	if [ -x /usr/local/go/bin/go ]; then
		export PATH=/usr/local/go/bin:$PATH
	else
		echo "deps: Go is not installed; install Go 1.21 or newer (https://go.dev/dl/) and run again" >&2
		exit 1
	fi
fi

# Debian packages, installed only when missing.
need=()
# gcc builds pg_query_go (cgo); psql is a test client of the gateway.
pkgs=(make git gcc libc6-dev postgresql-client)
if [ "${1:-}" = bench ]; then
	pkgs+=(etcd-server)
fi
for pkg in "${pkgs[@]}"; do
	dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
	sudo=""
	[ "$(id -u)" -eq 0 ] || sudo="sudo"
	$sudo apt-get update
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y "${need[@]}"
fi

go mod download
(cd tests/bench && go mod download)
