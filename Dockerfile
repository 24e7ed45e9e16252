# Spout: SQL queries streamed as JSON over HTTP.
#
#   docker build -t spout .
#   docker run -p 8080:8080 -v spout-data:/app/data spout          # embedded SQLite, seeded on first start
#   docker run -p 8080:8080 -e SPOUT_DATABASE_URL=postgresql://user:pass@db.example.com:5432/employees spout
#
# A database in another container is reached by that container's name (`@db:5432`) only on a
# user-defined network: `docker network create spout`, then `--network spout` on both containers
# (Compose makes one for its services: docs/deploy/compose.yaml). On the default bridge network
# names do not resolve.
#
# The image runs as uid 10001, gid 10001 (user and group `spout`). A host folder bind-mounted on
# /app/data must be writable by that uid: `chown 10001:10001 FOLDER`.
#
# Build arguments: SWIFT_IMAGE (the toolchain; keep it in step with the one in use, Swift 6.3)
# and RUNTIME_IMAGE. Without a registry, local stand-ins work: docs/deploy/offline-build.md.
ARG SWIFT_IMAGE=swift:6.3-bookworm
ARG RUNTIME_IMAGE=debian:bookworm-slim

# ---- builder -----------------------------------------------------------------------------
FROM ${SWIFT_IMAGE} AS builder
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends libpq-dev libsqlite3-dev libzstd-dev libisal-dev zlib1g-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /build

# Dependencies first: this layer is reused until Package.swift changes.
COPY Package.swift ./
RUN swift package resolve

COPY Sources ./Sources
COPY Tests ./Tests
# -Xlinker -s: linked without symbols or debug information, about a third smaller.
RUN swift build -c release --static-swift-stdlib -Xlinker -s --product spout \
    && install -D "$(swift build -c release --static-swift-stdlib -Xlinker -s --show-bin-path)/spout" /staging/usr/local/bin/spout

# ---- runtime -----------------------------------------------------------------------------
# Only the libraries the binary needs (scripts/check-static-binary), a user and group 10001, and
# no setuid or setgid programs (su, mount, passwd...): nothing in the container can gain privileges.
# (useradd without --system: with it, a uid above SYS_UID_MAX, 999, draws a warning.)
FROM ${RUNTIME_IMAGE}
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends libpq5 libsqlite3-0 libzstd1 libisal2 ca-certificates tzdata \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --system --gid 10001 spout \
    && useradd --uid 10001 --gid 10001 --home-dir /app --no-create-home --no-log-init --shell /usr/sbin/nologin spout \
    && find / -xdev -type f -perm /6000 -exec chmod ug-s {} +
WORKDIR /app
COPY --from=builder /staging/usr/local/bin/spout /usr/local/bin/spout
COPY config ./config
COPY sql ./sql
# SQLite's folder. Not a VOLUME, so that containers on PostgreSQL get no unused anonymous
# volumes: mount one to keep the data (`-v spout-data:/app/data`; a bind-mounted host folder
# must be writable by uid 10001).
RUN mkdir -p /app/data && chown spout:spout /app/data

# Configuration is by environment variable (docs/configuration.md); these are the container's defaults.
ENV SPOUT_HOST=0.0.0.0 \
    SPOUT_PORT=8080 \
    SPOUT_DATABASE_URL=sqlite:/app/data/spout.sqlite
EXPOSE 8080
# Numeric, so that a runtime can tell the user is not root without reading /etc/passwd
# (Kubernetes' runAsNonRoot).
USER 10001:10001

# bash's /dev/tcp keeps curl out of the image (bash, head and grep are in every Debian image).
HEALTHCHECK --interval=15s --timeout=3s --start-period=60s --retries=3 \
    CMD ["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/${SPOUT_PORT} && printf 'GET /health HTTP/1.0\\r\\n\\r\\n' >&3 && head -n 1 <&3 | grep -q ' 200 '"]

ENTRYPOINT ["spout"]
CMD ["serve", "--config", "/app/config/spout.yaml"]
