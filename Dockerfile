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
#
# The two stages that need the network, `nyl` (the rust image and crates.io) and `helm-tarball`
# (get.helm.sh), each leave one file at a fixed path, so a build without network can replace them
# with local directories holding that file (`--build-context nyl=DIR --build-context
# helm-tarball=DIR`); scripts/image-test does, and every other step runs as written.

# The Helm release to install; see the `helm` stage for its checksum.
ARG HELM_VERSION=v4.3.1

# --- nyl, statically linked against musl: /nyl ---------------------------------------------
# The Rust release the tests run with; rust-version in Cargo.toml is the minimum.
ARG RUST_VERSION=1.95
FROM --platform=linux/amd64 rust:${RUST_VERSION} AS nyl
RUN apt-get update \
 && apt-get install -y --no-install-recommends musl-tools \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# Only what the binary is built from (no build script; tests, docs and examples are not needed).
COPY Cargo.toml Cargo.lock ./
COPY src ./src
COPY crates ./crates
# scripts/release builds the release binary as everywhere else: it adds the musl target, strips
# the binary and checks that it is static.
COPY scripts/release ./scripts/release
RUN cp "$(bash scripts/release)" /nyl

# --- helm's release tarball: /helm-VERSION-linux-amd64.tar.gz --------------------------------
FROM debian:bookworm-slim AS helm-tarball
ARG HELM_VERSION
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates curl \
 && rm -rf /var/lib/apt/lists/*
RUN curl -fsSL -o "/helm-${HELM_VERSION}-linux-amd64.tar.gz" \
      "https://get.helm.sh/helm-${HELM_VERSION}-linux-amd64.tar.gz"

# --- helm, checked against the checksum the tests pin: /helm -----------------------------------
FROM debian:bookworm-slim AS helm
ARG HELM_VERSION
# sha256 of the extracted linux-amd64/helm binary, the value scripts/install-helm pins, so one
# checksum guards both the tests' helm and the image's. The checksum Helm publishes on its release
# page (helm-<version>-linux-amd64.tar.gz.sha256sum) is of the tarball, not of the binary: do not put
# it here. To check the tarball as well, pass it as HELM_TARBALL_SHA256. On a version bump, change
# HELM_VERSION, this value and scripts/install-helm together.
ARG HELM_SHA256=b66cb19f2b31f9d427632ea6c4b4a1ff89b74ecaeaee323cd166da41a7af53bd
ARG HELM_TARBALL_SHA256=
WORKDIR /work
COPY --from=helm-tarball /helm-${HELM_VERSION}-linux-amd64.tar.gz helm.tar.gz
# Any mismatch makes sha256sum -c exit non-zero, which fails the build.
RUN set -eu; \
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
COPY --from=nyl /nyl /usr/local/bin/nyl
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
