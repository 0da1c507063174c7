#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# scripts/tide-devbind on a sysfs tree made here (TIDE_SYSFS): the listing, and the writes
# a bind and a give-back make (sysfs files here are plain files: the test reads what was
# written to them).
set -eu
tool=$1
root=$(mktemp -d "${TMPDIR:-/tmp}/tide-devbind-XXXXXX")
trap 'rm -rf "$root"' EXIT
p=$root/bus/pci
mkdir -p $p/devices $p/drivers/e1000e $p/drivers/vfio-pci $root/kernel/iommu_groups/7/devices \
	$root/class/net/eth1
dev() { # BDF VENDOR DEVICE CLASS DRIVER GROUP
	mkdir -p $p/devices/$1
	echo 0x$2 >$p/devices/$1/vendor
	echo 0x$3 >$p/devices/$1/device
	echo $4 >$p/devices/$1/class
	: >$p/devices/$1/driver_override
	[ -n "$5" ] && ln -s ../../drivers/$5 $p/devices/$1/driver
	[ -n "$6" ] && ln -s ../../../../kernel/iommu_groups/$6 $p/devices/$1/iommu_group
	[ -n "$6" ] && ln -s ../../../bus/pci/devices/$1 $root/kernel/iommu_groups/$6/devices/$1
	return 0
}
dev 0000:00:03.0 8086 10d3 0x020000 e1000e 7
dev 0000:00:04.0 8086 10d3 0x020000 vfio-pci ""
dev 0000:00:05.0 1af4 1041 0x020000 "" ""
dev 0000:00:06.0 8086 2922 0x010601 ahci 7
mkdir -p $p/devices/0000:00:03.0/net/eth1
echo 0x1003 >$root/class/net/eth1/flags # up
: >$p/drivers/e1000e/unbind
: >$p/drivers_probe
export TIDE_SYSFS=$root
out=$($tool --status)
echo "$out"
fail() { echo "FAIL: $*"; exit 1; }
echo "$out" | grep -q "0000:00:03.0 8086:10d3 drv=e1000e if=eth1 iommu_group=7 shared with 0000:00:06.0 tide: e1000e (pci:0000:00:03.0)" || fail "status of 00:03.0"
echo "$out" | grep -q "0000:00:05.0 1af4:1041 drv=- iommu_group=none tide: no driver" || fail "status of 00:05.0"
echo "$out" | grep -q "^  0000:00:06.0" && fail "a storage controller listed"
# An interface that is up is left alone without --force.
$tool --bind=vfio-pci 00:03.0 2>&1 | grep -q "interface eth1 is up" || fail "no refusal for eth1 up"
[ -s $p/drivers/e1000e/unbind ] && fail "unbound although up"
$tool --bind=vfio-pci --force 00:03.0 || true
[ "$(cat $p/drivers/e1000e/unbind)" = 0000:00:03.0 ] || fail "not unbound from e1000e"
[ "$(cat $p/devices/0000:00:03.0/driver_override)" = vfio-pci ] || fail "driver_override"
[ "$(cat $p/drivers_probe)" = 0000:00:03.0 ] || fail "not probed"
# No IOMMU group: refused with the fix.
$tool --bind=vfio-pci 0000:00:05.0 2>&1 | grep -q "intel_iommu=on" || fail "no IOMMU message"
$tool --bind=vfio-pci 0000:00:09.0 2>&1 | grep -q "no PCI device 0000:00:09.0" || fail "missing device"
$tool --bind=vfio-pci 0:0:3 2>&1 | grep -q "not a PCI address" || fail "bad address"
echo "tide-devbind: ok"
