# cpscale: the human entry points. `make run` and `make test` are all a newcomer needs.
#
#   make deps           install the Debian packages the build and tests need (idempotent;
#                       `make run` installs only what a run needs)
#   make / make build   configure and build everything into build/ (tests and benchmarks too)
#   make control-plane  build the pinned upstream kube-apiserver and etcd (cached)
#   make run            the main job: node-bound scenario on the local plane, summary + report
#                       (builds the cpscale binary only)
#   make test           unit and integration tests (CTest), on the real plane
#   make bench          benchmarks, JSON into build/bench/
#   make projected-index  the recipe index projected by the model, each member on PROJECT_CORES cores
#   make up / down      start / stop a local plane and leave it running
#   make image          the container image `cpscale job` runs (needs docker)
#   make clean          remove build/
#
# Fuzzing and sanitizers (test/fuzz/README.md), each in a build dir of its own:
#   make fuzz           libFuzzer targets (clang, ASan+UBSan) in build-fuzz/, each for FUZZ_RUNS
#                       executions or FUZZ_SECONDS; FUZZ_TARGETS="gate kubeconfig" runs only those
#   make sanitize       the unit tests built with ASan+UBSan in build-asan/; any report fails
#   make tsan           the worker pool, open-loop driver and scraper tests under TSan (build-tsan/)

SHELL := /bin/bash
BUILD_DIR ?= build
BUILD_TYPE ?= RelWithDebInfo
JOBS ?= $(shell nproc)
CPSCALE_CACHE ?= $(HOME)/.cache/cpscale
export CPSCALE_CACHE

# Debian packages. What a run needs: the toolchain, the libraries the cpscale binary
# links (find_package/pkg-config), and the tools the local plane uses. What the tests and
# benchmarks add: GoogleTest and Google Benchmark, the HTTP/2 tools the driver benchmark
# compares against (and libnghttp2 for the fleet benchmark's sink), Chromium for the
# report's rendering test, the format check's clang-format, and the function-length
# check's universal-ctags.
RUN_DEB_PACKAGES := build-essential cmake ninja-build pkg-config git ca-certificates \
  libboost-dev libyaml-cpp-dev nlohmann-json3-dev prometheus-cpp-dev libcxxopts-dev \
  libcurl4-openssl-dev libssl-dev iproute2 procps ccache
TEST_DEB_PACKAGES := libgtest-dev libgmock-dev libbenchmark-dev libnghttp2-dev \
  nghttp2-server nghttp2-client chromium libxml2-utils libpng-dev clang-format-14 universal-ctags
DEB_PACKAGES := $(RUN_DEB_PACKAGES) $(TEST_DEB_PACKAGES)

CPSCALE := $(BUILD_DIR)/cpscale
UPSTREAM_BUILD := sim/controlplane/upstream/build.sh
# The directory of the pinned binaries; build.sh prints it (building first if needed).
BIN_DIR = $(shell $(UPSTREAM_BUILD) 2>/dev/null | tail -n 1)

.PHONY: all build build-cpscale deps run-deps debian-deps control-plane run run-build test unit-test integration-test bench up down clean image projected-index \
  fuzz sanitize sanitize-build sanitize-virtual-time sanitize-wall-clock tsan tsan-build format

all: build

# $(call apt_install,PACKAGES): installs those of the Debian PACKAGES that are missing.
define apt_install
@missing=""; for p in $(1); do \
  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
done; \
if [ -n "$$missing" ]; then \
  echo "make $@: installing$$missing"; \
  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
  $$SUDO apt-get update -qq && \
  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
fi
endef

GO_CHECK = @command -v go >/dev/null || { echo "make $@: Go is required to build the upstream control plane (go.dev/doc/install)"; exit 2; }
deps: debian-deps
	$(GO_CHECK)

# What `make run` needs and no more (no test libraries, no browser).
run-deps:
	$(call apt_install,$(RUN_DEB_PACKAGES))
	$(GO_CHECK)

