# seckill — make dev runs the whole thing locally, make test proves it.
# Needs Go 1.26; everything else is brought by the targets themselves:
# MariaDB (127.0.0.1:3306, root, no password), Redis (127.0.0.1:6379) and
# PostgreSQL are started when installed but down, chromium and haproxy are
# Debian's packages (scripts/deps.sh), and the Temporal servers,
# stripe-mock, promtool, helm and jaeger are pinned Go modules (tools/) built
# into bin/.

GO       ?= go
PKGS     := ./...
TEMPORAL := scripts/temporal-dev.sh
# The dev server's port (scripts/temporal-dev.sh reads it): another port
# keeps a run apart from a server someone else started on 7233.
TEMPORAL_PORT ?= 7233
export TEMPORAL_PORT

.PHONY: all build lab image chart bench capacity chaos dev drill stack stack-stop stack-check temporal temporal-stop test test-on-temporal test-short test-offline lint fmt clean

all: lint test

# The build's identity, for `seckill version`, /healthz and the
# seckill_build_info series (internal/buildinfo); the Dockerfile takes the
# same as build arguments.
VERSION    ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT     ?= $(shell git rev-parse HEAD 2>/dev/null)
BUILD_TIME ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
BUILDINFO  := github.com/seckill/seckill/internal/buildinfo
LDFLAGS    := -X $(BUILDINFO).version=$(VERSION) -X $(BUILDINFO).commit=$(COMMIT) -X $(BUILDINFO).buildTime=$(BUILD_TIME)

build: ## the seckill binary in bin/, stamped with its version
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/seckill ./cmd/seckill

lab: ## the seckill-lab binary in bin/: bench, drill, chaos and capacity (never deployed; seckill has none of them)
	$(GO) build -o bin/seckill-lab ./cmd/seckill-lab

image: ## the Docker image seckill:VERSION, stamped like make build
	docker build --build-arg VERSION=$(VERSION) --build-arg COMMIT=$(COMMIT) --build-arg BUILD_TIME=$(BUILD_TIME) -t seckill:$(VERSION) .

temporal: ## start the Temporal dev server (in memory, Web UI on :8233) unless one runs
	$(TEMPORAL) start

temporal-stop: ## stop the dev server `make temporal` started (never one it found running)
	@$(TEMPORAL) stop

.PHONY: temporal-bins temporal-durable temporal-durable-stop stripe-mock promtool prometheus helm jaeger deps-test

# The durable server's binaries, from the modules pinned in tools/go.mod
# (`go build` is a no-op when they are up to date).
temporal-bins: ## build bin/temporal, bin/temporal-server, bin/temporal-sql-tool and bin/temporal-ui-server
	$(GO) build -o bin/temporal -modfile=tools/go.mod github.com/temporalio/cli/cmd/temporal
	$(GO) build -o bin/temporal-server -modfile=tools/go.mod go.temporal.io/server/cmd/server
	$(GO) build -o bin/temporal-sql-tool -modfile=tools/go.mod go.temporal.io/server/cmd/tools/sql
	$(GO) build -o bin/temporal-ui-server -modfile=tools/go.mod github.com/temporalio/ui-server/v2/cmd/server

temporal-durable: temporal-bins build ## start the durable Temporal server on PostgreSQL (frontend :7933, Web UI :8933; deploy/temporal/)
	scripts/temporal-server.sh start

temporal-durable-stop: ## stop the durable server `make temporal-durable` started
	@scripts/temporal-server.sh stop

# The drill and the ops-query tests also run on durable servers of their own
# (internal/testenv.StartDurableTemporalServer): they fail without these.
test: deps-test temporal-bins stripe-mock promtool helm jaeger

deps-test: # the services and Debian packages make test needs (scripts/deps.sh)
	scripts/deps.sh test

