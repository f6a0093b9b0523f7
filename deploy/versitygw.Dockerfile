# versitygw: the S3 server of the compose cluster, the static binary built
# from the version pinned in tools/versitygw (deploy/deploy.mk), nothing
# else. Its posix backend serves /s3 in place: each directory in it is a
# bucket (the compose file mounts the source root as bucket "spangle").
FROM scratch
COPY versitygw healthcheck /
EXPOSE 7070
HEALTHCHECK --interval=1s --timeout=3s --start-period=2s --retries=30 \
  CMD ["/healthcheck", "http://127.0.0.1:7070/health"]
ENTRYPOINT ["/versitygw"]
CMD ["--port", "0.0.0.0:7070", "--health", "/health", "--quiet", "posix", "/s3"]
