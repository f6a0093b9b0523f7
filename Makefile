# spangle: `make run` serves the sample data; `make test` runs every test.
GO        ?= go
BIN       := bin
PKGS      := ./...
TEST_FLAGS ?= -race -timeout 9m
BENCH_QUICK ?=
# What --version, the status pages and spangle_*_build_info report
# (shared/buildinfo); the toolchain's own VCS stamp is the fallback.
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT    ?= $(shell git rev-parse HEAD 2>/dev/null)
LDFLAGS   := -X spangle/shared/buildinfo.version=$(VERSION) -X spangle/shared/buildinfo.commit=$(COMMIT)

.PHONY: all build run test deps lint bench bench-scale e2e clean fuzz

all: build

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/ ./storaged ./routerd ./spangle

# The embedded default: standalone storaged + routerd on testdata/sample.
run: build
	./scripts/run.sh

# What Go does not fetch: ZooKeeper, Chromium, LuaJIT (Debian packages).
deps:
	./scripts/deps.sh

# client/ is a module of its own (docs/design.md): ./... stops at it, so
# its tests and vet run apart.
test: deps lint
	$(GO) test $(TEST_FLAGS) $(PKGS)
	cd client && $(GO) test $(TEST_FLAGS) ./...

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	cd client && $(GO) vet ./...

# Short fuzzing of every fuzz target (FUZZTIME each).
FUZZTIME ?= 20s
fuzz:
	./scripts/fuzz.sh $(FUZZTIME)

bench: build
	$(GO) run ./bench/cmd/spanglebench $(if $(BENCH_QUICK),-quick -out bench/out/results-quick.json,-out bench/results.json)

# How cost grows (issue 21): keys per node and dbs per cluster, with plots.
# Not run by CI. The full run writes about 13 GB; pick sizes with
# SCALE_KEYS and SCALE_DBS (see bench/README.md).
SCALE_KEYS ?= 1M,10M,100M
SCALE_DBS  ?= 10,100,500
SCALE_OUT  ?= bench/results-scale
bench-scale: build
	$(GO) run ./bench/cmd/spanglescale -keys '$(SCALE_KEYS)' -dbs '$(SCALE_DBS)' -out $(SCALE_OUT) $(SCALE_FLAGS)

e2e: build
	$(GO) test -tags e2e -count=1 -timeout 20m -v ./e2e

clean:
	rm -rf $(BIN) .run

-include deploy/deploy.mk
