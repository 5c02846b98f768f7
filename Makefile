# One build-tag set everywhere: go-sqlite3's C code is compiled once per tag set.
SHELL := /bin/bash
export CGO_ENABLED := 1
TAGS := sqlite_omit_load_extension
GO ?= go
DEMO ?= testdata/traces/dense-eager.sqlite.gz
N ?= 20000000
BIG ?= testdata/big/big.sqlite
BIGSRC ?= testdata/traces/tp2-moe-eager-nvtx.sqlite.gz
REPEAT ?= 1

.PHONY: build test check vet demo example bench bigtrace golden fuzz clean

build:
	$(GO) build -buildvcs=auto -tags '$(TAGS)' -o bin/stepstat ./cmd/stepstat

# Every test, then again under the race detector the packages whose tests do not measure
# memory (cmd/stepstat bounds the peak RSS of child runs, which -race multiplies). Each
# pass ends with its totals ("tests: N passed, N failed, N skipped", then "race: ..."),
# the line before naming the tests skipped and why (no test corpus, no browser);
# cmd/testsum reads go test -json. The race pass takes most of the time (the timeout
# leaves room for a loaded machine: cmd/stepstat alone passed 10 minutes, go test's default,
# under load). CI (.ci/run) runs exactly this.
NORACE := github.com/stepstat/stepstat/cmd/stepstat
test:
	@set -o pipefail; $(GO) test -timeout 30m -tags '$(TAGS)' -json ./... | $(GO) run ./cmd/testsum -label tests
	@set -o pipefail; $(GO) test -race -timeout 60m -tags '$(TAGS)' -json $$($(GO) list ./... | grep -vx '$(NORACE)') | $(GO) run ./cmd/testsum -label race

# The edit loop: gofmt, vet and the tests in -short mode (no race pass; the tests that
# grow large inputs, run child processes for minutes or open a browser skip), with the same
# totals line.
check:
	@test -z "$$(gofmt -l .)" || { gofmt -l .; echo "gofmt: files above need formatting"; exit 1; }
	$(GO) vet -tags '$(TAGS)' ./...
	@set -o pipefail; $(GO) test -short -tags '$(TAGS)' -json ./... | $(GO) run ./cmd/testsum -label check

golden:
	$(GO) test -tags '$(TAGS)' ./... -update

vet:
	$(GO) vet -tags '$(TAGS)' ./...
	@test -z "$$(gofmt -l .)" || { gofmt -l .; echo "gofmt: files above need formatting"; exit 1; }

# The main job on the small real capture shipped in testdata: text report on stdout,
# the HTML report in out/demo.html.
demo: build
	@mkdir -p out
	gunzip -c $(DEMO) > out/demo.sqlite
	bin/stepstat report --html out/demo.html out/demo.sqlite
	@echo "HTML report: out/demo.html"

# The README's example outputs, from the real captures in testdata/traces: the report of
# the eager capture and its diff against the CUDA-graph capture of the same workload, as
# piped (100 columns), in out/example-report.txt and out/example-diff.txt.
example: build
	@mkdir -p out
	gunzip -c testdata/traces/dense-eager.sqlite.gz > out/dense-eager.sqlite
	gunzip -c testdata/traces/dense-graph.sqlite.gz > out/dense-graph.sqlite
	cd out && ../bin/stepstat report dense-eager.sqlite > example-report.txt
	cd out && ../bin/stepstat diff eager=dense-eager.sqlite graph=dense-graph.sqlite > example-diff.txt
	@echo "out/example-report.txt out/example-diff.txt"

# A large trace for benchmarks: a real capture repeated in time (N kernels); by default the
# 2-GPU eager capture with NVTX (BIGSRC=testdata/traces/tp2-moe-graph-nvtx.sqlite.gz for
# CUDA graphs).
bigtrace:
	$(GO) run -tags '$(TAGS)' ./cmd/bigtrace -src $(BIGSRC) -n $(N) -o $(BIG)

# Wall time and peak memory of report (JSON, HTML) and diff on the large trace, against
# sqlite3 scanning the same kernel columns, in one run; then the Go benchmarks.
bench: build
	@test -f $(BIG) || $(MAKE) bigtrace
	REPEAT=$(REPEAT) bash cmd/bigtrace/bench.sh $(BIG)
	STEPSTAT_BENCH_TRACE=$(abspath $(BIG)) $(GO) test -tags '$(TAGS)' -run '^$$' -bench . -benchtime 1x -benchmem ./nsys ./breakdown

FUZZTIME ?= 1m
fuzz:
	$(GO) test -tags '$(TAGS)' -run '^$$' -fuzz FuzzClassify -fuzztime $(FUZZTIME) ./breakdown/kernelclass
	$(GO) test -tags '$(TAGS)' -run '^$$' -fuzz FuzzDecodeNCCL -fuzztime $(FUZZTIME) ./breakdown/kernelclass
	$(GO) test -tags '$(TAGS)' -run '^$$' -fuzz FuzzStepRanges -fuzztime $(FUZZTIME) ./breakdown
	$(GO) test -tags '$(TAGS)' -run '^$$' -fuzz FuzzOpen -fuzztime $(FUZZTIME) ./nsys
	$(GO) test -tags '$(TAGS)' -run '^$$' -fuzz FuzzBadRow -fuzztime $(FUZZTIME) ./nsys
	$(GO) test -tags '$(TAGS)' -run '^$$' -fuzz FuzzDirect -fuzztime $(FUZZTIME) ./nsys

clean:
	rm -rf bin out
