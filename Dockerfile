# The nyl Argo CD sidecar image: a static nyl, a pinned and verified helm, and plugin.yaml.
#
#   docker build -t nyl-cmp .
#
# The sidecar runs Argo CD's own /var/run/argocd/argocd-cmp-server (copied in by Argo CD's init
# container), which reads plugin.yaml and runs `nyl argocd generate`; this image needs no
# entrypoint of its own.

# --- nyl, statically linked against musl ---------------------------------------------------
FROM rust:1-bookworm AS build
RUN apt-get update && apt-get install -y --no-install-recommends musl-tools && rm -rf /var/lib/apt/lists/* \
 && rustup target add x86_64-unknown-linux-musl
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY src ./src
RUN cargo build --release --locked --target x86_64-unknown-linux-musl \
 && cp target/x86_64-unknown-linux-musl/release/nyl /nyl

# --- helm, the version the tests pin, checked against the same checksum --------------------
FROM debian:bookworm-slim AS helm
ARG HELM_VERSION=v4.3.1
# sha256 of the extracted linux-amd64 helm binary; scripts/install-helm pins the same value.
ARG HELM_SHA256=b66cb19f2b31f9d427632ea6c4b4a1ff89b74ecaeaee323cd166da41a7af53bd
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates curl && rm -rf /var/lib/apt/lists/*
RUN curl -fsSL "https://get.helm.sh/helm-${HELM_VERSION}-linux-amd64.tar.gz" -o /tmp/helm.tgz \
 && tar -xzf /tmp/helm.tgz -C /tmp linux-amd64/helm \
 && echo "${HELM_SHA256}  /tmp/linux-amd64/helm" | sha256sum -c - \
 && install -m 0755 /tmp/linux-amd64/helm /helm

# --- the sidecar ------------------------------------------------------------------------------
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /nyl /usr/local/bin/nyl
COPY --from=helm /helm /usr/local/bin/helm
COPY plugin.yaml /home/argocd/cmp-server/config/plugin.yaml
# Argo CD's sidecars run as 999, with an emptyDir on /tmp: every cache lives there, so renders
# of parallel requests share it (nyl's cache is safe for several processes at once).
USER 999
ENV HOME=/tmp \
    NYL_HELM=/usr/local/bin/helm \
    NYL_CACHE_DIR=/tmp/nyl/cache \
    HELM_CACHE_HOME=/tmp/helm/cache \
    HELM_CONFIG_HOME=/tmp/helm/config \
    HELM_DATA_HOME=/tmp/helm/data
