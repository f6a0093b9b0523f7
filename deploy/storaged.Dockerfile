# storaged: the static binary from `make build`, nothing else. The build
# context is the directory holding the binaries (deploy/deploy.mk makes it),
# so nothing is pulled: scratch is empty.
FROM scratch
COPY storaged healthcheck /
EXPOSE 9599
VOLUME ["/var/lib/spangle/storaged"]
HEALTHCHECK --interval=2s --timeout=3s --start-period=5s --retries=3 \
  CMD ["/healthcheck", "http://127.0.0.1:9599/healthz"]
ENTRYPOINT ["/storaged"]
CMD ["--bind", "0.0.0.0:9599", "--source", "/data", "--local-store", "/var/lib/spangle/storaged"]
