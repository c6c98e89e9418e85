# Flux's source-controller from the binary e2e/assets/build-flux.sh builds from the Go
# module proxy, on the Debian base e2e/kind/cluster.sh builds (upstream's image is
# distroless; this one has a shell and curl, which the walkthrough uses to ask the
# apiserver who the pod is). uid 65534: its Deployment says runAsNonRoot.
ARG BASE
FROM ${BASE}
COPY source-controller /usr/local/bin/source-controller
USER 65534:65534
ENTRYPOINT ["/usr/local/bin/source-controller"]
