# cpscale: the human entry points. `make run` and `make test` are all a newcomer needs.
#
#   make deps           install the Debian packages the build needs (idempotent)
#   make / make build   configure and build everything into build/
#   make control-plane  build the pinned upstream kube-apiserver and etcd (cached)
#   make run            the main job: node-bound scenario on the local plane, summary + report
#   make test           unit and integration tests (CTest), on the real plane
#   make bench          benchmarks, JSON into build/bench/
#   make up / down      start / stop a local plane and leave it running
#   make clean          remove build/

SHELL := /bin/bash
BUILD_DIR ?= build
BUILD_TYPE ?= RelWithDebInfo
JOBS ?= $(shell nproc)
CPSCALE_CACHE ?= $(HOME)/.cache/cpscale
export CPSCALE_CACHE

# Debian packages: toolchain, libraries found by find_package/pkg-config, and the
# HTTP/2 tools the driver benchmark compares against.
DEB_PACKAGES := build-essential cmake ninja-build pkg-config git ca-certificates \
  libboost-dev libyaml-cpp-dev nlohmann-json3-dev prometheus-cpp-dev libcxxopts-dev \
  libgtest-dev libgmock-dev libbenchmark-dev libcurl4-openssl-dev libssl-dev \
  nghttp2-server nghttp2-client iproute2 procps chromium libxml2-utils libpng-dev

CPSCALE := $(BUILD_DIR)/cpscale
UPSTREAM_BUILD := sim/controlplane/upstream/build.sh
# The directory of the pinned binaries; build.sh prints it (building first if needed).
BIN_DIR = $(shell $(UPSTREAM_BUILD) 2>/dev/null | tail -n 1)

.PHONY: all build deps control-plane run test unit-test integration-test bench up down clean

all: build

deps:
	@missing=""; for p in $(DEB_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "make deps: installing$$missing"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi
	@command -v go >/dev/null || { echo "make deps: Go is required to build the upstream control plane (go.dev/doc/install)"; exit 2; }

$(BUILD_DIR)/build.ninja: CMakeLists.txt
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE)

build: deps $(BUILD_DIR)/build.ninja
	cmake --build $(BUILD_DIR) -j $(JOBS)

control-plane: deps
	@$(UPSTREAM_BUILD)

# The main job: the node-bound scenario on the embedded local plane (started and
# stopped by cpscale itself). Scale it with RUN_ARGS="--set workloads.fleet.count=2000".
SCENARIO ?= scenarios/node-bound.yaml
RUN_ARGS ?=
run: build control-plane
	CPSCALE_BIN_DIR="$(BIN_DIR)" $(CPSCALE) run $(SCENARIO) $(RUN_ARGS)

test: build control-plane
	CPSCALE_BIN_DIR="$(BIN_DIR)" ctest --test-dir $(BUILD_DIR) --output-on-failure -j 2

unit-test: build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -L unit -j $(JOBS)

integration-test: build control-plane
	CPSCALE_BIN_DIR="$(BIN_DIR)" ctest --test-dir $(BUILD_DIR) --output-on-failure -L integration

bench: build control-plane
	@mkdir -p $(BUILD_DIR)/bench
	@set -e; export CPSCALE_BIN_DIR="$(BIN_DIR)"; \
	for b in $(BUILD_DIR)/test/bench/cpscale_bench_*; do \
	  [ -x "$$b" ] || continue; n=$$(basename $$b); out=$(BUILD_DIR)/bench/$${n#cpscale_bench_}.json; \
	  echo "== $$n -> $$out"; \
	  case $$n in \
	    cpscale_bench_engine) GLIBC_TUNABLES=glibc.malloc.hugetlb=1 $$b --benchmark_out=$$out --benchmark_out_format=json ;; \
	    cpscale_bench_simulate) $$b --benchmark_out=$$out --benchmark_out_format=json ;; \
	    *) $$b --out $$out ;; \
	  esac; \
	done; echo "benchmark JSON in $(BUILD_DIR)/bench/"

up: build control-plane
	$(CPSCALE) up --bin-dir "$(BIN_DIR)"

down:
	$(CPSCALE) down

clean:
	rm -rf $(BUILD_DIR)
