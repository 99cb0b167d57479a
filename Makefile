# zkrecipes: make demo, make test. Both install what is missing first.
SHELL := /bin/bash
GO ?= go
# Developer tools are pinned in go.mod (tool directive) and run with
# `go tool`: nothing is installed into GOPATH/bin, nothing found on PATH is
# trusted. Upgrade one with `go get -tool PKG@VERSION`.
STATICCHECK := $(GO) tool staticcheck
GOTEST_FLAGS ?= -race -count=1 -timeout 20m

.PHONY: deps build test chaos chaos-long demo bench bench-peers bench-engine vet fmt-check staticcheck

## deps: ZooKeeper 3.8, a JDK and the Curator 5.4 jars from Debian; the Go
## modules and pinned tools (downloads only: go.mod pins their versions).
deps:
	@scripts/deps.sh
	@$(GO) mod download

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

staticcheck:
	$(STATICCHECK) ./...

## test: format check, vet, staticcheck, every test against real servers
## under the race detector, then again without it the few (...WithoutRace)
## that go-zookeeper's own reconnect race would trip, then the short chaos
## suite.
test: deps fmt-check vet staticcheck
	$(GO) test $(GOTEST_FLAGS) ./...
	$(GO) test -count=1 -timeout 20m -run 'WithoutRace$$' ./...
	@$(MAKE) --no-print-directory chaos

## chaos: the fault suite, a first pass over every fault kind per recipe,
## about 80s each (LONG=1, or make chaos-long: five minutes of faults
## each). Histories and summaries land in $(CHAOS_OUT). Not under
## -race: the contenders are this test binary, and go-zookeeper's known
## race (see docs/testing.md) would fail them for the client's bug, not ours.
CHAOS_OUT ?= $(CURDIR)/chaos-out
chaos: deps
	set -o pipefail; ZKR_CHAOS=$(if $(LONG),long,short) ZKR_CHAOS_OUT=$(CHAOS_OUT) \
		$(GO) test -count=1 -v -timeout 120m -run '^TestChaos$$' ./internal/chaos/ | grep -v '^=== RUN'

## chaos-long: the fault suite with five minutes of faults per recipe.
chaos-long:
	@$(MAKE) --no-print-directory chaos LONG=1

## build: the zkr CLI, as ./zkr, stamped with the checkout's revision
## (zkr --version) whatever GOFLAGS says about -buildvcs.
build:
	$(GO) build -buildvcs=auto -o zkr ./cmd/zkr

## demo: zkr dev starts a throwaway ZooKeeper; zkr lock and zkr elect on it.
demo: deps build
	@ZKR=./zkr scripts/demo.sh

## bench: the speed targets, each against go-zookeeper's zk.Lock on one server.
bench: deps
	$(GO) test -run '^$$' -bench . -benchtime 1x -timeout 30m ./recipes/mutex/

## bench-peers: zkrecipes beside go-zookeeper's zk.Lock and Curator 5.4 on the
## same workloads and server; rewrites the table in docs/benchmarks.md.
bench-peers: deps
	$(GO) test -run '^$$' -bench Peers -benchtime 1x -timeout 60m ./integration/peers/ \
		-args -peers.out=$(CURDIR)/docs/benchmarks.md

## bench-engine: the engine's hot paths, allocations included.
bench-engine:
	$(GO) test -run '^$$' -bench Engine -benchmem ./internal/contend/ ./framework/
