#!/usr/bin/env bash
# make consumer-check (part of make test): what a user of the library gets
# A one-file program that takes a lock, in a fresh module that
# requires this checkout, tidied as a user would; every module in its
# `go list -m all` must be on the list below, and its go line must stay the
# library's: taking a lock must not force a user's module to a newer Go.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
lib=github.com/zkrecipes/zkrecipes

# What a user may see, and why. Each entry is a module path, exactly.
allowed=(
	"$lib"                          # the library
	github.com/go-zookeeper/zk      # the ZooKeeper client
	github.com/cenkalti/backoff/v4  # retry policies
	github.com/google/uuid          # protected-mode node names
	github.com/petermattis/goid     # reentrancy by goroutine
	go.opentelemetry.io/otel        # the OpenTelemetry API: the global provider
	go.opentelemetry.io/otel/metric # the OpenTelemetry API: instruments
	go.opentelemetry.io/otel/trace  # required by the otel module
	go.opentelemetry.io/auto/sdk    # required by the otel module
	github.com/go-logr/logr         # otel's internal logger
	github.com/go-logr/stdr         # otel's internal logger
	github.com/cespare/xxhash/v2    # otel's attribute hashing
	github.com/stretchr/testify     # the library's own tests (and otel's)
	go.uber.org/goleak              # the library's own tests
	go.yaml.in/yaml/v3              # testify
	# Listed in the OpenTelemetry API modules' go.mod files, for their own
	# tests; no package of them is built into a user's program.
	github.com/google/go-cmp
	github.com/davecgh/go-spew
	github.com/pmezard/go-difflib
	github.com/kr/pretty
	github.com/kr/text
	github.com/rogpeppe/go-internal
	gopkg.in/check.v1
	gopkg.in/yaml.v3
)

go_line=$(sed -n 's/^go \([0-9.]*\)$/\1/p' "$root/go.mod")
dir=$(mktemp -d)
trap 'chmod -R u+w "$dir" 2>/dev/null; rm -rf "$dir"' EXIT
cat >"$dir/main.go" <<'EOF'
// A user's program: a lock around some work.
package main

import (
	"context"
	"log"
	"time"

	"github.com/zkrecipes/zkrecipes/framework"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := framework.Dial(ctx, []string{"127.0.0.1:2181"})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	m, err := mutex.New(client, "/locks/report")
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	h, err := m.Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer h.Release()
	log.Printf("holding %s (token %d)", h.Path(), h.Token())
}
EOF

cd "$dir"
# The user's module stands alone: no workspace of ours, no flags of ours.
export GOWORK=off GOFLAGS=
go mod init example.com/consumer >/dev/null 2>&1
go mod edit -go="$go_line" -require="$lib@v0.0.0-00010101000000-000000000000" -replace="$lib=$root"
go mod tidy
go build -o /dev/null .

got_line=$(sed -n 's/^go \([0-9.]*\)$/\1/p' go.mod)
fail=0
if [ "$got_line" != "$go_line" ]; then
	echo "consumer-check: go mod tidy raised the user's go line from $go_line to $got_line: a dependency needs a newer Go than the library says" >&2
	fail=1
fi
mapfile -t all < <(go list -m -f '{{.Path}}' all)
mods=("${all[@]:1}") # the user's own module aside
for m in "${mods[@]}"; do
	ok=0
	for a in "${allowed[@]}"; do
		[ "$m" = "$a" ] && ok=1 && break
	done
	if [ $ok -eq 0 ]; then
		by=$(go mod graph | awk -v m="$m" 'index($2, m "@") == 1 { print $1 }' | sort -u | paste -sd' ' -)
		echo "consumer-check: a user of the library gets $m, required by $by" >&2
		fail=1
	fi
done
echo "consumer-check: a program that takes a lock: ${#all[@]} modules in go list -m all $(wc -l <go.sum) go.sum lines, go line $got_line"
exit $fail
