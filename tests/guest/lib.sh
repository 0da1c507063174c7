# SPDX-License-Identifier: BSD-3-Clause
#
# The pieces every QEMU guest suite shares (sourced by tests/pci/run.sh and the other guest
# runners): the guest kernel, an initramfs built from busybox, kernel modules and the
# build's binaries with their libraries, and QEMU started the one way this machine can run
# it (software CPU, q35 with the emulated Intel IOMMU). The runner keeps its own /init, its
# NICs, its wire to the host and its checks.
#
# Usage, in a runner that has set -u:
#   . tests/guest/lib.sh
#   guest_kernel CACHE_DIR          sets $kernel and $kmod (exit 77 when none can be had)
#   guest_tmpdir                    sets $dir, a temporary directory removed at exit with
#                                   every pid in $pids and QEMU ($dir/qemu.pid)
#   guest_rootfs                    $dir/irfs: busybox, /proc /sys /dev /run /var/run
#   guest_modules PATH...           kernel modules by path under kernel/, without .ko
#                                   (built-in ones are skipped), into /lib/modules/NAME.ko
#   guest_vfio_modules              the VFIO modules (vfio-pci and what it needs)
#   guest_bin NAME FILE             FILE as /bin/NAME; its libraries go in at guest_pack
#   guest_dpdk PMD...               dpdk-testpmd and only these PMDs (EAL loads every
#                                   plugin it finds), when dpdk-testpmd is installed
#   guest_pack INIT                 INIT as /init, tests/guest/init.sh as
#                                   /lib/guest-init.sh (the steps the /init scripts
#                                   share), the library closure, $dir/initrd.gz
#   guest_cpu                       the CPU to pin QEMU to (the last one this shell may use)
#   guest_qemu SECONDS APPEND ARGS...  QEMU in the background (pid in $qemu), its console
#                                   on $dir/console.log, stderr on $dir/qemu.out, a
#                                   monitor on $dir/mon.sock; ARGS add the NICs and more;
#                                   in network namespace $guest_netns when it is set
#   guest_wait                      waits for QEMU, sets $qrc, strips CRs from the console
#
# The PCI suites' host side (tests/pci, tests/virtio_pci, bench/e1000e): the wire
# (tests/pci/wire.c) between QEMU's netdev n0 and the guest's serial line, and the checks
# of the guest's "PCITEST" lines; failures counted in $failed.
#   guest_wire_start WIRE SECONDS   the wire in the background on $dir's sockets, its log
#                                   $dir/wire.log; returns once it is ready
#   guest_wire_args                 QEMU's arguments for the wire: the serial line, netdev n0
#   guest_wire_wait                 waits for the wire, sets $wrc
#   fail WHY                        one failure
#   pci_checks NAME...              QEMU and the wire exited 0, no PCITEST FAIL, and a
#                                   'PCITEST NAME ok' for each NAME
#   pci_echo_checks COUNT           tide-fwd and dpdk-testpmd each sent back COUNT of COUNT
#                                   per size, in order and intact, and tide-fwd exited 0
#   guest_verdict SUITE             the logs and exit 1 after a failure, else "all passed"

guest_lib_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

guest_skip() { echo "skip: $*"; exit 77; }

guest_preflight() {
	command -v qemu-system-x86_64 >/dev/null || guest_skip "qemu-system-x86_64 not installed"
	command -v busybox >/dev/null || guest_skip "busybox not installed (busybox-static)"
	file -L "$(command -v busybox)" 2>/dev/null | grep -q dynamic && guest_skip "busybox is not static"
	return 0
}

