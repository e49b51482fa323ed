# syntax=docker/dockerfile:1
# The nyl Argo CD sidecar image: a static nyl, a pinned and verified helm, and plugin.yaml.
#
#   docker build -t nyl-cmp .
#
# linux/amd64 only (the musl target and the helm download are amd64); the stages that produce or
# hold binaries pin the platform, so the image is right on arm64 build hosts too (emulated, slower).
#
# No ENTRYPOINT: in the repo-server pod the sidecar's `command` is Argo CD's own
# /var/run/argocd/argocd-cmp-server (copied into the shared var-files volume by Argo CD's init
# container, so it is not in this image). It reads plugin.yaml and runs `nyl argocd generate` for each
# request. To run nyl from this image elsewhere: docker run --entrypoint /usr/local/bin/nyl ...

# --- nyl, statically linked against musl ---------------------------------------------------
# The Rust release the tests run with; rust-version in Cargo.toml is the minimum.
ARG RUST_VERSION=1.95
FROM --platform=linux/amd64 rust:${RUST_VERSION} AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends musl-tools \
 && rm -rf /var/lib/apt/lists/* \
 && rustup target add x86_64-unknown-linux-musl
WORKDIR /src
# Only what the binary is built from (no build script; tests, docs and examples are not needed).
COPY Cargo.toml Cargo.lock ./
COPY src ./src
COPY crates ./crates
RUN cargo build --release --locked --target x86_64-unknown-linux-musl \
 && cp target/x86_64-unknown-linux-musl/release/nyl /nyl

# --- helm, the version the tests pin, checked against the same checksum --------------------
FROM debian:bookworm-slim AS helm
ARG HELM_VERSION=v4.3.1
# sha256 of the extracted linux-amd64/helm binary, the value scripts/install-helm pins, so one
# checksum guards both the tests' helm and the image's. The checksum Helm publishes on its release
# page (helm-<version>-linux-amd64.tar.gz.sha256sum) is of the tarball, not of the binary: do not put
# it here. To check the tarball as well, pass it as HELM_TARBALL_SHA256. On a version bump, change
# HELM_VERSION, this value and scripts/install-helm together.
ARG HELM_SHA256=b66cb19f2b31f9d427632ea6c4b4a1ff89b74ecaeaee323cd166da41a7af53bd
ARG HELM_TARBALL_SHA256=
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates curl \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /work
# Any mismatch makes sha256sum -c exit non-zero, which fails the build.
RUN set -eu; \
    curl -fsSL -o helm.tar.gz "https://get.helm.sh/helm-${HELM_VERSION}-linux-amd64.tar.gz"; \
    if [ -n "${HELM_TARBALL_SHA256}" ]; then \
      echo "${HELM_TARBALL_SHA256}  helm.tar.gz" | sha256sum -c -; \
    fi; \
    tar -xzf helm.tar.gz linux-amd64/helm; \
    echo "${HELM_SHA256}  linux-amd64/helm" | sha256sum -c -; \
    install -m 0755 linux-amd64/helm /helm

# --- the sidecar ------------------------------------------------------------------------------
# distroless/static: no shell or package manager, but CA certificates (for remote charts), /etc/passwd
# and a world-writable /tmp.
FROM --platform=linux/amd64 gcr.io/distroless/static-debian12:nonroot
COPY --from=build /nyl /usr/local/bin/nyl
COPY --from=helm /helm /usr/local/bin/helm
COPY --chmod=0644 plugin.yaml /home/argocd/cmp-server/config/plugin.yaml
# Argo CD runs plugin sidecars as 999 (Argo CD's own user), with an emptyDir on /tmp: HOME, helm's
# directories and nyl's render cache all live there. Parallel requests share them; nyl's cache is safe
# for several processes at once.
USER 999
ENV HOME=/tmp \
    NYL_HELM=/usr/local/bin/helm \
    NYL_CACHE_DIR=/tmp/nyl/cache \
    HELM_CACHE_HOME=/tmp/helm/cache \
    HELM_CONFIG_HOME=/tmp/helm/config \
    HELM_DATA_HOME=/tmp/helm/data
