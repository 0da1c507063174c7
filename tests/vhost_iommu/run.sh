#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# The vhost IOMMU suite: tide at both ends of a VM's NIC. On the host, tide-fwd serves the
# guest's virtio-net-pci device with a vhost port (macswap: every frame goes back to the
# guest); the device has iommu_platform=on behind the guest's emulated Intel IOMMU, so the
# vhost port translates every ring and buffer address through its device IOTLB (QEMU's
# updates and invalidations, our misses). In the guest, tide's virtio driver runs over its
# PCI transport through VFIO (tests/vhost_iommu/guest_init.sh, iotlb_guest.c). Guest memory
# is a shared memfd, as vhost-user needs.
#
# Passes when the guest sent COUNT frames per size and got every one back intact and in
# order, its pool was whole after, DPDK's net_virtio on the same device in the same boot
# (when dpdk-testpmd is installed) forwarded its one burst round the loop without a drop, tide-fwd on the host exited 0 (its pools whole, no Tx
# error) having negotiated VIRTIO_F_ACCESS_PLATFORM and sent IOTLB misses, and the IOMMU
# reported no fault (QEMU "vtd_" on stderr, "DMAR" faults in the guest). Exit 77 when QEMU
# or the guest kernel cannot be had.
#
# usage: run.sh IOTLB_GUEST TIDE_FWD CACHE_DIR [COUNT]
set -u
guest=$1 fwd=$2 cache=$3 count=${4:-${VIOTLB_COUNT:-500}}
. "$(dirname "$0")/../guest/lib.sh"
fail() { echo "FAIL: $*"; failed=1; }
guest_preflight
guest_kernel "$cache"
guest_tmpdir

guest_rootfs
guest_modules virt/lib/irqbypass drivers/vfio/vfio_virqfd drivers/vfio/vfio \
	drivers/vfio/vfio_iommu_type1 drivers/vfio/pci/vfio-pci-core drivers/vfio/pci/vfio-pci
guest_bin iotlb_guest "$guest"
guest_dpdk bus_pci mempool_ring net_virtio
guest_pack "$(dirname "$0")/guest_init.sh"

sock=$dir/vhost.sock
TIDE_LOG_LEVEL=debug "$fwd" --port "vhost:socket=$sock,role=server" --fwd macswap \
	--stats-period 0 --xstats >"$dir/fwd.log" 2>&1 &
fwdpid=$!
pids+=($fwdpid)
for _ in $(seq 50); do [ -S "$sock" ] && break; sleep 0.1; done
[ -S "$sock" ] || { echo "FAIL: no vhost socket"; cat "$dir/fwd.log"; exit 1; }
start=$SECONDS
[ -n "${VIOTLB_DEVOPTS:-}${VIOTLB_QEMU:-}" ] && echo "device options: ${VIOTLB_DEVOPTS:-}; QEMU options: ${VIOTLB_QEMU:-}"
guest_qemu 120 "hugepages=64 no_timer_check viotlbcount=$count" \
	-object memory-backend-memfd,id=mem,size=512M,share=on -numa node,memdev=mem \
	-chardev socket,id=c0,path="$sock" -netdev vhost-user,id=n0,chardev=c0 \
	-device virtio-net-pci,netdev=n0,mac=52:54:00:12:34:56,disable-legacy=on,iommu_platform=on,vectors=0${VIOTLB_DEVOPTS:-} ${VIOTLB_QEMU:-}
guest_wait
kill -INT $fwdpid
wait $fwdpid
frc=$?
echo "guest ran $((SECONDS - start)) s (QEMU exit $qrc, tide-fwd exit $frc), $count frames per size"
grep -a "VIOTLB" "$dir/console.log"

failed=0
[ $qrc -eq 0 ] || fail "QEMU exit status $qrc (124: the guest timed out)"
[ $frc -eq 0 ] || fail "tide-fwd exit status $frc (buffers not returned or Tx errors)"
for name in bind link warm_up pool; do
	grep -aq "^VIOTLB $name ok" "$dir/console.log" || fail "no 'VIOTLB $name ok'"
