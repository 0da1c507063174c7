#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
#
# /init of the vhost-kernel suite's guest (tests/vhost_kernel/run.sh builds the initramfs
# around it): loads tun, tap (vhost_net needs it) and vhost_net, runs vkern_test, then the
# port conformance row on a reflecting tap (vkphase=main), or DPDK's virtio-user on
# vhost-net alone (vkphase=dpdk), and powers off. Results are "VKTEST ..." lines on the
# console for the host to check.
. /lib/guest-init.sh
guest_mounts
COUNT=500
PINGS=20
PHASE=main
for a in $(cat /proc/cmdline); do
	case $a in
	vkcount=*) COUNT=${a#vkcount=} ;;
	vkpings=*) PINGS=${a#vkpings=} ;;
	vkphase=*) PHASE=${a#vkphase=} ;;
	esac
done
ok=ok
for m in tun tap vhost_iotlb vhost vhost_net sch_ingress cls_matchall act_mirred; do
	[ -f /lib/modules/$m.ko ] && { insmod /lib/modules/$m.ko || ok="FAIL $m"; }
done
echo "VKTEST insmod $ok $(ls /dev/vhost-net /dev/net/tun 2>&1 | tr '\n' ' ')"
ip link set lo up
if [ $PHASE = main ]; then
	TIDE_LOG_LEVEL=info vkern_test $COUNT $PINGS 2>/run/vkern.log
	rc=$?
	echo "VKTEST exit $([ $rc = 0 ] && echo ok || echo FAIL) rc=$rc"
	sed 's/^/vkern: /' /run/vkern.log | tail -n 40

	# The port conformance row (tests/test_port.c) on a tap that sends every frame back: what
	# tide sends enters the tap's ingress and leaves again by its egress, to tide.
	if iproute2-ip tuntap add dev tvkc mode tap vnet_hdr 2>>/run/tc.log &&
		echo 1 >/proc/sys/net/ipv6/conf/tvkc/disable_ipv6 &&
		iproute2-tc qdisc add dev tvkc ingress 2>>/run/tc.log &&
		iproute2-tc filter add dev tvkc parent ffff: matchall action mirred egress redirect dev tvkc 2>>/run/tc.log; then
		TIDE_TEST_VKERN_TAP=1 test_port conformance virtio_kernel >/run/conf.log 2>&1
		rc=$?
		iproute2-ip tuntap del dev tvkc mode tap
		echo "VKTEST port_conformance $([ $rc = 0 ] && echo ok || echo FAIL) rc=$rc"
		[ $rc = 0 ] || tail -n 20 /run/conf.log | sed 's/^/conformance: /'
	else
		echo "VKTEST port_conformance FAIL cannot make the reflecting tap (ip tuntap, tc): $(head -c 300 /run/tc.log)"
	fi
fi

# The reference: DPDK's virtio-user on the same vhost-net (its own tap, tvkd), testpmd
# answering ARP and echo requests (icmpecho); the same busybox ping as tide's.
if [ $PHASE != dpdk ]; then
	:
elif command -v dpdk-testpmd >/dev/null; then
	mkdir -p /dev/hugepages
	mount -t hugetlbfs hugetlbfs /dev/hugepages
	dpdk-testpmd --no-pci --lcores 0@0,1@0 --file-prefix vk --huge-dir /dev/hugepages \
		--vdev=net_virtio_user0,path=/dev/vhost-net,iface=tvkd,queues=1,queue_size=256 -- \
		--forward-mode=icmpecho --nb-cores=1 --total-num-mbufs=4096 --stats-period 1 \
		</dev/null >/run/tp.log 2>&1 &
	tp=$!
	for _ in $(seq 300); do grep -aq "packet forwarding - ports=" /run/tp.log && break; sleep 0.1; done
	echo 1 >/proc/sys/net/ipv6/conf/tvkd/disable_ipv6
	ip addr add 10.78.0.1/24 dev tvkd
	ip link set tvkd up
	for s in 64:56 1400:1372; do # as vkern_test's ping_64 and ping_1400
		got=$(ping -A -q -W 2 -c $PINGS -s ${s#*:} 10.78.0.3 2>&1 |
			sed -n 's/.* \([0-9]*\) packets received.*/\1/p')
		echo "VKTEST dpdk_ping_${s%:*} $([ "$got" = "$PINGS" ] && echo ok || echo FAIL) $PINGS packets transmitted, ${got:-no} packets received"
	done
	kill -INT $tp
	wait $tp
	echo "VKTEST dpdk_exit $([ $? = 0 ] && echo ok || echo FAIL)"
	grep -aiE "error|fail|cause" /run/tp.log | head -5 | sed 's/^/testpmd: /'
else
	echo "VKTEST dpdk FAIL dpdk-testpmd not in the initramfs"
fi
poweroff -f
