#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
#
# /init of the virtio-pci suite's guest (tests/virtio_pci/run.sh builds the initramfs around
# it). Binds the virtio-net-pci function to vfio-pci, then on that one device, in one boot:
#   1. vpci_guest: tide's virtio driver over the PCI transport against the host's wire
#   2. the port conformance row virtio_pci (tests/test_port.c), the wire echoing
#   3. tide-fwd io: the wire sends COUNT frames per size, tide-fwd sends them back; then
#      tide-fwd sleeping on the Rx interrupt
#   4. dpdk-testpmd io (net_virtio): the same traffic, the reference
# or, with pciphases=mq (the suite virtio_pci_mq), vpci_guest on the two-pair device alone.
# Results are "PCITEST ..." lines on the console; the host checks them.
export PATH=/bin:/sbin:/usr/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tmpfs run /run
mkdir -p /tmp
mount -t tmpfs tmp /tmp
mkdir -p /dev/hugepages
mount -t hugetlbfs hugetlbfs /dev/hugepages
COUNT=1000
PHASES=main,tide,dpdk
for a in $(cat /proc/cmdline); do
	case $a in
	pcicount=*) COUNT=${a#pcicount=} ;;
	pciphases=*) PHASES=${a#pciphases=} ;;
	pciverbose=*) PCIVERBOSE=1 ;;
	esac
done
phase() { case ",$PHASES," in *,$1,*) return 0 ;; esac; return 1; }
for m in irqbypass vfio_virqfd vfio vfio_iommu_type1 vfio-pci-core vfio-pci; do
	[ -f /lib/modules/$m.ko ] && { insmod /lib/modules/$m.ko || echo "PCITEST insmod FAIL $m"; }
done
# The device at 00:05.0, when there is one, is the two-pair device (run.sh: a two-queue tap).
BDF=""
MQBDF=""
for d in /sys/bus/pci/devices/*; do
	[ "$(cat $d/vendor):$(cat $d/device)" = "0x1af4:0x1041" ] || continue
	echo vfio-pci >$d/driver_override
	echo ${d##*/} >/sys/bus/pci/drivers_probe
	if [ "${d##*/}" = 0000:00:05.0 ]; then MQBDF=${d##*/}; else BDF=${d##*/}; fi
done
drv=$(readlink /sys/bus/pci/devices/$BDF/driver)
grp=$(readlink /sys/bus/pci/devices/$BDF/iommu_group)
echo "PCITEST bind $([ "${drv##*/}" = vfio-pci ] && echo ok || echo FAIL) $BDF driver=${drv##*/} group=${grp##*/}"

exec 3<>/dev/ttyS1
stty -F /dev/ttyS1 raw -echo
ask() { # one command to the wire, its reply on stdout
	echo "$*" >&3
	read -r reply <&3
	echo "$reply" | tr -d '\r'
}

phase main && vpci_guest $BDF /dev/ttyS1 $COUNT
if phase mq; then
	if [ -n "$MQBDF" ]; then
		vpci_guest $BDF /dev/ttyS1 $COUNT $MQBDF
	else
		echo "PCITEST mq_pairs FAIL no device at 00:05.0"
	fi
fi

if phase main; then
	ask "REFLECT on" >/dev/null
	TIDE_TEST_PCI_BDF=$BDF test_port conformance virtio_pci >/run/conf.log 2>&1
	rc=$?
	ask "REFLECT off" >/dev/null
	echo "PCITEST port_conformance $([ $rc = 0 ] && echo ok || echo FAIL) rc=$rc"
	[ $rc = 0 ] || tail -n 20 /run/conf.log | sed 's/^/conformance: /'
fi

# Wait until a forwarder's log ($1) shows it forwarding ($2), then a second for the link.
ready() {
	for _ in $(seq 300); do grep -aq "$2" $1 && break; sleep 0.1; done
	sleep 1
}

# The wire keeps at most WINDOW frames in flight: the forwarders' Tx rings hold 256 (the
# device's queue size), and QEMU, blocked on a wire the host has not read yet, can hold
# more received frames than that; a forwarder drops (and counts) what its Tx ring refuses.
WINDOW=128
echo_runs() { # NAME TAGBASE
	t=$2
	for size in 60 1514 8996; do
		r=$(ask "ECHO $t $COUNT $size 30000 $WINDOW")
		echo "PCITEST echo_$1_$size $r"
		t=$((t + 1))
	done
}

if phase tide; then
	tide-fwd -p pci:$BDF -l 0 --rxd 256 --txd 256 --mbuf-size 2048 --stats-period 0 \
		>/run/fwd.log 2>&1 &
	fwd=$!
	ready /run/fwd.log "Ctrl-C stops"
	echo_runs tide 21
	kill -INT $fwd
	wait $fwd
	echo "PCITEST fwd_exit rc=$?"
	tail -n 25 /run/fwd.log | sed 's/^/fwd: /'
fi

# tide-fwd sleeping on the Rx interrupt between bursts of traffic; the driver by name.
if phase tide; then
	tide-fwd -p virtio:pci=$BDF -l 0 --rx-mode interrupt --stats-period 0 \
		>/run/fwdi.log 2>&1 &
	fwd=$!
	ready /run/fwdi.log "Ctrl-C stops"
	r1=$(ask "ECHO 26 1000 60 20000 $WINDOW")
	sleep 1
	r2=$(ask "ECHO 27 1000 1514 20000 $WINDOW")
	kill -INT $fwd
	wait $fwd
	rc=$?
	ok=FAIL
	[ "$rc" = 0 ] && [ "${r1#* }" = "26 sent=1000 back=1000 bad=0 order=0" ] &&
		[ "${r2#* }" = "27 sent=1000 back=1000 bad=0 order=0" ] && ok=ok
	echo "PCITEST fwd_interrupt $ok rc=$rc: $r1; $r2"
	[ $ok = ok ] || tail -n 12 /run/fwdi.log | sed 's/^/fwd: /'
fi

if ! phase dpdk; then
	:
elif command -v dpdk-testpmd >/dev/null; then
	dpdk-testpmd --lcores 0@0,1@0 -a $BDF --file-prefix g --huge-dir /dev/hugepages -- \
		--forward-mode=io --port-topology=loop --nb-cores=1 --total-num-mbufs=8192 \
		--rxd=256 --txd=256 --mbuf-size=2048 --max-pkt-len=9100 --enable-scatter \
		--stats-period 1 </dev/null >/run/tp.log 2>&1 &
	tp=$!
	ready /run/tp.log "packet forwarding - ports="
	echo_runs dpdk 31
	kill -INT $tp
	wait $tp
	echo "PCITEST testpmd_exit rc=$?"
	grep -a -A3 "Forward statistics for port 0" /run/tp.log | tail -3 | sed 's/^/testpmd: /'
	grep -aiE "error|fail|cause|warn" /run/tp.log | head -5 | sed 's/^/testpmd: /'
	[ -n "${PCIVERBOSE:-}" ] && tail -n 40 /run/tp.log | sed 's/^/testpmd: /'
else
	echo "PCITEST testpmd FAIL dpdk-testpmd not in the initramfs"
fi

ask "FAULTS" | sed 's/^/PCITEST iommu_faults /'
echo BYE >&3
echo "PCITEST guest-done"
poweroff -f
