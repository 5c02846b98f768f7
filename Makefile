# One build-tag set everywhere: go-sqlite3's C code is compiled once per tag set.
export CGO_ENABLED := 1
TAGS := sqlite_omit_load_extension
GO ?= go
DEMO ?= testdata/traces/dense-eager.sqlite.gz

.PHONY: build test vet demo bench golden fuzz bigtrace clean

build:
	$(GO) build -tags '$(TAGS)' -o bin/stepstat ./cmd/stepstat

test:
	$(GO) test -tags '$(TAGS)' ./...

golden:
	$(GO) test -tags '$(TAGS)' ./... -update

vet:
	$(GO) vet -tags '$(TAGS)' ./...
	@test -z "$$(gofmt -l .)" || { gofmt -l .; echo "gofmt: files above need formatting"; exit 1; }

clean:
	rm -rf bin out
