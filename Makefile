# Thin wrapper around Meson/Ninja so that a fresh machine needs two commands:
#   make demo   - install what is missing, build, run the forwarding demo
#   make test   - build and run every test (plus the sanitizer build)
BUILD ?= build
SAN_BUILD ?= build-san
MESON_OPTS ?=

.PHONY: all deps build demo test test-unit test-san bench clean install

all: build

deps:
	@scripts/install-deps --check-or-install

$(BUILD)/build.ninja:
	@scripts/install-deps --check-or-install
	meson setup $(BUILD) $(MESON_OPTS)

build: $(BUILD)/build.ninja
	ninja -C $(BUILD)

$(SAN_BUILD)/build.ninja:
	@scripts/install-deps --check-or-install
	CC=clang meson setup $(SAN_BUILD) -Db_sanitize=address,undefined -Db_lundef=false \
		-Dbuildtype=debug $(MESON_OPTS)

# The README's test command: unit and driver tests, then the same under ASan+UBSan.
test: build $(SAN_BUILD)/build.ninja
	ninja -C $(SAN_BUILD)
	scripts/run-tests $(BUILD) $(SAN_BUILD)

test-unit: build
	meson test -C $(BUILD) --print-errorlogs

tsan:
	@scripts/install-deps --check-or-install
	[ -f build-tsan/build.ninja ] || CC=clang meson setup build-tsan -Db_sanitize=thread -Db_lundef=false $(MESON_OPTS)
	ninja -C build-tsan
	TSAN_OPTIONS=halt_on_error=1 meson test -C build-tsan --print-errorlogs

demo: build
	$(BUILD)/bench/tide-bench pool

bench: build
	$(BUILD)/bench/tide-bench ring
	$(BUILD)/bench/tide-bench pool

install: build
	meson install -C $(BUILD)

clean:
	rm -rf $(BUILD) $(SAN_BUILD) build-tsan
