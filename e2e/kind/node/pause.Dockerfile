# The pod sandbox: Kubernetes' build/pause/linux/pause.c, compiled here, statically.
FROM scratch
COPY pause /pause
USER 65535:65535
ENTRYPOINT ["/pause"]
