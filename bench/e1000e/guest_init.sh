#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
#
# /init of the e1000e instruction-count guest (bench/e1000e/run builds the initramfs around
# it). Binds the e1000e to vfio-pci and, on that one device, runs each forwarder under
# callgrind with collection only inside the burst functions:
#   tide-fwd io:   e1000e_rx_burst, e1000e_tx_burst (the driver's; inclusive: engine, pool)
#   dpdk-testpmd io (net_e1000_em): bench_em_rx, bench_em_tx (bench/e1000e/em_count.c
#                  around the PMD's functions; inclusive: its mempool calls)
# A measured run: the forwarder starts, is stopped (SIGSTOP) once it polls, the wire sends
# COUNT frames that the device writes into the Rx ring while it is stopped, it is resumed,
# and it forwards them back in full bursts. The polls that found nothing (before the stop,
# and DPDK's after the last frame) are counted and their cost taken out by the host (an idle
# run gives the cost of one). Output: "E1K ..." lines and the callgrind files, gzip +
# base64 between "E1K-FILE NAME" and "E1K-END" lines.
. /lib/guest-init.sh # tests/guest/init.sh
guest_mounts hugepages
N=1280
VARIANTS=""
DPDK=1
DPDKMEM=huge
for a in $(cat /proc/cmdline); do
	case $a in
	e1kn=*) N=${a#e1kn=} ;;
	e1kvariants=*) VARIANTS=$(echo ${a#e1kvariants=} | tr ';' ' ') ;;
	e1kdpdk=*) DPDK=${a#e1kdpdk=} ;;
	e1kdpdkmem=*) DPDKMEM=${a#e1kdpdkmem=} ;;
	esac
done
for m in irqbypass vfio_virqfd vfio vfio_iommu_type1 vfio-pci-core vfio-pci; do
	[ -f /lib/modules/$m.ko ] && insmod /lib/modules/$m.ko
done
guest_vfio_bind 0x8086:0x10d3
drv=$(readlink /sys/bus/pci/devices/$BDF/driver)
echo "E1K bind ${drv##*/} $BDF"
guest_wire /dev/ttyS1
emit() { # NAME FILE
	echo "E1K-FILE $1"
	gzip -c "$2" | base64
	echo "E1K-END"
}
ready() { # LOG TEXT: wait until the forwarder polls, then a second for the link
	for _ in $(seq 1800); do grep -aq "$2" $1 && break; sleep 0.1; done
	sleep 1
}
TAG=1
CG="valgrind --tool=callgrind --callgrind-out-file=/run/cg.out"

# One run: NAME COUNT, then the forwarder's command. COUNT 0: idle (no frames, 5 s).
measure() {
	name=$1 count=$2 r=""
	shift 2
	rm -f /run/cg.out /run/fwd.json
	"$@" >/run/run.log 2>&1 &
	pid=$!
	case "$*" in *tide-fwd*) rdy="Ctrl-C stops" ;; *) rdy="packet forwarding - ports=" ;; esac
	ready /run/run.log "$rdy"
	if ! kill -0 $pid 2>/dev/null; then
		echo "E1K $name FAIL the forwarder exited"
		tail -n 15 /run/run.log | sed 's/^/E1K-LOG /'
		return
	fi
	# Where the forwarder's memory is: 2 MiB pages in use (tide: a memfd; DPDK: files).
	echo "E1K-LOG $name: hugepages in use $(awk '/HugePages_Total/ {t=$2} /HugePages_Free/ {f=$2} END {print t-f " of " t}' /proc/meminfo), files in /dev/hugepages $(ls /dev/hugepages | wc -l)"
	if [ "$count" = 0 ]; then
		sleep 5
		kill -INT $pid
		back="idle"
	else
		kill -STOP $pid
		r=$(ask "RX $TAG $count 60")
		sleep 2 # the last frames of the socket's queue into the ring
		kill -CONT $pid
		back=$(ask "WAIT $TAG $count 1200000")
		TAG=$((TAG % 250 + 1))
		case "$*" in *tide-fwd*) ;; *) sleep 1; kill -INT $pid ;; esac
	fi
	wait $pid
	rc=$?
	echo "E1K $name count=$count rc=$rc sent: $r back: $back"
	grep -a "em_count:" /run/run.log | sed "s|^|E1K-LOG $name: |"
	grep -a "mem: \|Collected\|EAL: .*[Hh]uge\|EAL: .*memory\|txfree\|scatter" /run/run.log | sed "s|^|E1K-LOG $name: |" | head -12
	[ $rc = 0 ] || tail -n 15 /run/run.log | sed "s|^|E1K-LOG $name: |"
	[ -f /run/cg.out ] && emit "$name.cg" /run/cg.out
	[ -f /run/fwd.json ] && emit "$name.json" /run/fwd.json
	rm -rf /dev/hugepages/e1k* /run/dpdk
}

TIDE="env TIDE_LOG_LEVEL=debug $CG --toggle-collect=e1000e_rx_burst --toggle-collect=e1000e_tx_burst tide-fwd -p pci:$BDF -l 0 --rxd 4096 --txd 256 --stats-period 0 --json /run/fwd.json"
for v in $VARIANTS; do
	vname=${v%%:*}
	vargs=$(echo ${v#*:} | tr ',' ' ')
	[ "$vname" = idle ] && { measure tide-idle 0 $TIDE; continue; }
	measure "tide-$vname-n1" $N $TIDE -n $N $vargs
	measure "tide-$vname-n2" $((2 * N)) $TIDE -n $((2 * N)) $vargs
done

if [ "$DPDK" = 1 ] && command -v dpdk-testpmd >/dev/null; then
	mem="--huge-dir /dev/hugepages"
	[ "$DPDKMEM" = nohuge ] && mem="--no-huge -m 256"
	TP="env LD_PRELOAD=/usr/lib/em_count.so $CG --toggle-collect=bench_em_rx --toggle-collect=bench_em_tx dpdk-testpmd --lcores 0@0,1@0 -a $BDF --file-prefix e1k $mem -- --forward-mode=io --port-topology=loop --nb-cores=1 --total-num-mbufs=16384 --rxd=4096 --txd=256 --stats-period 1"
	measure dpdk-idle 0 $TP
	measure dpdk-n1 $N $TP
	measure dpdk-n2 $((2 * N)) $TP
	# 2048-byte mbufs (the PCI suite's): 1920 bytes of room, so the PMD programs 1024-byte
	# buffers and picks its scattered Rx function (em_rxtx.c eth_em_rx_init).
	measure dpdk-mbuf2048-idle 0 $TP --mbuf-size=2048
	measure dpdk-mbuf2048-n1 $N $TP --mbuf-size=2048
	measure dpdk-mbuf2048-n2 $((2 * N)) $TP --mbuf-size=2048
fi
echo BYE >&3
echo "E1K guest-done"
poweroff -f
