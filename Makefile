# Thin wrapper around Meson/Ninja so that a fresh machine needs two commands:
#   make demo   - install what is missing, build, run the forwarding demo
#   make test   - build and run every test (plus the sanitizer build)
BUILD ?= build
SAN_BUILD ?= build-san
TSAN_BUILD ?= build-tsan
MESON_OPTS ?=

.PHONY: all deps build demo test test-unit tsan bench bench-seeds bench-peers bench-afxdp bench-vhost clean install

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

$(TSAN_BUILD)/build.ninja:
	@scripts/install-deps --check-or-install
	CC=clang meson setup $(TSAN_BUILD) -Db_sanitize=thread -Db_lundef=false $(MESON_OPTS)

# The README's test command: every test, then the unit tests under ASan+UBSan and under
# ThreadSanitizer.
test: build $(SAN_BUILD)/build.ninja $(TSAN_BUILD)/build.ninja
	ninja -C $(SAN_BUILD)
	ninja -C $(TSAN_BUILD)
	TSAN_OPTIONS=halt_on_error=1 scripts/run-tests $(BUILD) $(SAN_BUILD) $(TSAN_BUILD):unit

test-unit: build
	meson test -C $(BUILD) --print-errorlogs

tsan: $(TSAN_BUILD)/build.ninja
	ninja -C $(TSAN_BUILD)
	TSAN_OPTIONS=halt_on_error=1 scripts/run-tests $(TSAN_BUILD):unit

# The quick start: l3fwd between the two ports of a simulated NIC whose device runs on its
# own thread (on the last CPU), forwarding on lcore 0, live statistics and a summary.
DEMO_SECONDS ?= 10
demo: build
	$(BUILD)/apps/tide-fwd/tide-fwd --port simnic:ports=2,mode=thread,wire=gen,size=64 \
		--lcores 0 --fwd l3fwd --rxd 1024 --txd 1024 --rs-thresh 32 --free-thresh 32 \
		--duration $(DEMO_SECONDS)

bench: build
	$(BUILD)/bench/tide-bench ring
	$(BUILD)/bench/tide-bench pool

# The seed experiments side by side (results/seeds.*, plots) and tide vs DPDK (results/peers.*).
bench-seeds: build
	bench/seeds/run --build $(BUILD) $(BENCH_SEEDS_OPTS)

bench-peers: build
	bench/peers/run --build $(BUILD) $(BENCH_PEERS_OPTS)

# AF_XDP on veth beside the kernel's XDP and DPDK, and the seed 004 row (root; results/afxdp.*).
bench-afxdp: build
	bench/afxdp/run --build $(BUILD) $(BENCH_AFXDP_OPTS)

# vhost-user: tide's backend vs DPDK's net_vhost with the same virtio-user frontend, and the
# seed 003/004 rows of the driver (results/vhost.csv).
bench-vhost: build
	bench/vhost/run $(BENCH_VHOST_OPTS)

install: build
	meson install -C $(BUILD)

clean:
	rm -rf $(BUILD) $(SAN_BUILD) $(TSAN_BUILD)
