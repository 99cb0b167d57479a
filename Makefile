# zkrecipes: make demo, make test. Both install what is missing first.
SHELL := /bin/bash
GO ?= go
GOBIN := $(shell $(GO) env GOPATH)/bin
STATICCHECK := $(GOBIN)/staticcheck
STATICCHECK_VERSION ?= 2026.2.2
GOTEST_FLAGS ?= -race -count=1 -timeout 20m

.PHONY: deps build test chaos demo bench vet fmt-check staticcheck

## deps: ZooKeeper 3.8 and Curator 5.4 jars from Debian, and staticcheck.
deps:
	@scripts/deps.sh
	@test -x $(STATICCHECK) || $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

staticcheck:
	$(STATICCHECK) ./...

## test: format check, vet, staticcheck, every test against real servers,
## then the short chaos suite.
test: deps fmt-check vet staticcheck
	$(GO) test $(GOTEST_FLAGS) ./...
	@$(MAKE) --no-print-directory chaos

## chaos: the fault suite, about 35s of faults per recipe (LONG=1: five
## minutes each). Histories and summaries land in $(CHAOS_OUT). Not under
## -race: the contenders are this test binary, and go-zookeeper's known
## race (see README) would fail them for the client's bug, not ours.
CHAOS_OUT ?= $(CURDIR)/chaos-out
chaos: deps
	set -o pipefail; ZKR_CHAOS=$(if $(LONG),long,short) ZKR_CHAOS_OUT=$(CHAOS_OUT) \
		$(GO) test -count=1 -v -timeout 120m -run '^TestChaos$$' ./integration/chaos/ | grep -v '^=== RUN'

## build: the zkr CLI, as ./zkr.
build:
	$(GO) build -o zkr ./cmd/zkr

## demo: zkr dev starts a throwaway ZooKeeper; zkr lock and zkr elect on it.
demo: deps build
	@ZKR=./zkr scripts/demo.sh

## bench: the speed targets, each against go-zookeeper's zk.Lock on one server.
bench: deps
	$(GO) test -run '^$$' -bench . -benchtime 1x -timeout 30m ./recipes/mutex/