# promtool, Prometheus's rule checker, for the alerting rules' tests
# (alerts_test.go finds bin/promtool first).
promtool: ## build bin/promtool (pinned in tools/promtool/go.mod)
	$(GO) build -o bin/promtool -modfile=tools/promtool/go.mod github.com/prometheus/prometheus/cmd/promtool

# prometheus, the server `make stack` runs (scripts/stack.sh builds it), from
# the same pinned module as promtool. A big build: no other target needs it.
prometheus: ## build bin/prometheus (pinned in tools/promtool/go.mod)
	$(GO) build -o bin/prometheus -modfile=tools/promtool/go.mod github.com/prometheus/prometheus/cmd/prometheus

# helm, for the chart (deploy/helm/seckill) and its test (chart_test.go
# finds bin/helm first). Its own modfile, as promtool's.
helm: ## build bin/helm (pinned in tools/helm/go.mod)
	$(GO) build -o bin/helm -modfile=tools/helm/go.mod helm.sh/helm/v4/cmd/helm

# jaeger, the tracing backend of make stack and make dev TRACES=1, and of
# the test that follows one purchase's trace (cmd/seckill's
# TestOnePurchaseIsOneTrace finds bin/jaeger). A big build: only the
# targets that need it build it. Its own modfile, as promtool's.
jaeger: ## build bin/jaeger (pinned in tools/jaeger/go.mod)
	$(GO) build -o bin/jaeger -modfile=tools/jaeger/go.mod github.com/jaegertracing/jaeger/cmd/jaeger

CHART := deploy/helm/seckill

chart: helm ## lint and render deploy/helm/seckill with the default values and the production example
	bin/helm lint --strict $(CHART)
	bin/helm lint --strict $(CHART) -f deploy/helm/values-production.yaml
	bin/helm template seckill $(CHART) >/dev/null
	bin/helm template seckill $(CHART) -f deploy/helm/values-production.yaml >/dev/null

# stripe-mock, Stripe's API from its OpenAPI spec, for the stripe provider's
# tests (internal/testenv.StartStripeMock). Its own modfile, so its
# dependencies never move the Temporal tools' versions.
stripe-mock: ## build bin/stripe-mock (pinned in tools/stripe-mock/go.mod)
	$(GO) build -o bin/stripe-mock -modfile=tools/stripe-mock/go.mod github.com/stripe/stripe-mock
clean: temporal-durable-stop

stack: jaeger ## the production topology here: Redis Cluster, durable Temporal (PostgreSQL), 2 workers, 2 APIs behind HAProxy on :8080, the Temporal UI behind HAProxy with a password on :8405, Prometheus on 127.0.0.1:9090, Jaeger's UI on :16686
	scripts/deps.sh stack
	scripts/stack.sh start

stack-stop: ## stop what `make stack` started
	scripts/stack.sh stop

stack-check: ## sell one unit through the running stack, then find its trace in Jaeger, every Prometheus target up, the invariants held
	scripts/stack.sh check

# TRACES=1: traces to a Jaeger of its own (scripts/jaeger.sh), UI on :16686.
TRACES ?=
dev: build temporal $(if $(filter 1,$(TRACES)),jaeger) ## migrations, API on :8080, worker and a demo session in one process; TRACES=1 traces it into Jaeger (UI :16686)
	scripts/deps.sh dev
ifeq ($(TRACES),1)
	scripts/jaeger.sh start
	env $$(scripts/jaeger.sh env) bin/seckill dev
else
	bin/seckill dev
endif

# package/FuzzName: a target that names no fuzz test fails (go test alone
# would only warn and pass).
FUZZ_TARGETS := api/FuzzDecodeOrderBody api/FuzzDecodeSessionBody api/FuzzDecodeSessionChange auth/FuzzShopperToken \
	auth/FuzzOwnTokens auth/FuzzPlainClaims api/FuzzVerifyWebhook admission/FuzzVerifyTicket api/FuzzErrorBodyJSON \
	clientip/FuzzClientIP
