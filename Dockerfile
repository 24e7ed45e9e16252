# Spout: SQL queries streamed as JSON over HTTP.
#
#   docker build -t spout .
#   docker run -p 8080:8080 -v spout-data:/app/data spout          # embedded SQLite, seeded on first start
#   docker run -p 8080:8080 -e SPOUT_DATABASE_URL=postgresql://user:pass@db:5432/employees spout
#
# Build arguments: SWIFT_IMAGE (the toolchain; keep it in step with the one in use, Swift 6.3)
# and RUNTIME_IMAGE.
ARG SWIFT_IMAGE=swift:6.3-bookworm
ARG RUNTIME_IMAGE=debian:bookworm-slim

# ---- builder -----------------------------------------------------------------------------
FROM ${SWIFT_IMAGE} AS builder
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends libpq-dev libsqlite3-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /build

# Dependencies first: this layer is reused until Package.swift changes.
COPY Package.swift ./
RUN swift package resolve

COPY Sources ./Sources
COPY Tests ./Tests
RUN swift build -c release --static-swift-stdlib --product spout \
    && install -D "$(swift build -c release --static-swift-stdlib --show-bin-path)/spout" /staging/usr/local/bin/spout

# ---- runtime -----------------------------------------------------------------------------
FROM ${RUNTIME_IMAGE}
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends libpq5 libsqlite3-0 ca-certificates tzdata \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --home-dir /app --shell /usr/sbin/nologin spout
WORKDIR /app
COPY --from=builder /staging/usr/local/bin/spout /usr/local/bin/spout
COPY config ./config
COPY sql ./sql
RUN mkdir -p /app/data && chown spout:spout /app/data
VOLUME ["/app/data"]

# Configuration is by environment variable (docs/configuration.md); these are the container's defaults.
ENV SPOUT_HOST=0.0.0.0 \
    SPOUT_PORT=8080 \
    SPOUT_DATABASE_URL=sqlite:/app/data/spout.sqlite
EXPOSE 8080
USER spout

# bash's /dev/tcp keeps curl out of the image.
HEALTHCHECK --interval=15s --timeout=3s --start-period=60s --retries=3 \
    CMD ["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/${SPOUT_PORT} && printf 'GET /health HTTP/1.0\\r\\n\\r\\n' >&3 && head -n 1 <&3 | grep -q ' 200 '"]

ENTRYPOINT ["spout"]
CMD ["serve", "--config", "/app/config/spout.yaml"]
