# The two commands of the README: `make run` and `make test`. Both set up
# what is missing (scripts/bootstrap), configure and build first.
BUILD_DIR ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?= -DCMAKE_BUILD_TYPE=Release
RUN_FLAGS ?=

.PHONY: all bootstrap configure build test run bench clean

all: build

bootstrap:
	@scripts/bootstrap

configure: bootstrap
	@cmake -S . -B $(BUILD_DIR) -G Ninja $(CMAKE_FLAGS) > /dev/null

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

test: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS)

run: build
	$(BUILD_DIR)/cli/tensortier train $(RUN_FLAGS)

bench: build
	bench/run_all.sh $(BUILD_DIR)

clean:
	rm -rf $(BUILD_DIR)
