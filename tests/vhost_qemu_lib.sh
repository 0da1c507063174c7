# SPDX-License-Identifier: BSD-3-Clause
#
# Shared by the guests on tide's vhost-user backend (test_vhost_qemu.sh,
# test_vhost_qemu_tcp.sh), run by tests/afxdp/netns-env; sourced. Built on tests/guest/lib.sh
# (the kernel, the initramfs, the clean-up of $dir and $pids at exit).
#
#   vq_setup TIDE_FWD        skips (exit 77) without QEMU, a static busybox, python3, the
#                            namespace or tide-fwd; then $dir, $pids and in_ns/wait_for
#   vq_guest CACHE TOOL INIT $dir/initrd.gz: busybox, the virtio-net modules, TOOL (a C
#                            source built static into /bin under its base name), INIT as
#                            /init; $kernel for QEMU
#   vq_qemu SECONDS ARGS...  QEMU in the background (pid in $qpid): software CPU, 256 MiB of
#                            shared guest memory (vhost-user needs it), console on
#                            $dir/console.log; ARGS add the NICs
#   in /init: `. /lib/guest-init.sh; . /lib/vq-init.sh`, then `vq_init` mounts, loads the
#   modules and waits for eth1, and `nic MAC` names the interface with that address (not
#   the probe order)

. "$(dirname "${BASH_SOURCE[0]}")/guest/lib.sh"

skip() { guest_skip "$@"; }

VQ_MODULES="net/core/failover drivers/net/net_failover drivers/virtio/virtio_ring
	drivers/virtio/virtio drivers/virtio/virtio_pci_modern_dev
	drivers/virtio/virtio_pci_legacy_dev drivers/virtio/virtio_pci drivers/net/virtio_net"

vq_setup() {
	guest_preflight
	command -v python3 >/dev/null || skip "python3 not installed"
	[ -n "${TDX_NS:-}" ] || skip "needs netns-env (root, veth)"
	"$1" --help 2>&1 | grep -q . || skip "no tide-fwd"
	guest_tmpdir
}

in_ns() { nsenter --net="/run/netns/$TDX_NS" "$@"; }

wait_for() {
	local t=$1 end
	shift
	end=$((SECONDS + t))
	until "$@"; do
		[ $SECONDS -ge $end ] && return 1
		sleep 0.1
	done
}

vq_guest() {
	local cache=$1 tool=$2 init=$3 m names=""
	guest_kernel "$cache"
	guest_rootfs
	guest_modules $VQ_MODULES
	${CC:-cc} -O2 -static -o "$dir/$(basename "$tool" .c)" "$tool" 2>"$dir/cc.log" ||
		skip "cannot build a static guest tool: $(head -1 "$dir/cc.log")"
	guest_bin "$(basename "$tool" .c)" "$dir/$(basename "$tool" .c)"
	for m in $VQ_MODULES; do names="$names ${m##*/}"; done
	cat >"$dir/irfs/lib/vq-init.sh" <<-EOF
	vq_init() {
		guest_mounts
		guest_insmod VHT$names
		i=0; while [ ! -e /sys/class/net/eth1 ] && [ \$i -lt 100 ]; do sleep 0.1; i=\$((i+1)); done
	}
	nic() { for d in /sys/class/net/eth*; do [ "\$(cat \$d/address)" = \$1 ] && echo \${d##*/}; done; }
	EOF
	guest_pack "$init"
}

vq_qemu() {
	local secs=$1
	shift
	timeout "$secs" qemu-system-x86_64 -accel tcg -cpu max -m 256 -smp 1 -display none -no-reboot \
		-monitor none -serial "file:$dir/console.log" \
		-object memory-backend-memfd,id=mem,size=256M,share=on -numa node,memdev=mem \
		"$@" -kernel "$kernel" -initrd "$dir/initrd.gz" \
		-append "console=ttyS0 quiet panic=-1" </dev/null >"$dir/qemu.out" 2>&1 &
	qpid=$!
	pids+=($qpid)
}
