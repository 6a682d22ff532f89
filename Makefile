# kwrec Makefile. `make demo` runs the main job, `make test` the tests.
# The first run builds the test control plane (kube-apiserver and etcd, a few
# minutes on 2 cores) into ~/.cache/kwrec; later runs reuse it.
SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
GO ?= go
BIN := bin
# The directory `make controlplane` prints last; tests read it as
# KUBEBUILDER_ASSETS (envtest's variable).
ASSETS = $$(controlplane/build.sh | tail -n 1)
FUZZTIME ?= 20s
FUZZMINIMIZE ?= 1s
FUZZSEEDS ?= 500
FUZZREQUESTS ?= 200
BENCHCOUNT ?= 5
BENCHSTAT := golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2

.PHONY: all build test controlplane e2e bench soak fuzz fuzz-live lint demo clean

all: build

build:
	$(GO) build ./...
	$(GO) build -o $(BIN)/kwrec ./cmd/kwrec

## controlplane: build kube-apiserver and etcd once; prints their directory last.
controlplane:
	@controlplane/build.sh

## test: vet, then every test with the race detector, control-plane tests included
## (replay's run over both of its sources, replay.Open and replay.New, as subtests).
test:
	$(GO) vet ./...
	export KUBEBUILDER_ASSETS="$(ASSETS)"; $(GO) test -race -count=1 ./...

## e2e: only the tests against the live control plane (named TestLive...), required to run.
e2e:
	export KUBEBUILDER_ASSETS="$(ASSETS)" KWREC_REQUIRE_CONTROLPLANE=1; $(GO) test -count=1 -run 'Live' ./...

## bench: the benchmarks, several counts, summarised by benchstat.
bench:
	mkdir -p $(BIN)
	@# The suite (internal/testkit/benchmarks, see BENCHMARKS.md): every target BENCHCOUNT times (default 5,
	@# each count one round of its side-by-side ratios), then the long ones once: the
	@# million-event target (2-3 minutes a run), record --all on a loaded control plane (target 11,
	@# 10 minutes of recording and about 2 of setup and compression; KWREC_BENCH_RECORD_FOR=2m for a
	@# quicker look) and kwrec push of target 11's load at --speed 1 (BenchmarkPushRecordAll, 3
	@# minutes recorded, 3 pushes of about 5: 18 minutes); about 75 minutes on 2 cores, 45 with
	@# BENCHCOUNT=1. BENCHPKGS=./... adds the cassette write-rate benchmark (cassettes/bench_test.go).
	$(GO) test -run '^$$' -bench . -skip 'AMillionEvents|RecordAll|RetentionSoak' -benchmem -count $(BENCHCOUNT) -timeout 120m $(or $(BENCHPKGS),./internal/testkit/benchmarks/) | tee $(BIN)/bench.txt
	$(GO) test -run '^$$' -bench 'AMillionEvents|RecordAll' -benchmem -count 1 -timeout 90m ./internal/testkit/benchmarks/ | tee -a $(BIN)/bench.txt
	$(GO) run $(BENCHSTAT) $(BIN)/bench.txt

## soak: target 12, record --keep on a loaded control plane for SOAKFOR (default 20m) within
## SOAKBUDGET (default 5MB); issue 27 asks for SOAKFOR=2h SOAKBUDGET=50MB.
soak:
	export KUBEBUILDER_ASSETS="$(ASSETS)"; KWREC_BENCH_SOAK_FOR=$(or $(SOAKFOR),20m) KWREC_BENCH_SOAK_BUDGET=$(or $(SOAKBUDGET),5MB) \
	  $(GO) test -run '^$$' -bench RetentionSoak -benchtime 1x -timeout 4h ./internal/testkit/benchmarks/

## fuzz-live: the differential fuzzer (TestLiveDifferentialFuzz) at FUZZSEEDS (default 500)
## seeds of FUZZREQUESTS (default 200) requests, ten times make test's 50 x 200 (about 10
## minutes on 2 cores); a seed that differs is shrunk and printed as table rows.
## KWREC_FUZZ_SEED=N runs seed N alone.
fuzz-live:
	export KUBEBUILDER_ASSETS="$(ASSETS)" KWREC_REQUIRE_CONTROLPLANE=1 KWREC_FUZZ_SEEDS=$(FUZZSEEDS) KWREC_FUZZ_REQUESTS=$(FUZZREQUESTS); \
	  $(GO) test -race -count=1 -timeout 2h -run '^TestLiveDifferentialFuzz$$' -v ./internal/testkit/conformance | grep -v '^=== RUN'

## fuzz: every Fuzz target for FUZZTIME (default 20s) each, printing its execs. New
## interesting inputs are minimized for at most FUZZMINIMIZE (Go's default, 60s, would
## spend a short run minimizing instead of fuzzing). The differential fuzzer against
## kube-apiserver is `make fuzz-live`.
fuzz:
	@for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    dir=$$($(GO) list -f '{{.Dir}}' $$pkg)/testdata/fuzz/$$f; \
	    before=$$(ls $$dir 2>/dev/null | wc -l || true); \
	    if ! out=$$($(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZE) $$pkg 2>&1); then \
	      after=$$(ls $$dir 2>/dev/null | wc -l || true); \
	      if [ "$$after" = "$$before" ] && echo "$$out" | grep -q 'context deadline exceeded'; then \
	        : "Go 1.26's fuzz coordinator can fail a target as -fuzztime ends (go.dev/issue/75804): no input, not a crasher"; \
	      else echo "$$out"; echo "fuzz: $$pkg $$f failed; the input is in $$dir"; exit 1; fi; \
	    fi; \
	    execs=$$(echo "$$out" | { grep -o 'execs: [0-9]*' || true; } | tail -n 1 | cut -d' ' -f2); \
	    base=$$(echo "$$out" | { grep -o 'baseline coverage: [0-9]*/[0-9]*' || true; } | tail -n 1 | cut -d' ' -f3); \
	    if [ -n "$$execs" ]; then what="$$execs execs"; else what="0 execs (still replaying its corpus: $$base)"; fi; \
	    printf '%-45s %-28s %s in %s\n' "$${pkg#github.com/kwrec/kwrec/}" "$$f" "$$what" "$(FUZZTIME)"; \
	  done; \
	done

## lint: gofmt, go vet, an untidy go.mod (go mod tidy -diff) and staticcheck at a pinned
## version (fetched through the Go module proxy on first use).
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) mod tidy -diff
	$(GO) run $(STATICCHECK) ./...

## demo: replay a recorded example with a 410 offline, as soon as kwrec is built; then build the
## control plane if it is not cached, record ConfigMaps from it live and replay them with a 410.
demo:
	$(GO) build -o $(BIN)/kwrec ./cmd/kwrec
	./demo/demo.sh

clean:
	rm -rf $(BIN)
