#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
#
# /init of the vhost-kernel suite's guest (tests/vhost_kernel/run.sh builds the initramfs
# around it): loads tun, tap (vhost_net needs it) and vhost_net, runs vkern_test, prints "VKTEST ..." lines on the
# console for the host to check, and powers off.
export PATH=/bin:/sbin:/usr/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tmpfs run /run
mkdir -p /tmp
mount -t tmpfs tmp /tmp
COUNT=1000
PINGS=50
for a in $(cat /proc/cmdline); do
	case $a in
	vkcount=*) COUNT=${a#vkcount=} ;;
	vkpings=*) PINGS=${a#vkpings=} ;;
	esac
done
ok=ok
for m in tun tap vhost_iotlb vhost vhost_net; do
	[ -f /lib/modules/$m.ko ] && { insmod /lib/modules/$m.ko || ok="FAIL $m"; }
done
echo "VKTEST insmod $ok $(ls /dev/vhost-net /dev/net/tun 2>&1 | tr '\n' ' ')"
ip link set lo up
TIDE_LOG_LEVEL=info vkern_test $COUNT $PINGS 2>/run/vkern.log
rc=$?
echo "VKTEST exit $([ $rc = 0 ] && echo ok || echo FAIL) rc=$rc"
sed 's/^/vkern: /' /run/vkern.log | tail -n 40
poweroff -f
