#!/usr/bin/env bash
# Regenerates the committed .pb.go files from the .proto files, with
# Debian's protoc (protobuf-compiler) and the Go plugins at the versions
# that match go.mod. Idempotent: installs only what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v protoc >/dev/null 2>&1; then
	sudo=""
	[ "$(id -u)" -eq 0 ] || sudo="sudo"
	$sudo apt-get update
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y protobuf-compiler
fi
bin="$(go env GOPATH)/bin"
export PATH="$bin:$PATH"
command -v protoc-gen-go >/dev/null 2>&1 || go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.11
command -v protoc-gen-go-grpc >/dev/null 2>&1 || go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2

for proto in $(find . -name '*.proto' -not -path './tests/bench/*' -not -path './.git/*' -not -path '*/node_modules/*'); do
	protoc -I "$(dirname "$proto")" \
		--go_out="$(dirname "$proto")" --go_opt=paths=source_relative \
		--go-grpc_out="$(dirname "$proto")" --go-grpc_opt=paths=source_relative \
		"$proto"
done
