GO ?= go
BIN := bin/deer-go

.PHONY: run test build vet fmt bench fuzz clean

## run: start the server on 127.0.0.1:8000 with the embedded defaults
run:
	$(GO) run . serve

## build: compile the binary into bin/
build:
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN) .

## test: vet and the whole test suite with the race detector
test:
	$(GO) vet ./...
	$(GO) test -race -count=1 ./...

## bench: orchestration and component benchmarks
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./biz/... ./infra/...

## fuzz: run each fuzz target for a short while
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzRepairJSON -fuzztime 30s ./biz/graph

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf bin
