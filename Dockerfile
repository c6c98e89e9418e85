# syntax=docker/dockerfile:1
# A small non-root image holding one static binary:
#   docker build -t stalemate:dev .
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

# Runtime: no shell, no package manager, uid 65532 (what `stalemate inject` runs the
# sidecar as, with a read-only root filesystem).
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /src/target/release/stalemate /usr/local/bin/stalemate
USER 65532:65532
EXPOSE 7443 9464
ENTRYPOINT ["/usr/local/bin/stalemate"]
CMD ["serve", "--in-cluster", "--listen", "0.0.0.0:7443", "--admin-listen", "0.0.0.0:9464"]
