# syntax=docker/dockerfile:1
# A small non-root image holding one static binary:
#   docker build -t stalemate:dev .
# and, with --target explore, what `stalemate explore job` pods run (below).
# Build stage: Alpine's Rust targets musl, which links statically by default (ring and
# rustls need no system libraries).
FROM rust:1.95-alpine AS build
RUN apk add --no-cache musl-dev
WORKDIR /src
# The whole tree: Cargo.toml names test and example targets that must exist.
COPY . .
RUN cargo build --release --locked --bin stalemate \
 && strip target/release/stalemate \
 && ./target/release/stalemate --version

# `explore` target: what `stalemate explore job` pods run — stalemate, a shell (the
# controller command is often a script), and a real control plane for `--envtest` (etcd
# and kube-apiserver at the versions e2e/assets/versions.env pins, built from the Go
# module proxy by the same script the suite uses). It comes before the sidecar's stage
# so that a build without --target still makes the sidecar image (the last stage).
#   docker build --target explore -t stalemate-explore:dev .
# Build your own image FROM it with your controller added, e.g.
#   FROM stalemate-explore:dev
#   COPY --from=my-build /manager /manager
FROM golang:1.26 AS kube
COPY e2e/assets/build.sh e2e/assets/versions.env /build/
# Only the default version; kubectl, kube-controller-manager and kube-scheduler come
# with it (--with), kwok too. STALEMATE_CACHE puts the result at /cache/kube/<version>.
RUN STALEMATE_CACHE=/cache bash /build/build.sh \
 && mv "/cache/kube/$(sed -n 's/^KUBERNETES_VERSION=//p' /build/versions.env)" /kube

FROM debian:bookworm-slim AS explore
COPY --from=build /src/target/release/stalemate /usr/local/bin/stalemate
COPY --from=kube /kube /opt/stalemate/kube
ENV KUBEBUILDER_ASSETS=/opt/stalemate/kube
# kubectl (built beside the default version) for --workload steps.
ENV PATH=/opt/stalemate/kube:$PATH
# The pods' scratch space is an emptyDir at /var/stalemate (explore job); uid 65532 as
# the sidecar image, with a home for controllers that want one.
RUN useradd --uid 65532 --create-home --home-dir /home/nonroot nonroot
USER 65532:65532
WORKDIR /home/nonroot
ENTRYPOINT ["/usr/local/bin/stalemate"]
CMD ["explore", "--help"]

# Runtime: no shell, no package manager, uid 65532 (what `stalemate inject` runs the
# sidecar as, with a read-only root filesystem).
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /src/target/release/stalemate /usr/local/bin/stalemate
USER 65532:65532
EXPOSE 7443 9464
ENTRYPOINT ["/usr/local/bin/stalemate"]
CMD ["serve", "--in-cluster", "--listen", "0.0.0.0:7443", "--admin-listen", "0.0.0.0:9464"]
