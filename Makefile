# Thin wrapper around Meson/Ninja so that a fresh machine needs two commands:
#   make demo   - install what is missing, build, run the forwarding demo
#   make test   - build and run every test (plus the sanitizer build)
BUILD ?= build
SAN_BUILD ?= build-san
TSAN_BUILD ?= build-tsan
REL_BUILD ?= build-rel
CLANG_BUILD ?= build-clang
ARM_BUILD ?= build-arm64
MUT_BUILD ?= build-mutate
MESON_OPTS ?=
# Developer builds treat warnings as errors; a plain `meson setup` (a user's) does not.
DEV_OPTS ?= -Dwerror=true
# The default, sanitizer and mutation builds have the benchmark-only keys (txfree_loop,
# used_per_pkt, txc_walk): the bench runners and the tests of those variants need them. The
# release, clang and aarch64 builds of `make matrix` are built without, as a user's is.
BENCH_OPTS ?= -Dbench_variants=true

.PHONY: all deps build demo test test-unit tsan matrix mutate mutate-quick bench bench-seeds bench-peers \
	bench-afxdp bench-vhost bench-e1000e clean install

all: build

deps:
	@scripts/install-deps --check-or-install

$(BUILD)/build.ninja:
	@scripts/install-deps --check-or-install
	meson setup $(BUILD) $(DEV_OPTS) $(BENCH_OPTS) $(MESON_OPTS)

build: $(BUILD)/build.ninja
	ninja -C $(BUILD)

$(SAN_BUILD)/build.ninja:
	@scripts/install-deps --check-or-install
	CC=clang meson setup $(SAN_BUILD) -Db_sanitize=address,undefined -Db_lundef=false \
		-Dbuildtype=debug $(DEV_OPTS) $(BENCH_OPTS) $(MESON_OPTS)

$(TSAN_BUILD)/build.ninja:
	@scripts/install-deps --check-or-install
	CC=clang meson setup $(TSAN_BUILD) -Db_sanitize=thread -Db_lundef=false $(DEV_OPTS) \
		$(BENCH_OPTS) $(MESON_OPTS)

# The build matrix beside the default and sanitizer builds. Release: GCC at -O3, the whole
# tree (a user's first optimised build must build). Clang at -O2 and the aarch64 cross build
# (tests under qemu-user-static; pcap and AF_XDP off, their arm64 libraries are not needed)
# build what their unit tests need.
$(REL_BUILD)/build.ninja:
	@scripts/install-deps --check-or-install
	meson setup $(REL_BUILD) --buildtype=release $(DEV_OPTS) $(MESON_OPTS)

$(CLANG_BUILD)/build.ninja:
	@scripts/install-deps --check-or-install
	CC=clang meson setup $(CLANG_BUILD) $(DEV_OPTS) $(MESON_OPTS)

$(ARM_BUILD)/build.ninja:
	@scripts/install-deps --check-or-install
	meson setup $(ARM_BUILD) --cross-file cross/aarch64-linux-gnu.ini -Dpcap=disabled \
		-Dafxdp=disabled $(DEV_OPTS) $(MESON_OPTS)

matrix: $(REL_BUILD)/build.ninja $(CLANG_BUILD)/build.ninja $(ARM_BUILD)/build.ninja
	ninja -C $(REL_BUILD)
	@# Regenerate first (a changed meson.build), so the target list is read from current files.
	ninja -C $(CLANG_BUILD) build.ninja
	ninja -C $(CLANG_BUILD) $$(scripts/run-tests --targets $(CLANG_BUILD):unit)
	ninja -C $(ARM_BUILD) build.ninja
	ninja -C $(ARM_BUILD) $$(scripts/run-tests --targets $(ARM_BUILD):exe)

# The mutation check (scripts/mutate): every mutant of tests/mutants/*.list, opt-in; the
# quick subset runs inside `make test`, its kill rate counted in the summary line.
mutate:
	scripts/mutate --build $(MUT_BUILD)

mutate-quick:
	scripts/mutate --quick --build $(MUT_BUILD) --summary $(MUT_BUILD)/quick.json || true

# The README's test command: every test, the tests again under ASan+UBSan, the unit tests
# under ThreadSanitizer, in the release, clang and aarch64 builds, and the quick mutation
# subset. The last line counts them all: "N passed, N failed, N skipped".
test: build $(SAN_BUILD)/build.ninja $(TSAN_BUILD)/build.ninja matrix mutate-quick
	ninja -C $(SAN_BUILD)
	ninja -C $(TSAN_BUILD)
	TSAN_OPTIONS=halt_on_error=1 scripts/run-tests $(BUILD) $(SAN_BUILD):-plain_only $(TSAN_BUILD):unit \
		$(REL_BUILD):unit $(CLANG_BUILD):unit $(ARM_BUILD):exe \
		--mutants $(MUT_BUILD)/quick.json

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

# vhost-user 2x2: tide's virtio frontend and DPDK's virtio-user against tide's backend and
# DPDK's net_vhost, and the seed 003/004 rows of the driver (results/vhost.csv).
bench-vhost: build
	bench/vhost/run $(BENCH_VHOST_OPTS)

# The seed 000-002 rows on a device: e1000e driver + engine beside DPDK's net_e1000_em,
# instructions per packet under callgrind inside the QEMU guest (12-25 min).
bench-e1000e: build
	bench/e1000e/run --build $(BUILD) $(BENCH_E1000E_OPTS)

install: build
	meson install -C $(BUILD)

clean:
	rm -rf $(BUILD) $(SAN_BUILD) $(TSAN_BUILD) $(REL_BUILD) $(CLANG_BUILD) $(ARM_BUILD) \
		$(MUT_BUILD)

# The control-plane chaos test, long (CHAOS_SECONDS each), under ASan+UBSan and under TSan.
CHAOS_SECONDS ?= 300
.PHONY: chaos
chaos: $(SAN_BUILD)/build.ninja $(TSAN_BUILD)/build.ninja
	ninja -C $(SAN_BUILD)
	ninja -C $(TSAN_BUILD)
	CHAOS_SECONDS=$(CHAOS_SECONDS) TIDE_POOL_DEBUG=1 $(SAN_BUILD)/tests/test_chaos
	CHAOS_SECONDS=$(CHAOS_SECONDS) TIDE_POOL_DEBUG=1 TSAN_OPTIONS=halt_on_error=1 \
		$(TSAN_BUILD)/tests/test_chaos
