#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# The PCI suite: tide's e1000e driver in a QEMU guest (software CPU, q35 with the emulated
# Intel IOMMU, an e1000e NIC on a unix-datagram wire to tests/pci/wire.c), beside DPDK's
# net_e1000_em on the same device in the same boot (tests/pci/guest_init.sh says what runs).
#
# Passes when every PCITEST check the guest prints is ok, the counts of tide-fwd and of
# dpdk-testpmd equal COUNT per size both ways and equal each other, and the IOMMU reported a
# fault (QEMU "vtd_" on stderr, "DMAR" in the guest log) only for the one deliberate bad
# mapping. Exit 77 when QEMU or the guest kernel cannot be had.
#
# usage: run.sh PCI_GUEST TIDE_FWD WIRE TEST_PORT CACHE_DIR [COUNT]
#   The guest kernel: Debian's linux-image-*-cloud-amd64, from $TIDE_GUEST_KERNEL_DIR
#   (default /var/cache/tide/guest-kernel, where scripts/install-deps puts it), else
#   downloaded into CACHE_DIR.
set -u
guest=$1 fwd=$2 wire=$3 test_port=$4 cache=$5 count=${6:-${PCI_COUNT:-10000}}
skip() { echo "skip: $*"; exit 77; }
fail() { echo "FAIL: $*"; failed=1; }
command -v qemu-system-x86_64 >/dev/null || skip "qemu-system-x86_64 not installed"
command -v busybox >/dev/null || skip "busybox not installed (busybox-static)"
file -L "$(command -v busybox)" 2>/dev/null | grep -q dynamic && skip "busybox is not static"

