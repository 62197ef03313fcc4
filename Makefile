# The two commands of the README: `make run` and `make test`. Both set up
# what is missing (scripts/bootstrap), configure and build first.
BUILD_DIR ?= build
JOBS ?= $(shell nproc)
# What scripts/bootstrap installs: `run` (build and run), `test` (also the
# test-only packages: prometheus, docker-compose, yamllint), `bench`.
BOOTSTRAP_FOR ?= run
CMAKE_FLAGS ?= -DCMAKE_BUILD_TYPE=Release
RUN_FLAGS ?=

.PHONY: all bootstrap configure build build-run test run bench clean test-sanitize test-tsan fuzz-long

all: build

bootstrap:
	@scripts/bootstrap --for $(BOOTSTRAP_FOR)

# Target-specific: also for the prerequisites (configure, bootstrap).
test test-sanitize test-tsan: BOOTSTRAP_FOR = test
bench: BOOTSTRAP_FOR = bench

configure: bootstrap
	@cmake -S . -B $(BUILD_DIR) -G Ninja $(CMAKE_FLAGS) > /dev/null

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

test: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS)

# Only what `make run` runs: the tensortier binary, not the tests, fuzzers
# and benchmarks that `make build` (and `make test`) build as well.
build-run: configure
	cmake --build $(BUILD_DIR) -j $(JOBS) --target tensortier

run: build-run
	$(BUILD_DIR)/cli/tensortier train $(RUN_FLAGS)

# The test suites under AddressSanitizer and UndefinedBehaviorSanitizer, in
# their own build directory (the normal build is untouched); suppressions of
# third-party code only, in sanitizers/ (docs/security.md).
SANITIZE_DIR ?= build-asan
SANITIZE_SUITES ?= tests_core tests_replay tests_agents tests_export tests_policies tests_security
SANITIZE_ENV = ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:detect_stack_use_after_return=1:strict_string_checks=1 \
	LSAN_OPTIONS=suppressions=$(CURDIR)/sanitizers/lsan.supp:print_suppressions=0 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:suppressions=$(CURDIR)/sanitizers/ubsan.supp
test-sanitize: bootstrap
	@cmake -S . -B $(SANITIZE_DIR) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTENSORTIER_SANITIZE=ON \
		-DTENSORTIER_BUILD_BENCH=OFF > /dev/null
	cmake --build $(SANITIZE_DIR) -j $(JOBS) --target $(SANITIZE_SUITES) \
		fuzz_protocol_smoke fuzz_workload_smoke fuzz_plan_smoke fuzz_lookup_smoke fuzz_config_smoke fuzz_learner_smoke
	cd $(SANITIZE_DIR) && $(SANITIZE_ENV) ctest --output-on-failure -j $(JOBS) \
		-L '^($(subst $(eval) ,|,$(strip $(SANITIZE_SUITES)))|fuzz)$$'

# The learner's threads (network, training, evaluation) with in-process
# fleets under ThreadSanitizer, in their own build directory; LibTorch's and
# libzmq's uninstrumented threads are suppressed in sanitizers/tsan.supp.
TSAN_DIR ?= build-tsan
TSAN_FILTER ?= LearnerTraining.*:LearnerRobustness.*:ProtocolReliability.*:LearnerResume.RestoresCountersWeightsAndReplay:LearnerResume.AnEpisodePartlyInReplayIsNotInsertedTwice:LearnerResume.RefusesACheckpointOfAnotherAgent
test-tsan: bootstrap
	@cmake -S . -B $(TSAN_DIR) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTENSORTIER_TSAN=ON \
		-DTENSORTIER_BUILD_BENCH=OFF > /dev/null
	cmake --build $(TSAN_DIR) -j $(JOBS) --target tests_integration
	cd $(TSAN_DIR)/tests && TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$(CURDIR)/sanitizers/tsan.supp" \
		./tests_integration --gtest_filter='$(TSAN_FILTER)'

# Each fuzz target under libFuzzer for FUZZ_SECONDS (default 300) each.
FUZZ_SECONDS ?= 300
fuzz-long:
	bench/fuzz_long.sh --seconds $(FUZZ_SECONDS)

bench: build
	bench/run_all.sh $(BUILD_DIR)

clean:
	rm -rf $(BUILD_DIR)