# Debian's linux-image-*-cloud-amd64, from $TIDE_GUEST_KERNEL_DIR (default
# /var/cache/tide/guest-kernel, where scripts/install-deps puts it), else downloaded into
# CACHE_DIR/guest-kernel.
guest_kernel() {
	local cache=$1 pkg kdir=${TIDE_GUEST_KERNEL_DIR:-/var/cache/tide/guest-kernel}
	if ! ls "$kdir"/root/boot/vmlinuz-* >/dev/null 2>&1; then
		kdir=$cache/guest-kernel
		if ! ls "$kdir"/root/boot/vmlinuz-* >/dev/null 2>&1; then
			mkdir -p "$kdir"
			pkg=$(apt-cache depends linux-image-cloud-amd64 2>/dev/null |
				awk '/Depends: linux-image-/ {print $2; exit}')
			[ -n "$pkg" ] || guest_skip "no linux-image-cloud-amd64 in the apt lists (run scripts/install-deps)"
			(cd "$kdir" && apt-get download -q "$pkg" >/dev/null 2>&1) || guest_skip "cannot download $pkg"
			dpkg -x "$kdir"/"$pkg"_*.deb "$kdir/root" || guest_skip "cannot unpack $pkg"
			rm -f "$kdir"/*.deb
		fi
	fi
	kernel=$(ls "$kdir"/root/boot/vmlinuz-* | head -1)
	kmod=$(ls -d "$kdir"/root/lib/modules/* | head -1)
}

guest_tmpdir() {
	dir=$(mktemp -d "${TMPDIR:-/tmp}/tide-guest-XXXXXX")
	pids=()
	guest_bins=()
	trap guest_cleanup EXIT
	trap 'exit 1' INT TERM
}

guest_cleanup() {
	# timeout(1) passes a TERM on to QEMU; QEMU's own pid file covers a timeout killed harder.
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	[ -s "$dir/qemu.pid" ] && kill -9 "$(cat "$dir/qemu.pid")" 2>/dev/null
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$dir"
}

guest_rootfs() {
	local irfs=$dir/irfs a
	mkdir -p "$irfs"/bin "$irfs"/proc "$irfs"/sys "$irfs"/dev "$irfs"/run "$irfs"/lib/modules "$irfs"/var
	ln -s ../run "$irfs/var/run" # DPDK's runtime directory
	cp "$(command -v busybox)" "$irfs/bin/busybox"
	for a in $(busybox --list); do [ -e "$irfs/bin/$a" ] || ln -s busybox "$irfs/bin/$a"; done
}

guest_modules() {
	local m f
	for m in "$@"; do
		f=$(ls "$kmod/kernel/$m.ko"* 2>/dev/null | head -1)
		[ -n "$f" ] || continue # built in
		case $f in
		*.xz) xz -dc "$f" >"$dir/irfs/lib/modules/$(basename "$m").ko" ;;
		*) cp "$f" "$dir/irfs/lib/modules/" ;;
		esac
	done
}

guest_vfio_modules() {
	guest_modules virt/lib/irqbypass drivers/vfio/vfio_virqfd drivers/vfio/vfio \
		drivers/vfio/vfio_iommu_type1 drivers/vfio/pci/vfio-pci-core drivers/vfio/pci/vfio-pci
}

guest_bin() {
	cp "$2" "$dir/irfs/bin/$1"
	guest_bins+=("$2")
}

guest_dpdk() {
	local tp pmddir p
	tp=$(command -v dpdk-testpmd) || return 0
	pmddir=$(ls -d /usr/lib/x86_64-linux-gnu/dpdk/pmds-* 2>/dev/null | head -1)
	mkdir -p "$dir/irfs$pmddir" "$dir/irfs/usr/bin"
	cp "$tp" "$dir/irfs/usr/bin/dpdk-testpmd"
	guest_bins+=("$tp")
	for p in "$@"; do
		cp -a "$pmddir"/librte_$p.so* "$dir/irfs$pmddir/"
		guest_bins+=("$pmddir/librte_$p.so")
	done
	cp -L --parents /lib/x86_64-linux-gnu/libgcc_s.so.1 "$dir/irfs/" 2>/dev/null # testpmd's exit
	return 0
}

guest_pack() {
	local irfs=$dir/irfs lib
	for lib in $(ldd "${guest_bins[@]}" 2>/dev/null |
		awk '/=>/ && $3 ~ /^\// {print $3} /^\t\/[^ ]*ld-linux/ {print $1}' | sort -u); do
		case $lib in
		/lib/* | /lib64/* | /usr/lib/*) cp -L --parents "$lib" "$irfs/" ;;
		*) mkdir -p "$irfs/usr/lib"; cp -L "$lib" "$irfs/usr/lib/" ;; # the build's libtide
		esac
	done
	[ -e "$irfs/lib64/ld-linux-x86-64.so.2" ] ||
		{ mkdir -p "$irfs/lib64"; cp -L /lib64/ld-linux-x86-64.so.2 "$irfs/lib64/"; }
	cp "$1" "$irfs/init"
	chmod +x "$irfs/init"
	cp "$guest_lib_dir/init.sh" "$irfs/lib/guest-init.sh"
	(cd "$irfs" && find . | busybox cpio -o -H newc 2>/dev/null | gzip -1 >"$dir/initrd.gz")
}

guest_cpu() {
	taskset -pc $$ 2>/dev/null | awk -F': ' '{print $2}' | tr ',' '\n' | tail -1 | cut -d- -f2
}

guest_qemu() {
	local secs=$1 append=$2 cpu
	shift 2
	cpu=$(guest_cpu)
	${guest_netns:+ip netns exec "$guest_netns"} timeout "$secs" taskset -c "${cpu:-0}" qemu-system-x86_64 -accel tcg -cpu max -m 512 -smp 1 \
		-machine q35,kernel-irqchip=split -device intel-iommu,intremap=on,caching-mode=on,aw-bits=48 \
		-nodefaults -display none -no-reboot -pidfile "$dir/qemu.pid" \
		-serial file:"$dir/console.log" \
		-monitor unix:"$dir/mon.sock",server=on,wait=off \
		"$@" \
		-kernel "$kernel" -initrd "$dir/initrd.gz" \
		-append "console=ttyS0 quiet panic=-1 intel_iommu=on $append" \
		</dev/null >"$dir/qemu.out" 2>&1 &
	qemu=$!
	pids+=($qemu)
}

guest_wait() {
	wait $qemu
	qrc=$?
	tr -d '\r' <"$dir/console.log" >"$dir/console.txt" && mv "$dir/console.txt" "$dir/console.log"
}

# ---- the PCI suites' host side ----

guest_wire_start() {
	"$1" "$dir/h.sock" "$dir/q.sock" "$dir/ctl.sock" "$dir/mon.sock" n0 "$2" "$dir/qemu.out" \
		>"$dir/wire.log" 2>&1 &
	pids+=($!)
	wirepid=$!
	failed=0
	for _ in $(seq 50); do grep -q ready "$dir/wire.log" && break; sleep 0.1; done
}

guest_wire_args() {
	wire_args=(-chardev socket,id=ctl,path="$dir/ctl.sock" -serial chardev:ctl
		-netdev dgram,id=n0,local.type=unix,local.path="$dir/q.sock",remote.type=unix,remote.path="$dir/h.sock")
}

guest_wire_wait() {
	wait $wirepid
	wrc=$?
}

fail() { echo "FAIL: $*"; failed=1; }

pci_checks() {
	local name
	[ $qrc -eq 0 ] || fail "QEMU exit status $qrc (124: the guest timed out)"
	[ $wrc -eq 0 ] || fail "wire exit status $wrc: $(tail -1 "$dir/wire.log")"
	grep -a "PCITEST" "$dir/console.log" | grep -a " FAIL" && fail "a check failed in the guest"
	for name in "$@"; do
		grep -aq "^PCITEST $name ok" "$dir/console.log" || fail "no 'PCITEST $name ok'"
	done
}

pci_echo_checks() {
	local size t d want="sent=$1 back=$1 bad=0 order=0"
	for size in 60 1514 8996; do
		t=$(grep -a "^PCITEST echo_tide_$size " "$dir/console.log" | grep -o "sent=.*")
		d=$(grep -a "^PCITEST echo_dpdk_$size " "$dir/console.log" | grep -o "sent=.*")
		[ "$t" = "$want" ] || fail "tide-fwd at $size bytes: '$t', expected '$want'"
		[ "$d" = "$want" ] || fail "dpdk-testpmd at $size bytes: '$d', expected '$want'"
		[ "$t" = "$d" ] || fail "tide-fwd and dpdk-testpmd differ at $size bytes: '$t' / '$d'"
	done
	grep -aq "PCITEST fwd_exit rc=0" "$dir/console.log" || fail "tide-fwd did not exit 0 (buffers or errors)"
}

guest_verdict() {
	if [ $failed -ne 0 ]; then
		echo "--- QEMU stderr"; head -c 3000 "$dir/qemu.out"
		echo "--- console"; tail -n 60 "$dir/console.log"
		[ -f "$dir/wire.log" ] && { echo "--- wire"; tail -n 20 "$dir/wire.log"; }
		exit 1
	fi
	echo "$1: all checks passed"
}
