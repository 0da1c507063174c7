# SPDX-License-Identifier: BSD-3-Clause
#
# The pieces the guests' /init scripts share, in the initramfs as /lib/guest-init.sh
# (tests/guest/lib.sh's guest_pack puts it there); busybox sh. Each /init keeps its own
# phases and result lines.
#
#   guest_mounts [hugepages]     PATH; /proc /sys /dev /run /tmp (and /dev/hugepages)
#   guest_insmod TAG MODULE...   /lib/modules/MODULE.ko that are there (the others are
#                                built in); "TAG insmod FAIL MODULE" when one does not load
#   guest_vfio_bind ID           every PCI function VENDOR:DEVICE (0x8086:0x10d3) to
#                                vfio-pci; their addresses in $BDFS, the last in $BDF
#   guest_wire TTY               the wire's serial line on fd 3, raw
#   ask CMD...                   one command to the wire, its reply on stdout
#   ready LOG TEXT               waits until LOG shows TEXT (30 s at most), then a second
#
# The PCI suites (tests/pci, tests/virtio_pci): the kernel arguments, the port conformance
# row, echo runs through tide-fwd and dpdk-testpmd, tide-fwd on the Rx interrupt;
# "PCITEST ..." lines. They read $BDF, $COUNT, $WINDOW (empty: the wire's default) and
# $PCIVERBOSE.
#   pci_cmdline PHASES           pcicount= (COUNT, default 1000), pciphases= (PHASES, default
#                                the argument), pciverbose=; phase NAME: 0 when NAME is in
#                                PHASES
#   pci_conformance ROW
#   pci_fwd SPEC RXD             tide-fwd io, COUNT frames per size: echo_tide_SIZE, fwd_exit
#   pci_fwd_interrupt SPEC [MS]  tide-fwd asleep between two bursts, each within MS
#                                (default 30000): fwd_interrupt
#   pci_testpmd RXD              dpdk-testpmd io, the same traffic: echo_dpdk_SIZE

guest_mounts() {
	export PATH=/bin:/sbin:/usr/bin
	mount -t proc proc /proc
	mount -t sysfs sys /sys
	mount -t devtmpfs dev /dev
	mount -t tmpfs run /run
	mkdir -p /tmp
	mount -t tmpfs tmp /tmp
	if [ "${1:-}" = hugepages ]; then
		mkdir -p /dev/hugepages
		mount -t hugetlbfs hugetlbfs /dev/hugepages
	fi
}

guest_insmod() {
	_tag=$1
	shift
	for _m in "$@"; do
		[ -f /lib/modules/$_m.ko ] && { insmod /lib/modules/$_m.ko || echo "$_tag insmod FAIL $_m"; }
	done
	return 0
}

guest_vfio_bind() {
	BDFS=""
	BDF=""
	for _d in /sys/bus/pci/devices/*; do
		[ "$(cat $_d/vendor):$(cat $_d/device)" = "$1" ] || continue
		echo vfio-pci >$_d/driver_override
		echo ${_d##*/} >/sys/bus/pci/drivers_probe
		BDFS="$BDFS ${_d##*/}"
		BDF=${_d##*/}
	done
}

guest_wire() {
	exec 3<>$1
	stty -F $1 raw -echo
}

ask() {
	echo "$*" >&3
	read -r reply <&3
	echo "$reply" | tr -d '\r'
}

ready() {
	for _ in $(seq 300); do grep -aq "$2" $1 && break; sleep 0.1; done
	sleep 1
}

# ---- the PCI suites ----

pci_cmdline() {
	COUNT=1000
	PHASES=$1
	for _a in $(cat /proc/cmdline); do
		case $_a in
		pcicount=*) COUNT=${_a#pcicount=} ;;
		pciphases=*) PHASES=${_a#pciphases=} ;;
		pciverbose=*) PCIVERBOSE=1 ;;
		esac
	done
}

