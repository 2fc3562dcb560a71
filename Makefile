# linkd: make run | make test | make test-chdb | make test-integration | make bench | make lint | make fmt | make build
GO        ?= go
DATA_DIR  ?= ./data
BIN       ?= bin/linkd
PKGS      ?= ./...
TEST_TIMEOUT ?= 30m

.PHONY: run build test test-chdb test-integration bench bench-redirect lint fmt clean

# Run everything in one process on embedded defaults (no server to install).
run:
	$(GO) run ./cmd/linkd serve --data-dir $(DATA_DIR)

# Built as go build builds it: with cgo where a C compiler is found, which
# keeps Pebble's memtables and caches off the Go heap (without cgo the same
# redirects took 10-17% more CPU: docs/adr/0004-pebble-memory-without-cgo.md). For a
# static binary: CGO_ENABLED=0 make build (the container image is one).
build:
	$(GO) build -trimpath -o $(BIN) ./cmd/linkd

# The whole test suite: unit, API, Kafka (in-process kfake broker) and, when
# a ClickHouse server is installed or LINKD_TEST_CLICKHOUSE_DSN is set,
# ClickHouse tests; then the ClickHouse projection's tests again on current
# ClickHouse (test-chdb). EventStoreDB tests run when ESDB_TEST_URL is set;
# PostgreSQL tests when Debian's postgresql is installed (throwaway clusters)
# or LINKD_TEST_POSTGRES_DSN is set.
test:
	$(GO) vet $(PKGS)
	env -u LINKD_TEST_CHDB $(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) $(PKGS)
	@$(MAKE) --no-print-directory test-chdb

# The ClickHouse projection's tests on ClickHouse 26.7 in process (chDB):
# scripts/chdb-lib.sh fetches libchdb.so once (178 MB from the npm registry,
# cached under ~/.cache/linkd). Without it (no network, not linux/amd64) the
# step is skipped, and says so.
test-chdb:
	@if lib=$$(scripts/chdb-lib.sh); then \
		echo "LINKD_TEST_CHDB=$$lib $(GO) test -race -count=1 ./internal/testsupport/chdb/ ./projections/clickhouse/..."; \
		LINKD_TEST_CHDB=$$lib $(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) ./internal/testsupport/chdb/ ./projections/clickhouse/...; \
	else \
		echo "test-chdb: SKIPPED: no libchdb.so (see above): the ClickHouse tests ran on the 18.16 server only"; \
	fi

# Longer end-to-end runs: crash tests with more rounds, bigger replays.
test-integration:
	LINKD_INTEGRATION=1 $(GO) test -count=1 -timeout 60m $(PKGS)

bench:
	$(GO) test -run '^$$' -bench . -benchtime 2s $(PKGS)

# Load test of /{code} against a bare net/http redirect server, same run.
bench-redirect: build
	./bench/redirect.sh

lint:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); echo 'gofmt: files above need formatting'; exit 1)
	$(GO) vet $(PKGS)

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf bin $(DATA_DIR)
