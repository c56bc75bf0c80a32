# syntax=docker/dockerfile:1
#
# One image for every subcommand of the seckill binary:
#   docker build -t seckill .
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
# A static binary (no cgo), without local paths or debug symbols. The build
# cache mount only speeds up rebuilds; the result does not depend on it.
RUN --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /out/seckill ./cmd/seckill

# ---- run --------------------------------------------------------------------
# Alpine rather than distroless: it is still small, and its busybox wget lets
# docker-compose.yml health-check the API and the worker on /healthz. The binary itself
# needs nothing from the base image.
FROM alpine:3.24
RUN adduser -D -H -u 10001 seckill
COPY --from=build /out/seckill /seckill
# Numeric user, so orchestrators that insist on non-root can verify it.
USER 10001:10001
# 8080: `seckill api` (SECKILL_HTTP_ADDR); 8081: `seckill worker`'s metrics
# and health (SECKILL_WORKER_HTTP_ADDR).
EXPOSE 8080 8081
ENTRYPOINT ["/seckill"]
