# One Kubernetes component's image (kube-apiserver, etcd, ...): the binary built here on
# the Debian base built here, where kubeadm's manifests look for it (/usr/local/bin).
ARG BASE
FROM ${BASE}
ARG BIN
COPY ${BIN} /usr/local/bin/${BIN}
