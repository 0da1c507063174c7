# SPDX-License-Identifier: BSD-3-Clause
#
# Shared by the QEMU guest tests (test_vhost_qemu.sh, test_vhost_qemu_tcp.sh); sourced.
# Needs skip() (exit 77 with a reason) from the test.
#
#   vq_kernel CACHE_DIR      the Debian cloud kernel (apt-get download + dpkg -x, cached in
#                            CACHE_DIR): sets $kernel (vmlinuz) and $kmod (its modules)
#   vq_initramfs DIR TOOL..  $DIR/irfs: busybox (static), the virtio-net modules, each TOOL
#                            (a C source, built static into /bin under its base name);
#                            the caller writes $DIR/irfs/init, then vq_pack DIR makes
#                            $DIR/initrd.gz
#   VQ_INIT_MODULES          the /init lines that load the modules and wait for eth1

vq_kernel() {
	local kdir=$1/vhost-guest-kernel pkg
	if ! ls "$kdir"/root/boot/vmlinuz-* >/dev/null 2>&1; then
		mkdir -p "$kdir"
		pkg=$(apt-cache depends linux-image-cloud-amd64 2>/dev/null | awk '/Depends: linux-image-/ {print $2; exit}')
		[ -n "$pkg" ] || skip "no linux-image-cloud-amd64 in the apt lists (apt-get update?)"
		(cd "$kdir" && apt-get download -q "$pkg" >/dev/null 2>&1) || skip "cannot download $pkg"
		dpkg -x "$kdir"/"$pkg"_*.deb "$kdir/root" || skip "cannot unpack $pkg"
		rm -f "$kdir"/*.deb
	fi
	kernel=$(ls "$kdir"/root/boot/vmlinuz-* | head -1)
	kmod=$(ls -d "$kdir"/root/lib/modules/* | head -1)
}

vq_initramfs() {
	local d=$1 irfs=$1/irfs m f t
	shift
	mkdir -p "$irfs"/bin "$irfs"/proc "$irfs"/sys "$irfs"/dev "$irfs"/lib/modules "$irfs"/tmp
	cp "$(command -v busybox)" "$irfs/bin/busybox"
	file -L "$irfs/bin/busybox" 2>/dev/null | grep -q dynamic && skip "busybox is not static (busybox-static)"
	for a in $(busybox --list); do [ -e "$irfs/bin/$a" ] || ln -s busybox "$irfs/bin/$a"; done
	for t in "$@"; do
		${CC:-cc} -O2 -static -o "$irfs/bin/$(basename "$t" .c)" "$t" 2>"$d/cc.log" ||
			skip "cannot build a static guest tool: $(head -1 "$d/cc.log")"
	done
	for m in net/core/failover drivers/net/net_failover drivers/virtio/virtio_ring \
		drivers/virtio/virtio drivers/virtio/virtio_pci_modern_dev \
		drivers/virtio/virtio_pci_legacy_dev drivers/virtio/virtio_pci drivers/net/virtio_net; do
		f=$(ls "$kmod/kernel/$m.ko"* 2>/dev/null | head -1)
		[ -n "$f" ] || continue # built into this kernel
		case $f in
		*.xz) xz -dc "$f" >"$irfs/lib/modules/$(basename "$m").ko" ;;
		*) cp "$f" "$irfs/lib/modules/" ;;
		esac
	done
}

vq_pack() {
	chmod +x "$1/irfs/init"
	(cd "$1/irfs" && find . | busybox cpio -o -H newc 2>/dev/null | gzip -1 >"$1/initrd.gz")
}

VQ_INIT_MODULES='export PATH=/bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
for m in failover net_failover virtio_ring virtio virtio_pci_modern_dev virtio_pci_legacy_dev virtio_pci virtio_net; do
	[ -e /lib/modules/$m.ko ] && insmod /lib/modules/$m.ko
done
i=0; while [ ! -e /sys/class/net/eth1 ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done
# The NICs by their MAC addresses, not by probe order.
nic() { for d in /sys/class/net/eth*; do [ "$(cat $d/address)" = $1 ] && echo ${d##*/}; done; }'