phase() { case ",$PHASES," in *,$1,*) return 0 ;; esac; return 1; }

pci_conformance() { # ROW: the wire sends every frame back
	ask "REFLECT on" >/dev/null
	TIDE_TEST_PCI_BDF=$BDF test_port conformance $1 >/run/conf.log 2>&1
	_rc=$?
	ask "REFLECT off" >/dev/null
	echo "PCITEST port_conformance $([ $_rc = 0 ] && echo ok || echo FAIL) rc=$_rc"
	[ $_rc = 0 ] || tail -n 20 /run/conf.log | sed 's/^/conformance: /'
}

# COUNT frames of each size through a forwarder, tags TAGBASE on.
echo_runs() { # NAME TAGBASE
	_t=$2
	for _size in 60 1514 8996; do
		_r=$(ask "ECHO $_t $COUNT $_size 30000${WINDOW:+ $WINDOW}")
		echo "PCITEST echo_$1_$_size $_r"
		_t=$((_t + 1))
	done
}

pci_fwd() { # SPEC RXD
	tide-fwd -p $1 -l 0 --rxd $2 --txd $2 --mbuf-size 2048 --stats-period 0 >/run/fwd.log 2>&1 &
	_fwd=$!
	ready /run/fwd.log "Ctrl-C stops"
	echo_runs tide 21
	kill -INT $_fwd
	wait $_fwd
	echo "PCITEST fwd_exit rc=$?"
	tail -n 25 /run/fwd.log | sed 's/^/fwd: /'
}

pci_fwd_interrupt() { # SPEC [MS]: 1000 frames, a second of sleep, 1000 more
	_ms=${2:-30000}
	tide-fwd -p $1 -l 0 --rx-mode interrupt --stats-period 0 >/run/fwdi.log 2>&1 &
	_fwd=$!
	ready /run/fwdi.log "Ctrl-C stops"
	_r1=$(ask "ECHO 26 1000 60 $_ms${WINDOW:+ $WINDOW}")
	sleep 1
	_r2=$(ask "ECHO 27 1000 1514 $_ms${WINDOW:+ $WINDOW}")
	kill -INT $_fwd
	wait $_fwd
	_rc=$?
	_ok=FAIL
	[ "$_rc" = 0 ] && [ "${_r1#* }" = "26 sent=1000 back=1000 bad=0 order=0" ] &&
		[ "${_r2#* }" = "27 sent=1000 back=1000 bad=0 order=0" ] && _ok=ok
	echo "PCITEST fwd_interrupt $_ok rc=$_rc: $_r1; $_r2"
	[ $_ok = ok ] || tail -n 12 /run/fwdi.log | sed 's/^/fwd: /'
}

pci_testpmd() { # RXD
	if ! command -v dpdk-testpmd >/dev/null; then
		echo "PCITEST testpmd FAIL dpdk-testpmd not in the initramfs"
		return
	fi
	dpdk-testpmd --lcores 0@0,1@0 -a $BDF --file-prefix g --huge-dir /dev/hugepages -- \
		--forward-mode=io --port-topology=loop --nb-cores=1 --total-num-mbufs=8192 \
		--rxd=$1 --txd=$1 --mbuf-size=2048 --max-pkt-len=9100 --enable-scatter \
		--stats-period 1 </dev/null >/run/tp.log 2>&1 &
	_tp=$!
	ready /run/tp.log "packet forwarding - ports="
	echo_runs dpdk 31
	kill -INT $_tp
	wait $_tp
	echo "PCITEST testpmd_exit rc=$?"
	grep -a -A3 "Forward statistics for port 0" /run/tp.log | tail -3 | sed 's/^/testpmd: /'
	grep -aiE "error|fail|cause|warn" /run/tp.log | head -5 | sed 's/^/testpmd: /'
	[ -n "${PCIVERBOSE:-}" ] && tail -n 40 /run/tp.log | sed 's/^/testpmd: /'
	return 0
}
