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
# gcc builds pg_query_go (cgo). The gateway's tests run real clients:
# psql and pgbench (postgresql-15 carries pgbench), psycopg 2 and 3,
# SQLAlchemy 1.4 (its inspector), asyncpg, psqlODBC under unixODBC (driven
# by pyodbc; the client names the driver's library by its path, so no
# odbcinst.ini entry is needed), pgjdbc with a JDK, and node-postgres
# (npm, below). chromium renders the status pages headless in their
# screenshot test.
pkgs=(make git gcc libc6-dev postgresql-client postgresql-15 python3-psycopg2 python3-psycopg python3-sqlalchemy
	python3-asyncpg odbc-postgresql unixodbc python3-pyodbc
	libpostgresql-jdbc-java default-jdk-headless chromium)
command -v node >/dev/null 2>&1 || pkgs+=(nodejs)
command -v npm >/dev/null 2>&1 || pkgs+=(npm)
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
# pgx's own test suites (tests/pgx_suite_test.go) run in pgx's module, with
# its test dependencies (testify, puddle), which cellar's go.mod need not
# name.
(cd "$(go list -m -f '{{.Dir}}' github.com/jackc/pgx/v5)" && go mod download)
# node-postgres and pg-cursor, at the versions package-lock.json pins.
if [ ! -d tests/clients/node/node_modules ] || [ tests/clients/node/package-lock.json -nt tests/clients/node/node_modules ]; then
	(cd tests/clients/node && npm ci --no-audit --no-fund --silent)
fi
# Google's Node client of the Bigtable API (@google-cloud/bigtable), pinned
# the same way.
if [ ! -d tests/clients/bigtable-node/node_modules ] || [ tests/clients/bigtable-node/package-lock.json -nt tests/clients/bigtable-node/node_modules ]; then
	(cd tests/clients/bigtable-node && npm ci --no-audit --no-fund --silent)
fi
