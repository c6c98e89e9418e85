# stalemate's two images from a binary built beforehand, on a base that needs no registry
# (e2e/kind/cluster.sh: BASE is a Debian root filesystem debootstrapped here, and the
# binary `cargo build --release` made on a Debian of the same release). With internet, the
# repository's Dockerfile builds the same two images from source on official bases.
#   docker build -f e2e/kind/stalemate.Dockerfile --build-arg BASE=… --target explore CONTEXT
# CONTEXT holds `stalemate` and `kube/` (e2e/assets/build.sh's default version).
ARG BASE=debian:bookworm-slim

# `explore` target: what `stalemate explore job` pods run (as the Dockerfile's).
FROM ${BASE} AS explore
COPY stalemate /usr/local/bin/stalemate
COPY kube/ /opt/stalemate/kube/
ENV KUBEBUILDER_ASSETS=/opt/stalemate/kube
ENV PATH=/opt/stalemate/kube:$PATH
RUN useradd --uid 65532 --create-home --home-dir /home/nonroot nonroot
USER 65532:65532
WORKDIR /home/nonroot
ENTRYPOINT ["/usr/local/bin/stalemate"]
CMD ["explore", "--help"]

# The sidecar (the last stage, the default): uid 65532, what `stalemate inject` runs it as.
FROM ${BASE}
COPY stalemate /usr/local/bin/stalemate
USER 65532:65532
EXPOSE 7443 9464
ENTRYPOINT ["/usr/local/bin/stalemate"]
CMD ["serve", "--in-cluster", "--listen", "0.0.0.0:7443", "--admin-listen", "0.0.0.0:9464"]
