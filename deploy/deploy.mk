# Images and the docker-compose demo cluster (included by the Makefile).
# Nothing is pulled from a registry: storaged and routerd are the static
# binaries of `make build` in scratch images, versitygw (the S3 server the
# storaged read their source from) is built from tools/versitygw into one,
# ZooKeeper is built from Debian's packages once and then reused.

SPANGLE_TAG ?= dev
ZK_IMAGE    ?= spangle/zookeeper:3.8-bookworm
IMAGE_CTX   := $(BIN)/image
DEMO_DATA   := $(BIN)/demo-data
# The demo cluster's certificates, made by `spangle certs` on the first
# `make up` (never committed; delete the directory for a new CA).
DEMO_CERTS  := $(BIN)/demo-certs
DEMO_NAMES  := storaged1,storaged2,storaged3,localhost,127.0.0.1,spiffe://spangle/storaged
ROUTER_NAMES := routerd,localhost,127.0.0.1
CURL_TLS    := --cacert $(DEMO_CERTS)/ca.pem --cert $(DEMO_CERTS)/client.pem --key $(DEMO_CERTS)/client-key.pem
# docker-compose v1 or the compose plugin, whichever this machine has.
COMPOSE     ?= $(shell if docker compose version >/dev/null 2>&1; then echo docker compose; else echo docker-compose; fi)
# ZK_OFFICIAL=1: the official ZooKeeper image from a registry instead
# (deploy/zookeeper-official.yml); the Debian-built one is then not built.
ZK_OFFICIAL ?=
COMPOSE_FILES := -f deploy/docker-compose.yml $(if $(ZK_OFFICIAL),-f deploy/zookeeper-official.yml)
COMPOSE_RUN := SPANGLE_TAG=$(SPANGLE_TAG) ZK_IMAGE=$(ZK_IMAGE) SPANGLE_SOURCE=$(abspath $(DEMO_DATA)) \
	SPANGLE_CERTS=$(abspath $(DEMO_CERTS)) \
	$(COMPOSE) -p spangle $(COMPOSE_FILES)

export SPANGLE_TAG ZK_IMAGE
ifneq ($(ZK_OFFICIAL),)
export E2E_COMPOSE_FILES := $(abspath deploy/zookeeper-official.yml)
export ZK_IMAGE := zookeeper:3.8
endif

.PHONY: images zk-image e2e-deps up down

# What the images and e2e need besides Go: docker, compose, and mmdebstrap
# when the ZooKeeper image is still to be built.
e2e-deps:
	./scripts/e2e-deps.sh

zk-image: e2e-deps
	ZK_IMAGE=$(ZK_IMAGE) ./deploy/zookeeper/build.sh

# storaged and routerd: rebuilt every time (seconds; Docker reuses layers
# whose binaries did not change).
images: build $(if $(ZK_OFFICIAL),,zk-image)
	@mkdir -p $(IMAGE_CTX)
	cp $(BIN)/storaged $(BIN)/routerd $(IMAGE_CTX)/
	CGO_ENABLED=0 $(GO) build -trimpath -o $(IMAGE_CTX)/healthcheck ./deploy/healthcheck
	docker build -q -f deploy/storaged.Dockerfile -t spangle/storaged:$(SPANGLE_TAG) $(IMAGE_CTX)
	docker build -q -f deploy/routerd.Dockerfile -t spangle/routerd:$(SPANGLE_TAG) $(IMAGE_CTX)
	cd tools/versitygw && CGO_ENABLED=0 $(GO) build -trimpath -o $(abspath $(IMAGE_CTX))/versitygw github.com/versity/versitygw/cmd/versitygw
	docker build -q -f deploy/versitygw.Dockerfile -t spangle/versitygw:$(SPANGLE_TAG) $(IMAGE_CTX)

$(DEMO_DATA)/e2e/v0001:
	$(GO) run ./e2e/gendata -out $(DEMO_DATA) -version v0001

$(DEMO_DATA)/e2e-sparkey/v0001:
	$(GO) run ./e2e/gendata -out $(DEMO_DATA) -db e2e-sparkey -version v0001 -sparkey

$(DEMO_DATA)/e2e-parquet/v0001:
	$(GO) run ./e2e/gendata -out $(DEMO_DATA) -db e2e-parquet -version v0001 -parquet

# A CA, the storaged's peer certificate, routerd's and a client one for
# curl and the tools: the project's own code (shared/certgen).
$(DEMO_CERTS)/ca.pem: | build
	$(BIN)/spangle certs --out $(DEMO_CERTS) --names $(DEMO_NAMES) --router-names $(ROUTER_NAMES)

# The demo cluster on 127.0.0.1:9590 (routerd) and :9601-9603 (storaged),
# mutual TLS on every port: clients present $(DEMO_CERTS)/client.pem.
up: images $(DEMO_CERTS)/ca.pem $(DEMO_DATA)/e2e/v0001 $(DEMO_DATA)/e2e-sparkey/v0001 $(DEMO_DATA)/e2e-parquet/v0001
	$(COMPOSE_RUN) up -d
	@echo "spangle: waiting for routerd to serve on https://127.0.0.1:9590 ..."
	@for i in $$(seq 1 120); do \
	  if curl -fsS -o /dev/null $(CURL_TLS) https://127.0.0.1:9590/healthz 2>/dev/null; then \
	    echo "spangle: up; try: curl $(CURL_TLS) https://127.0.0.1:9590/e2e/key-0000042"; exit 0; fi; \
	  sleep 1; \
	done; \
	echo "spangle: routerd did not become healthy in 120 s; see: $(COMPOSE_RUN) logs" >&2; exit 1

down:
	$(COMPOSE_RUN) down -v --remove-orphans

# The e2e suite runs against images built from this tree.
e2e: images