# The packages alone: what the sanitizer builds need (they run no control plane).
debian-deps:
	$(call apt_install,$(DEB_PACKAGES))

# CMAKE_ARGS: more options for a new build dir (CI: -DCPSCALE_DEBUG_INFO=OFF
# -DCPSCALE_WERROR=ON). A build dir first configured by `make run` has no tests (their
# packages may be missing) and no debug info; `make build` and `make test` turn the
# tests on in the same dir, which keeps every object already compiled.
CMAKE_ARGS ?=
BUILD_TESTS ?= ON
$(BUILD_DIR)/build.ninja: CMakeLists.txt
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) -DCPSCALE_BUILD_TESTS=$(BUILD_TESTS) $(CMAKE_ARGS)

build: deps $(BUILD_DIR)/build.ninja
	@grep -q '^CPSCALE_BUILD_TESTS:BOOL=ON' $(BUILD_DIR)/CMakeCache.txt || cmake -S . -B $(BUILD_DIR) -DCPSCALE_BUILD_TESTS=ON
	cmake --build $(BUILD_DIR) -j $(JOBS)

# The binary alone (and the libraries it links): what run, up and down need; no tests.
# A build dir it configures is the first run's: no debug info (a quarter less compile
# time) and a unity build of the libraries (a third of the CPU time); CMAKE_ARGS=
# "-DCPSCALE_DEBUG_INFO=ON -DCPSCALE_UNITY_BUILD=OFF" makes it a developer's.
build-cpscale: run-deps
	@[ -f $(BUILD_DIR)/build.ninja ] || \
	  $(MAKE) --no-print-directory $(BUILD_DIR)/build.ninja BUILD_TESTS=OFF \
	    CMAKE_ARGS="-DCPSCALE_DEBUG_INFO=OFF -DCPSCALE_UNITY_BUILD=ON $(CMAKE_ARGS)"
	cmake --build $(BUILD_DIR) -j $(JOBS) --target cpscale

control-plane: deps
	@$(UPSTREAM_BUILD)

# The main job: the node-bound scenario on the embedded local plane (started and
# stopped by cpscale itself). Scale it with RUN_ARGS="--set workloads.fleet.count=2000".
SCENARIO ?= scenarios/node-bound.yaml
RUN_ARGS ?=
# On a fresh machine the upstream build (module download, then Go) runs beside the
# package installs and the C++ build instead of after them (it needs only Go); its
# output goes to $(BUILD_DIR)/control-plane.log. In a session of its own, so that a
# failed C++ build stops all of it (go and its compilers too). The run itself is a
# recipe line of its own: `make -n run` prints it instead of running it (a line that
# calls $(MAKE) runs even under -n).
run: run-build
	CPSCALE_BIN_DIR="$$(tail -n 1 $(BUILD_DIR)/control-plane.log)" $(CPSCALE) run $(SCENARIO) $(RUN_ARGS)

run-build:
	$(GO_CHECK)
	@mkdir -p $(BUILD_DIR); log=$(BUILD_DIR)/control-plane.log; \
	setsid $(UPSTREAM_BUILD) > $$log 2>&1 & up=$$!; \
	$(MAKE) --no-print-directory build-cpscale || { kill -- -$$up 2>/dev/null; exit 1; }; \
	if kill -0 $$up 2>/dev/null; then echo "make run: waiting for the control plane's build ($$log)"; fi; \
	wait $$up || { echo "make run: building the control plane failed ($$log):"; tail -n 30 $$log; exit 1; }

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
	    cpscale_bench_simulate|cpscale_bench_node) $$b --benchmark_out=$$out --benchmark_out_format=json ;; \
	    cpscale_bench_fleet) $$b --out $$out && \
	      echo "== $$n --sink -> $(BUILD_DIR)/bench/fleet-sink.json" && $$b --sink --out $(BUILD_DIR)/bench/fleet-sink.json ;; \
	    *) $$b --out $$out ;; \
	  esac; \
	done; echo "benchmark JSON in $(BUILD_DIR)/bench/"