# ---- the guest kernel ----
kdir=${TIDE_GUEST_KERNEL_DIR:-/var/cache/tide/guest-kernel}
if ! ls "$kdir"/root/boot/vmlinuz-* >/dev/null 2>&1; then
	kdir=$cache/guest-kernel
	if ! ls "$kdir"/root/boot/vmlinuz-* >/dev/null 2>&1; then
		mkdir -p "$kdir"
		pkg=$(apt-cache depends linux-image-cloud-amd64 2>/dev/null |
			awk '/Depends: linux-image-/ {print $2; exit}')
		[ -n "$pkg" ] || skip "no linux-image-cloud-amd64 in the apt lists (run scripts/install-deps)"
		(cd "$kdir" && apt-get download -q "$pkg" >/dev/null 2>&1) || skip "cannot download $pkg"
		dpkg -x "$kdir"/"$pkg"_*.deb "$kdir/root" || skip "cannot unpack $pkg"
		rm -f "$kdir"/*.deb
	fi
fi
kernel=$(ls "$kdir"/root/boot/vmlinuz-* | head -1)
kmod=$(ls -d "$kdir"/root/lib/modules/* | head -1)

dir=$(mktemp -d /tmp/tide-pci-XXXXXX)
pids=()
cleanup() {
	# timeout(1) passes a TERM on to QEMU; QEMU's own pid file covers a timeout killed harder.
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	[ -s "$dir/qemu.pid" ] && kill -9 "$(cat "$dir/qemu.pid")" 2>/dev/null
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# ---- the initramfs (in the build directory's temp dir for this run) ----
irfs=$dir/irfs
mkdir -p "$irfs"/bin "$irfs"/proc "$irfs"/sys "$irfs"/dev "$irfs"/run "$irfs"/lib/modules "$irfs"/var
ln -s ../run "$irfs/var/run" # DPDK's runtime directory
cp "$(command -v busybox)" "$irfs/bin/busybox"
for a in $(busybox --list); do [ -e "$irfs/bin/$a" ] || ln -s busybox "$irfs/bin/$a"; done
for m in virt/lib/irqbypass drivers/vfio/vfio_virqfd drivers/vfio/vfio \
	drivers/vfio/vfio_iommu_type1 drivers/vfio/pci/vfio-pci-core drivers/vfio/pci/vfio-pci; do
	f=$(ls "$kmod/kernel/$m.ko"* 2>/dev/null | head -1)
	[ -n "$f" ] || continue # built in
	case $f in
	*.xz) xz -dc "$f" >"$irfs/lib/modules/$(basename "$m").ko" ;;
	*) cp "$f" "$irfs/lib/modules/" ;;
	esac
done
libs() { ldd "$@" 2>/dev/null | awk '/=>/ && $3 ~ /^\// {print $3} /^\t\/[^ ]*ld-linux/ {print $1}'; }
cp "$guest" "$irfs/bin/pci_guest"
cp "$fwd" "$irfs/bin/tide-fwd"
cp "$test_port" "$irfs/bin/test_port"
bins=("$guest" "$fwd" "$test_port")
tp=$(command -v dpdk-testpmd || true)
if [ -n "$tp" ]; then
	pmddir=$(ls -d /usr/lib/x86_64-linux-gnu/dpdk/pmds-* 2>/dev/null | head -1)
	mkdir -p "$irfs$pmddir" "$irfs/usr/bin"
	cp "$tp" "$irfs/usr/bin/dpdk-testpmd"
	bins+=("$tp")
	# Only these PMDs in the plugin directory: EAL loads every one it finds there.
	for p in bus_pci mempool_ring net_e1000; do
		cp -a "$pmddir"/librte_$p.so* "$irfs$pmddir/"
		bins+=("$pmddir/librte_$p.so")
	done
	cp -L --parents /lib/x86_64-linux-gnu/libgcc_s.so.1 "$irfs/" 2>/dev/null
fi
for lib in $(libs "${bins[@]}" | sort -u); do
	case $lib in
	/lib/* | /lib64/* | /usr/lib/*) cp -L --parents "$lib" "$irfs/" ;;
	*) mkdir -p "$irfs/usr/lib"; cp -L "$lib" "$irfs/usr/lib/" ;; # the build's libtide
	esac
done
[ -e "$irfs/lib64/ld-linux-x86-64.so.2" ] ||
	{ mkdir -p "$irfs/lib64"; cp -L /lib64/ld-linux-x86-64.so.2 "$irfs/lib64/"; }
cp "$(dirname "$0")/guest_init.sh" "$irfs/init"
chmod +x "$irfs/init"
(cd "$irfs" && find . | busybox cpio -o -H newc 2>/dev/null | gzip -1 >"$dir/initrd.gz")

# ---- one guest ----
cpu=$(taskset -pc $$ 2>/dev/null | awk -F': ' '{print $2}' | tr ',' '\n' | tail -1 | cut -d- -f2)
"$wire" "$dir/h.sock" "$dir/q.sock" "$dir/ctl.sock" "$dir/mon.sock" n0 175 "$dir/qemu.out" \
	>"$dir/wire.log" 2>&1 &
pids+=($!)
wirepid=$!
for _ in $(seq 50); do grep -q ready "$dir/wire.log" && break; sleep 0.1; done
start=$SECONDS
timeout 170 taskset -c "${cpu:-0}" qemu-system-x86_64 -accel tcg -cpu max -m 512 -smp 1 \
	-machine q35,kernel-irqchip=split -device intel-iommu,intremap=on,caching-mode=on,aw-bits=48 \
	-nodefaults -display none -no-reboot -pidfile "$dir/qemu.pid" \
	-serial file:"$dir/console.log" \
	-chardev socket,id=ctl,path="$dir/ctl.sock" -serial chardev:ctl \
	-monitor unix:"$dir/mon.sock",server=on,wait=off \
	-netdev dgram,id=n0,local.type=unix,local.path="$dir/q.sock",remote.type=unix,remote.path="$dir/h.sock" \
	-device e1000e,netdev=n0,mac=52:54:00:12:34:56 \
	-kernel "$kernel" -initrd "$dir/initrd.gz" \
	-append "console=ttyS0 quiet panic=-1 intel_iommu=on hugepages=64 pcicount=$count pciphases=${PCI_PHASES:-main,tide,dpdk,badmap}${PCI_VERBOSE:+ pciverbose=1}" \
	</dev/null >"$dir/qemu.out" 2>&1 &
qemu=$!
pids+=($qemu)
wait $qemu
qrc=$?
tr -d '\r' <"$dir/console.log" >"$dir/console.txt" && mv "$dir/console.txt" "$dir/console.log"
wait $wirepid
wrc=$?
echo "guest ran $((SECONDS - start)) s (QEMU exit $qrc, wire exit $wrc), $count frames per size"
grep -a "PCITEST\|^fwd:\|^testpmd:\|DMAR" "$dir/console.log"
grep -a "^wire:" "$dir/wire.log" | grep -v "^wire: [<>] RX\|OK RX" | tail -40

failed=0
[ $qrc -eq 0 ] || fail "QEMU exit status $qrc (124: the guest timed out)"
[ $wrc -eq 0 ] || fail "wire exit status $wrc: $(tail -1 "$dir/wire.log")"
grep -a "PCITEST" "$dir/console.log" | grep -a " FAIL" && fail "a check failed in the guest"
for name in bind bad_config open mac link_up port_conformance rx_60 rx_1514 rx_8996 tx_60 tx_1514 tx_8996 \
	stats tx_unmapped tx_mapped_later tx_ring_full intr link stop_start_polling stop_pool_whole \
	close_pool_whole rx_no_chain fwd_interrupt iommu_quiet_before_badmap badmap_fault_seen badmap_nothing_sent \
	badmap_pool_whole; do
	grep -aq "^PCITEST $name ok" "$dir/console.log" || fail "no 'PCITEST $name ok'"
done
for size in 60 1514 8996; do
	t=$(grep -a "^PCITEST echo_tide_$size " "$dir/console.log" | grep -o "sent=.*")
	d=$(grep -a "^PCITEST echo_dpdk_$size " "$dir/console.log" | grep -o "sent=.*")
	want="sent=$count back=$count bad=0 order=0"
	[ "$t" = "$want" ] || fail "tide-fwd at $size bytes: '$t', expected '$want'"
	[ "$d" = "$want" ] || fail "dpdk-testpmd at $size bytes: '$d', expected '$want'"
	[ "$t" = "$d" ] || fail "tide-fwd and dpdk-testpmd differ at $size bytes: '$t' / '$d'"
done
grep -aq "PCITEST fwd_exit rc=0" "$dir/console.log" || fail "tide-fwd did not exit 0 (buffers or errors)"
# The IOMMU: silent until the deliberate fault, which it must report (QEMU's side: the
# guest asked the wire to count QEMU's fault lines just before and just after it).
vtd_all=$(grep -ac vtd_ "$dir/qemu.out")
dmar_before=$(sed -n '/PCITEST badmap-begin/q;p' "$dir/console.log" | grep -ac DMAR)
dmar_after=$(sed -n '/PCITEST badmap-begin/,$p' "$dir/console.log" | grep -ac DMAR)
[ "$dmar_before" = 0 ] || fail "$dmar_before DMAR lines in the guest before the deliberate fault"
[ "$vtd_all" -gt 0 ] || fail "the deliberate bad mapping raised no vtd_ line in QEMU"
[ "$dmar_after" -gt 0 ] || fail "the deliberate bad mapping raised no DMAR line in the guest"
echo "IOMMU faults: QEMU $vtd_all line(s), all after the deliberate one; guest DMAR $dmar_after"
if [ $failed -ne 0 ]; then
	echo "--- QEMU stderr"; head -c 3000 "$dir/qemu.out"
	echo "--- console"; tail -n 60 "$dir/console.log"
	echo "--- wire"; tail -n 20 "$dir/wire.log"
	exit 1
fi
echo "pci: all checks passed"
