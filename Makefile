# zkrecipes: make demo, make test. Both install what is missing first.
SHELL := /bin/bash
GO ?= go
# The repository's Go modules (docs/modules.md): the library at the root,
# the zkr CLI and the chaos suite in modules of their own, all three in
# go.work, so that a user of the library gets none of their requirements;
# and the test kit for users' tests, zktest, which has a go.work of its
# own: testcontainers-go needs an OpenTelemetry newer than the library's
# go line allows, and in the shared workspace go work sync would raise it.
MODULES := . cmd/zkr integration/chaos zktest
# Developer tools are pinned in the tools module's go.mod (tool directive)
# and run from there: nothing is installed into GOPATH/bin, nothing found
# on PATH is trusted (scripts/staticcheck runs the pinned one). The module
# stays out of go.work, so that the tools' requirements never mix with the
# code's. Upgrade one with
# `cd internal/tools && GOWORK=off go get -tool PKG@VERSION`.
TOOLS := internal/tools
# Runs a command in each module's directory, stopping at the first failure.
each = for m in $(MODULES); do echo "== $$m: $(1)"; (cd $$m && $(1)) || exit 1; done
GOTEST_FLAGS ?= -race -count=1 -timeout 20m

.PHONY: deps build test chaos chaos-long demo bench bench-peers bench-watch bench-engine vet fmt-check staticcheck mod-check consumer-check structure

## deps: ZooKeeper 3.8, a JDK and the Curator 5.4 jars from Debian; the Go
## modules and pinned tools (downloads only: go.mod pins their versions).
deps:
	@scripts/deps.sh
	@$(call each,$(GO) mod download) >/dev/null
	@GOWORK=off $(GO) -C $(TOOLS) mod download

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

## vet: go vet in every module. Its stdversion check holds each module to
## its go line: the library's says which Go a user needs, and a
## standard-library call newer than that fails here.
vet:
	@$(call each,$(GO) vet ./...)
	@GOWORK=off $(GO) -C $(TOOLS) vet ./...

staticcheck:
	@$(call each,$(CURDIR)/scripts/staticcheck ./...)
	@cd $(TOOLS) && GOWORK=off $(CURDIR)/scripts/staticcheck ./...

## mod-check: every go.mod and go.sum tidy, and go.work in sync (the
## modules agree on the versions they share), changing nothing.
mod-check:
	@$(call each,$(GO) mod tidy -diff)
	@GOWORK=off $(GO) -C $(TOOLS) mod tidy -diff
	@scripts/work-sync-check.sh

## consumer-check: the module graph of a program that takes a lock holds
## only what the library needs.
consumer-check:
	@scripts/consumer-check.sh

## test: format check, module checks, vet, staticcheck, every module's
## tests against real servers under the race detector, then again without
## it the few (...WithoutRace) that go-zookeeper's own reconnect race would
## trip, then the short chaos suite. The race pass runs through racegate:
## a test that any reconnect with watches set made trip go-zookeeper's race
## on lastZxid (and only that race) is run again without -race.
RACEGATE := $(CURDIR)/$(TOOLS)/bin/racegate
test: deps fmt-check mod-check consumer-check vet staticcheck
	@GOWORK=off $(GO) -C $(TOOLS) test -count=1 ./...
	@GOWORK=off $(GO) -C $(TOOLS) build -o $(RACEGATE) ./racegate
	@$(call each,$(RACEGATE) $(GOTEST_FLAGS) ./...)
	@$(call each,$(GO) test -count=1 -timeout 20m -run 'WithoutRace$$' ./...)
	@$(MAKE) --no-print-directory chaos

## chaos: the fault suite, a first pass over every fault kind per recipe,
## 70-120 s each, ~17 min for the 12 recipes (LONG=1, or make chaos-long: five minutes of faults
## each). Histories and summaries land in $(CHAOS_OUT). Not under
## -race: the contenders are this test binary, and go-zookeeper's known
## race (see docs/testing.md) would fail them for the client's bug, not ours.
CHAOS_OUT ?= $(CURDIR)/chaos-out
## On failure, what failed is printed again last (the seed, each error,
## each violations line), so that a log's tail says why.
chaos: deps
	@mkdir -p $(CHAOS_OUT)
	set -o pipefail; ZKR_CHAOS=$(if $(LONG),long,short) ZKR_CHAOS_OUT=$(CHAOS_OUT) \
		$(GO) -C integration/chaos test -count=1 -v -timeout 120m -run '^TestChaos$$' . | grep -v '^=== RUN' \
		| tee $(CHAOS_OUT)/chaos.log || { \
		echo "chaos: what failed (all of it in $(CHAOS_OUT)/chaos.log):"; \
		grep -E 'chaos_test.go:[0-9]+: .|--- FAIL|violations: ' $(CHAOS_OUT)/chaos.log | head -80; exit 1; }

## chaos-long: the fault suite with five minutes of faults per recipe.
chaos-long:
	@$(MAKE) --no-print-directory chaos LONG=1

## build: the zkr CLI, as ./zkr, stamped with the checkout's revision
## (zkr --version) whatever GOFLAGS says about -buildvcs.
build:
	$(GO) -C cmd/zkr build -buildvcs=auto -o $(CURDIR)/zkr .

## demo: zkr dev starts a throwaway ZooKeeper; zkr lock and zkr elect on it.
demo: deps build
	@ZKR=./zkr scripts/demo.sh

## bench: the speed targets, each against go-zookeeper's zk.Lock on one server.
bench: deps
	$(GO) test -run '^$$' -bench . -benchtime 1x -timeout 30m ./recipes/mutex/

## bench-peers: zkrecipes beside go-zookeeper's zk.Lock and Curator 5.4 on the
## same workloads and server, over loopback, through a 1 ms round-trip delay
## and with the server pinned to one core (~25 min); rewrites the tables in
## docs/benchmarks.md.
bench-peers: deps
	$(GO) test -run '^$$' -bench Peers -benchtime 1x -timeout 90m ./integration/internal/peers/ \
		-args -peers.out=$(CURDIR)/docs/benchmarks.md

## bench-watch: the watching recipes at scale beside Curator 5.4 on one
## server: the cache over a tree of 20 x 20 x 50 = 20,421 nodes beside
## CuratorCache and TreeCache, a service cache of 1,000 instances beside
## ServiceCache, a partitioner of 1,000 items over 5 members (~5 min);
## rewrites its table in docs/benchmarks.md. SHAPE=20x20x4 (or the
## environment's ZKR_WATCH_SHAPE) is a quick run of 2,021 nodes, printed only.
SHAPE ?= $(ZKR_WATCH_SHAPE)
bench-watch: deps
	$(GO) test -run '^$$' -bench Watch -benchtime 1x -timeout 60m ./integration/internal/watchbench/ \
		-args $(if $(SHAPE),-watch.shape=$(SHAPE),-watch.shape=20x20x50 -watch.out=$(CURDIR)/docs/benchmarks.md)

## structure: the library's shape (docs/layout.md);
## BASELINE=docs/structure-baseline.json adds those that moved since it.
## Not part of test: it measures, it does not judge.
structure:
	@GOWORK=off $(GO) -C $(TOOLS) run ./structure -root $(CURDIR) $(if $(BASELINE),-baseline $(abspath $(BASELINE)))

## bench-engine: the engine's hot paths, allocations included.
bench-engine:
	$(GO) test -run '^$$' -bench Engine -benchmem ./engine/ ./framework/