# The recipe index projected by the calibrated model (virtual time, a few minutes):
# every shipped recipe on each axis, each member on PROJECT_CORES cores of its own,
# from 1k to 256k nodes, up to ~100k sessions/min and 1.28M objects (20 kinds x 64k).
PROJECT_CORES ?= 16
PROJECTED_INDEX ?= reports/examples/projected-index
projected-index: build-cpscale
	$(CPSCALE) capacity --model --dedicated-cores $(PROJECT_CORES) --out $(PROJECTED_INDEX) \
	  scenarios/index/node.yaml scenarios/index/churn.yaml scenarios/index/state.yaml \
	  --profile profiles/classic.yaml --profile profiles/classic-ha.yaml \
	  --profile profiles/role-split.yaml --profile profiles/partitioned-storage.yaml \
	  --set index-node:capacity.start=1000 --set index-node:capacity.max=256000 --set index-node:capacity.bisect=2 \
	  --set index-churn:capacity.max=100000 --set index-churn:capacity.bisect=2 \
	  --set index-state:capacity.max=64000 --set index-state:capacity.bisect=2 \
	  --set 'index-state:capacity.gates[0]=apiserver_heap_inuse_bytes_all_replicas <= 32GiB'

up: build-cpscale control-plane
	$(CPSCALE) up --bin-dir "$(BIN_DIR)"

down:
	$(CPSCALE) down

clean:
	rm -rf $(BUILD_DIR)

# Rewrites every C++ source to the project's style (.ci/clang-format); the unit test
# Format.SourcesFollowClangFormat fails on any that does not follow it.
format: debian-deps
	find sim workloads reports test -type f \( -name '*.cc' -o -name '*.h' \) -print0 | \
	  xargs -0 clang-format-14 --style=file:.ci/clang-format -i

