# routerd: the static binary from `make build`, nothing else (see
# storaged.Dockerfile).
FROM scratch
COPY routerd healthcheck /
EXPOSE 9590 18000
HEALTHCHECK --interval=2s --timeout=3s --start-period=5s --retries=3 \
  CMD ["/healthcheck", "http://127.0.0.1:9590/healthz"]
ENTRYPOINT ["/routerd"]
CMD ["--bind", "0.0.0.0:9590"]
