# Thin entry points; the real work is in scripts/ and CMake.
BUILD_DIR ?= build
JOBS ?= $(shell nproc)

# What `make run` runs: the CLI and the runtime it starts. Everything else (tests, benchmarks, the
# operator) is built by `make build` and `make test`.
RUN_TARGETS := autodist autodist-runtime

.PHONY: all setup configure build build-run run test test-browser bench fuzz format tidy clean

all: build

setup:
	scripts/setup.sh

# Ninja keeps both cores busy where make's per-target steps leave one idle, and with
# CMAKE_OPTIMIZE_DEPENDENCIES a static library compiles without waiting for the ones it links.
# A build directory made earlier keeps the generator it was made with.
# Under CI (CI=true) debug information is line tables only (CMakeLists.txt: AUTODIST_DEBUG_INFO)
# and the benchmarks are compiled at -O0, never timed (bench/CMakeLists.txt).
configure: setup
	cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_OPTIMIZE_DEPENDENCIES=ON \
	  $(if $(CI),-DAUTODIST_DEBUG_INFO=lines) \
	  -DAUTODIST_BENCH_COMPILE_ONLY=$(if $(CI),ON,OFF) \
	  $(if $(wildcard $(BUILD_DIR)/CMakeCache.txt),,-G Ninja)

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

build-run: configure
	cmake --build $(BUILD_DIR) -j $(JOBS) --target $(RUN_TARGETS)

# Inspects the example model, compiles a strategy and trains it with `autodist run`.
run: build-run
	scripts/run-example.sh $(BUILD_DIR)

test: build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS)

# The tests that need a browser (tests/browser), with Chromium installed first; `make test` skips
# them where it is missing (CI: installing it would cost minutes).
test-browser: build
	scripts/setup.sh browser
	ctest --test-dir $(BUILD_DIR) --output-on-failure -R '^browser\.'

# The training comparison needs PyTorch (`scripts/setup.sh fixtures`); the collectives comparison
# needs Open MPI (`scripts/setup.sh bench`, which bench-allreduce.sh runs itself).
bench: build
	scripts/bench-compile.sh $(BUILD_DIR)
	scripts/bench-train.sh $(BUILD_DIR)
	scripts/bench-ps.sh $(BUILD_DIR)
	scripts/bench-allreduce.sh $(BUILD_DIR)
	scripts/bench-allreduce-train.sh $(BUILD_DIR)
	scripts/bench-operator.sh $(BUILD_DIR)

# libFuzzer with sanitizers over the parsers (tests/fuzz), in build-fuzz with clang: FUZZ_SECONDS
# per target (default 60), FUZZ_TARGETS to choose some. ctest only replays their corpora.
fuzz:
	scripts/fuzz.sh

format:
	scripts/format.sh

tidy: configure
	scripts/tidy.sh $(BUILD_DIR)

clean:
	rm -rf $(BUILD_DIR)