# The image the pods of `cpscale job` run (sim/image/Dockerfile, the repository as
# context), tagged with the checkout and with the version `cpscale job` names by default.
# BuildKit (docker buildx) reads sim/image/Dockerfile.dockerignore; the legacy builder
# would send every build tree with the context.
CPSCALE_VERSION := $(shell grep -o 'cpscale VERSION [0-9.]*' CMakeLists.txt | cut -d' ' -f3)
IMAGE ?= cpscale:$(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
image:
	DOCKER_BUILDKIT=1 docker build -f sim/image/Dockerfile -t $(IMAGE) -t cpscale:$(CPSCALE_VERSION) .

# ---- Fuzzing and sanitizers ----------------------------------------------------------
# Each has its own build dir, so the normal g++ build above is never reconfigured.
# Every build dir compiles through ccache when it is installed (CMakeLists.txt).

# clang and its runtimes (libFuzzer, ASan, UBSan) from Debian.
FUZZ_DEB_PACKAGES := clang libclang-rt-14-dev
FUZZ_DIR ?= build-fuzz
# Each target runs until FUZZ_RUNS executions or for FUZZ_SECONDS, whichever comes first
# (FUZZ_RUNS=0: for FUZZ_SECONDS). The slowest targets (scenario, kubeconfig) need about
# 20 minutes for 10^6 on an idle 2-core machine and half again when it is shared; the
# bound leaves room for that (test/fuzz/README.md has the counts). FUZZ_JOBS targets
# run at once.
FUZZ_SECONDS ?= 2700
FUZZ_RUNS ?= 1000000
FUZZ_JOBS ?= 2
FUZZ_TARGETS ?=

fuzz: debian-deps
	$(call apt_install,$(FUZZ_DEB_PACKAGES))
	CC=clang CXX=clang++ cmake -S . -B $(FUZZ_DIR) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCPSCALE_FUZZ=ON \
	  -DCPSCALE_BUILD_TESTS=OFF -DCPSCALE_BUILD_BENCH=OFF
	cmake --build $(FUZZ_DIR) -j $(JOBS) --target fuzzers
	test/fuzz/run.sh $(FUZZ_DIR) $(FUZZ_SECONDS) $(FUZZ_RUNS) $(FUZZ_JOBS) $(FUZZ_TARGETS)

# The unit tests under AddressSanitizer and UndefinedBehaviorSanitizer: any report
# aborts its test, so ctest fails. No integration tests, no benchmarks.
ASAN_DIR ?= build-asan
# -Og -g1: file:line in every report, and the least compile time that still optimizes:
# with ASan+UBSan, -O1 takes 1.5-2x the CPU time of -Og per file (UBSan's checks at
# -O1 most of it), and 1.5-1.9x that of the plain -O2 -g build; with TSan, 1.2-1.4x.
# SANITIZER_CTEST_ARGS: more ctest options for both runs (CI: --repeat after-timeout:2,
# as its crossing validation may stop them for minutes).
SANITIZER_CTEST_ARGS ?=
SANITIZER_FLAGS := -DCPSCALE_BUILD_INTEGRATION_TESTS=OFF -DCPSCALE_BUILD_BENCH=OFF \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-Og -g1 -DNDEBUG" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-Og -g1 -DNDEBUG"
sanitize-build: debian-deps
	cmake -S . -B $(ASAN_DIR) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCPSCALE_SANITIZE=address,undefined \
	  $(SANITIZER_FLAGS)
	cmake --build $(ASAN_DIR) -j $(JOBS)
# The tests that measure on the wall clock: threads, windows and rates in real seconds.
# The rest run in virtual time, where a pause of the whole process changes nothing but
# the time taken; these fail when the host stops them mid-window (CI's background stage,
# stopped while the validation's crossing runs, runs them after the suite instead).
# The transports' tests too: their servers and deadlines are real.
THREADED_TESTS := WorkerPool|OpenLoopDriver|RequestStats|SteadyWindow|Scraper|ScraperTest|LiveRunTest
TRANSPORT_TESTS := CurlTransport[A-Za-z]*|Http2Server|Http[12]Faults|[A-Za-z0-9]+/(GetFault|RetryOnFault|WatchFault|TlsGetFault)
WALL_CLOCK_TESTS := ^($(THREADED_TESTS)|$(TRANSPORT_TESTS))\.
ASAN_ENV := ASAN_OPTIONS=halt_on_error=1:abort_on_error=1:detect_leaks=1:detect_stack_use_after_return=1 \
  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
ASAN_CTEST := ctest --test-dir $(ASAN_DIR) --output-on-failure -L unit -j $(JOBS) --no-tests=error
sanitize: sanitize-virtual-time sanitize-wall-clock
sanitize-virtual-time: sanitize-build
	$(ASAN_ENV) $(ASAN_CTEST) -E 'ShippedMatrix|$(WALL_CLOCK_TESTS)' $(SANITIZER_CTEST_ARGS)
sanitize-wall-clock: sanitize-build
	$(ASAN_ENV) $(ASAN_CTEST) -R '$(WALL_CLOCK_TESTS)' $(SANITIZER_CTEST_ARGS)

# ThreadSanitizer over the code that runs threads: the worker pool (N engine loops),
# the open-loop driver's windows read from other threads, the scraper, and a whole live
# run (the supervisor's monitor, the scrape loop, two workers and the progress reporter).
TSAN_DIR ?= build-tsan
TSAN_TESTS := ^($(THREADED_TESTS))\.
tsan-build: debian-deps
	cmake -S . -B $(TSAN_DIR) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCPSCALE_SANITIZE=thread \
	  $(SANITIZER_FLAGS)
	cmake --build $(TSAN_DIR) -j $(JOBS) --target cpscale_driver_test cpscale_metrics_test cpscale_live_run_test
tsan: tsan-build
	TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
	  ctest --test-dir $(TSAN_DIR) --output-on-failure -L unit -R '$(TSAN_TESTS)' -j $(JOBS) --no-tests=error \
	  $(SANITIZER_CTEST_ARGS)
