# syntax=docker/dockerfile:1
#
# One image for every subcommand of the seckill binary:
#   make image      (docker build, stamped with the version: seckill version)
#   docker run --rm seckill migrate | api | worker | token --user 1 | reconcile --session 1
# docker-compose.yml in this directory wires it to MySQL, Redis and Temporal.
# The image sets no SECKILL_PAYMENT_PROVIDER on purpose: `api` and `worker`
# refuse to start until one is chosen; "sandbox" moves no money.

# ---- build ------------------------------------------------------------------
FROM golang:1.26 AS build
WORKDIR /src

# Modules first, in a layer of their own: it is rebuilt only when go.mod or
# go.sum change, not on every source edit. Only the root module is copied
# here; the nested tools/ module (the Temporal CLI pin for local dev) is
# never needed to build the binary.
COPY go.mod go.sum ./
RUN go mod download && go mod verify

COPY . .
# The build's identity for `seckill version`, /healthz, seckill_build_info
# and the labels below: `make image` passes what `make build` stamps.
ARG VERSION=dev
ARG COMMIT=unknown
ARG BUILD_TIME=unknown
# A static binary (no cgo), without local paths or debug symbols. The build
# cache mount only speeds up rebuilds; the result does not depend on it.
RUN --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w -X github.com/seckill/seckill/internal/buildinfo.version=${VERSION} -X github.com/seckill/seckill/internal/buildinfo.commit=${COMMIT} -X github.com/seckill/seckill/internal/buildinfo.buildTime=${BUILD_TIME}" \
      -o /out/seckill ./cmd/seckill

# ---- run --------------------------------------------------------------------
# Distroless: no shell, no package manager, nothing but the static binary,
# CA certificates (Stripe, Temporal Cloud, TLS to Redis and MySQL) and time
# zones. The health check is the binary's own (`seckill healthcheck`).
FROM gcr.io/distroless/static-debian12:nonroot
ARG VERSION=dev
ARG COMMIT=unknown
ARG BUILD_TIME=unknown
LABEL org.opencontainers.image.title="seckill" \
      org.opencontainers.image.description="Flash-sale order system: Redis admission, one Temporal workflow per order, MySQL truth" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${COMMIT}" \
      org.opencontainers.image.created="${BUILD_TIME}"
COPY --from=build /out/seckill /seckill
# Numeric and not root, so orchestrators that insist on non-root can verify
# it (deploy/helm's runAsNonRoot); the binary writes nothing to its
# filesystem, which may be read-only.
USER 10001:10001
# 8080: `seckill api` (SECKILL_HTTP_ADDR); 8081: `seckill worker`'s metrics
# and health (SECKILL_WORKER_HTTP_ADDR).
EXPOSE 8080 8081
# /healthz of the api, or of the worker where no api listens; liveness only
# (/readyz would also fail while a dependency is down, no reason to restart).
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 CMD ["/seckill", "healthcheck"]
ENTRYPOINT ["/seckill"]