# An execution count, not a duration: a duration races Go's fuzz coordinator
# at its deadline on a busy machine (go.dev/issue/75804, fixed in Go 1.27)
# and fails with a bare "context deadline exceeded".
FUZZ_TIME    ?= 5000x

test: ## every test, on the real MariaDB, Redis and Temporal dev server, then the fuzzers briefly; stops the dev server if it started it
	$(TEMPORAL) run $(MAKE) --no-print-directory test-on-temporal

test-on-temporal: # make test's body, once the dev server on TEMPORAL_PORT answers
	SECKILL_TEST_TEMPORAL_ADDR=$${SECKILL_TEST_TEMPORAL_ADDR:-127.0.0.1:$(TEMPORAL_PORT)} $(GO) test -count=1 -timeout 20m $(PKGS)
	@# Every benchmark once, so one that no longer builds or fails its setup fails here
	@# (the figures come from make bench and docs/BENCHMARKS.md's commands, not from this).
	SECKILL_TEST_TEMPORAL_ADDR=$${SECKILL_TEST_TEMPORAL_ADDR:-127.0.0.1:$(TEMPORAL_PORT)} $(GO) test -count=1 -run '^$$' -bench . -benchtime 1x \
	  $$(git grep -l '^func Benchmark' -- '*_test.go' | xargs -n1 dirname | sort -u | sed 's|^|./|')
	@for t in $(FUZZ_TARGETS); do \
	  pkg=$${t%/*}; f=$${t##*/}; \
	  echo "fuzz $$f in ./$$pkg ($(FUZZ_TIME))"; \
	  $(GO) test ./$$pkg/ -run '^$$' -fuzz "^$$f\$$" -fuzztime $(FUZZ_TIME) >/tmp/seckill-fuzz.log 2>&1 || { cat /tmp/seckill-fuzz.log; exit 1; }; \
	  if grep -q "no fuzz tests" /tmp/seckill-fuzz.log; then echo "$$t: no such fuzz test"; exit 1; fi; \
	done

bench: ## load test with same-run baselines: 500 units (3 interleaved rounds, Redis AOF cost); then the 5,000-winner run (bench-report-5k.{json,html}; BENCH_5K=0 skips it); BENCH_PIN=1 pins CPUs; BENCH_REGISTRATIONS=N a reserved sale, BENCH_DRAW=N a draw sale of N units (scripts/bench.sh)
	scripts/bench.sh

capacity: ## count what an admission and an order cost Redis, MySQL and Temporal on servers of their own, then the throughput figures (scripts/capacity.sh; docs/CAPACITY.md)
	scripts/capacity.sh

drill: ## rehearse a sale locally: burst, SIGKILL the worker mid-burst, restart it, pay, cancel, pay late, check invariants
	scripts/drill.sh

CHAOS_DURATION ?= 2m

chaos: build lab ## randomized fault soak on a stack of its own (kills, latency, stalls, resets, outages) for CHAOS_DURATION; SEED=N replays a run's faults
	$(GO) build -o bin/temporal -modfile=tools/go.mod github.com/temporalio/cli/cmd/temporal
	bin/seckill-lab chaos --duration $(CHAOS_DURATION) $(if $(SEED),--seed $(SEED))

test-short: ## the tests that need no service
	$(GO) test -count=1 -short $(PKGS)

test-offline: ## the -short tests in a network namespace where no service is reachable (needs root or user namespaces)
	unshare -n sh -c 'ip link set lo up && $(GO) test -count=1 -short $(PKGS)'

lint: ## go vet, gofmt and Temporal's workflowcheck (determinism of workflow code)
	$(GO) vet $(PKGS)
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) tool -modfile=tools/workflowcheck/go.mod workflowcheck ./workflows/...

fmt:
	gofmt -w $$(git ls-files '*.go')

clean: temporal-stop
	rm -rf bin .temporal