done
for size in 60 1514; do
	r=$(grep -a "^VIOTLB echo_$size " "$dir/console.log" | grep -o "sent=.*")
	want="sent=$count back=$count bad=0 order=0"
	[ "$r" = "$want" ] || fail "at $size bytes: '$r', expected '$want'"
done
grep -aq "^VIOTLB guest_exit rc=0" "$dir/console.log" || fail "iotlb_guest did not exit 0"
# DPDK's net_virtio, the reference: in the counted round the one burst of tx_first went
# round until testpmd stopped, so it sent exactly one burst (32) more than it received,
# and dropped nothing.
if grep -aq "^VIOTLB testpmd none" "$dir/console.log"; then
	echo "no dpdk-testpmd: DPDK's net_virtio not run as the reference"
else
	grep -aq "^VIOTLB testpmd_exit rc=0" "$dir/console.log" || fail "dpdk-testpmd did not exit 0"
	rxl=$(grep -a "^VIOTLB testpmd: *RX-packets" "$dir/console.log")
	txl=$(grep -a "^VIOTLB testpmd: *TX-packets" "$dir/console.log")
	rx=$(echo "$rxl" | sed -n 's/.*RX-packets: \([0-9]*\).*/\1/p')
	txp=$(echo "$txl" | sed -n 's/.*TX-packets: \([0-9]*\).*/\1/p')
	rxd=$(echo "$rxl" | sed -n 's/.*RX-dropped: \([0-9]*\).*/\1/p')
	txd=$(echo "$txl" | sed -n 's/.*TX-dropped: \([0-9]*\).*/\1/p')
	if [ -z "$rx" ] || [ -z "$txp" ] || [ "$rx" -eq 0 ] || [ $((txp - rx)) -ne 32 ] ||
		[ "${rxd:-x}" != 0 ] || [ "${txd:-x}" != 0 ]; then
		fail "dpdk-testpmd: '$rxl' / '$txl' (want TX = RX + 32, none dropped)"
	else
		echo "dpdk-testpmd (net_virtio): received $rx, sent $txp, none dropped"
	fi
fi
feats=$(grep -a "SET_FEATURES size" "$dir/fwd.log" | tail -1 | grep -o "0x[0-9a-f]*$")
if [ -z "$feats" ] || [ $(((feats >> 33) & 1)) -ne 1 ]; then
	fail "VIRTIO_F_ACCESS_PLATFORM not negotiated (features '$feats')"
fi
misses=$(grep -a "iotlb_misses" "$dir/fwd.log" | grep -o "[0-9]*$" | tail -1)
[ "${misses:-0}" -gt 0 ] || fail "no IOTLB miss counted on the host ('${misses:-}')"
vtd=$(grep -ac vtd_ "$dir/qemu.out")
dmar=$(grep -a "^VIOTLB dmar " "$dir/console.log" | grep -o "[0-9]*$")
[ "$vtd" = 0 ] || fail "$vtd vtd_ lines in QEMU's stderr"
[ "${dmar:-x}" = 0 ] || fail "'${dmar:-none}' DMAR fault lines in the guest"
echo "IOMMU faults: QEMU $vtd, guest DMAR ${dmar:-?}; host: IOTLB misses ${misses:-?}," \
	"updates $(grep -ac "IOTLB update 0x" "$dir/fwd.log")," \
	"invalidations $(grep -ac "IOTLB invalidate 0x" "$dir/fwd.log") ($(grep -ac "IOTLB invalidate 0x.*nothing held" "$dir/fwd.log") of ranges not held)"
grep -a "IOTLB update 0x\|IOTLB invalidate 0x" "$dir/fwd.log" | head -30 | sed "s/^/host: /"
if [ $failed -ne 0 ]; then
	rm -rf "$cache/last-failure" && mkdir -p "$cache/last-failure" &&
		cp "$dir/fwd.log" "$dir/console.log" "$dir/qemu.out" "$cache/last-failure/" &&
		echo "logs kept in $cache/last-failure"
	echo "--- QEMU stderr"; head -c 3000 "$dir/qemu.out"
	echo "--- console"; tail -n 40 "$dir/console.log"
	echo "--- tide-fwd"; grep -av "DEBUG" "$dir/fwd.log" | tail -n 30
	exit 1
fi
echo "vhost_iommu: all checks passed"
