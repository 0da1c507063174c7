#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# A real Linux guest on tide's vhost-user backend (run by tests/afxdp/netns-env, which made
# a veth pair, one end here, one in a namespace, and removes them):
#
#   guest virtio_net --vhost-user--> tide-fwd io <--AF_XDP--> veth --> namespace 10.0.0.1
#   guest virtio_net (2nd NIC) --vhost-user--> tide-fwd io, the port to itself
#
# QEMU runs with the software CPU (-accel tcg; /dev/kvm here is PVM), guest memory from a
# shared memfd, the Debian cloud kernel and a busybox initramfs (tests/vhost_qemu_lib.sh,
# over tests/guest/lib.sh). The guest brings its link up, pings
# 10.0.0.1 through tide-fwd, sends COUNT UDP datagrams that the namespace must receive
# intact, and receives COUNT datagrams sent from the namespace, intact. tide-fwd must end
# with every buffer back.
#
# MTU: both NICs have host_mtu=9000; the second also x-mtu-bypass-backend=off, so that QEMU
# shows the guest the MTU only because tide offers VIRTIO_NET_F_MTU. Both guest interfaces
# must have MTU 9000, tide-fwd must report 9000 for both vhost ports at link up, and
# 8000-byte frames sent on the second NIC must come back intact (tide's Rx and Tx of a
# frame above one buffer; the first NIC's path ends in AF_XDP, whose frames are smaller).
#
# Exit 77 (skip) when QEMU, busybox, a static libc or the kernel cannot be had.
#
# usage: test_vhost_qemu.sh TIDE_FWD CACHE_DIR GUEST_TOOL_SOURCE LIB (tests/vhost_qemu_lib.sh)
#   VHOST_QEMU_PACKED=1: the guest's NIC with packed virtqueues (virtio-net-pci packed=on);
#   the guest must then report VIRTIO_F_RING_PACKED (feature bit 34) negotiated. Not in
#   `make test` (a second guest run would take about 2 minutes more).
set -u
fwd=$1 cache=$2 tool_src=$3 lib=$4
count=${VHOST_QEMU_COUNT:-2000}
frame_size=8000 frame_count=20
packed=${VHOST_QEMU_PACKED:-0}
. "$lib"
vq_setup "$fwd"

# ---- the guest kernel (cached) and the initramfs: busybox, the UDP tool, the modules ----
cat >"$dir/init" <<EOF
#!/bin/sh
. /lib/guest-init.sh; . /lib/vq-init.sh
vq_init
main=\$(nic 52:54:00:00:00:02) big=\$(nic 52:54:00:00:00:03)
echo 8388608 >/proc/sys/net/core/rmem_max
echo 1 >/proc/sys/net/ipv6/conf/\$big/disable_ipv6 2>/dev/null # nothing but the test's frames there
ip link set lo up; ip link set \$main up; ip addr add 10.0.0.2/24 dev \$main; ip link set \$big up
i=0; until grep -q 1 /sys/class/net/\$main/carrier 2>/dev/null || [ \$i -ge 100 ]; do sleep 0.1; i=\$((i+1)); done
echo "VHT LINK carrier=\$(cat /sys/class/net/\$main/carrier)"
echo "VHT FEATURES \$(cat /sys/class/net/\$main/device/features)"
echo "VHT MTU main=\$(cat /sys/class/net/\$main/mtu) big=\$(cat /sys/class/net/\$big/mtu)"
vhost_guest_udp frame \$big $frame_size $frame_count 10
echo "VHT PING \$(ping -c 3 -W 5 10.0.0.1 | grep 'packets transmitted')"
vhost_guest_udp send 10.0.0.1 5000 $count 200
vhost_guest_udp recv 5001 $count 40
echo "VHT UDP-MIB \$(grep Udp: /proc/net/snmp | tail -1)"
echo "VHT DONE"
poweroff -f
EOF
vq_guest "$cache" "$tool_src" "$dir/init"

# ---- the namespace end ----
in_ns ip addr add 10.0.0.1/24 dev "$TDX_A_PEER"
# Local sockets leave the UDP checksum to the device (veth: never filled in); AF_XDP hands
# the frame on as it is, so the guest would drop it. Checksums in software here.
in_ns ethtool -K "$TDX_A_PEER" tx off >/dev/null 2>&1 || skip "cannot turn off veth Tx checksum offload"
in_ns python3 - "$count" >"$dir/ns-rx.out" 2>&1 <<'PY' &
import socket, struct, sys, time
n = int(sys.argv[1])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
s.bind(("10.0.0.1", 5000))
s.settimeout(0.5)
got, bad, end = 0, 0, time.time() + 110
print("ready", flush=True)
while got < n and time.time() < end:
    try:
        d = s.recv(4096)
    except socket.timeout:
        continue
    seq = struct.unpack("!I", d[:4])[0]
    want = d[:4] + bytes((seq * 7 + i) & 0xff for i in range(4, len(d)))
    bad += d != want
    got += 1
print(f"ns got={got} bad={bad}", flush=True)
PY
pids+=($!)
wait_for 10 grep -q ready "$dir/ns-rx.out" || { echo "FAIL: namespace receiver"; exit 1; }

# ---- tide-fwd between the guest and the veth ----
sock=$dir/vhost.sock sock2=$dir/vhost2.sock
TIDE_LOG_LEVEL=info "$fwd" --port "vhost:socket=$sock,role=server" \
	--port "afxdp:dev=$TDX_A,mode=generic" --port "vhost:socket=$sock2,role=server" \
	--fwd io --duration 150 --stats-period 0 \
	--json "$dir/fwd.json" >"$dir/fwd.log" 2>&1 &
fwdpid=$!
pids+=($fwdpid)
wait_for 10 test -S "$sock" -a -S "$sock2" || { echo "FAIL: no vhost socket"; cat "$dir/fwd.log"; exit 1; }

# ---- the guest ----
vq_qemu 140 -chardev "socket,id=c0,path=$sock" -netdev vhost-user,id=n0,chardev=c0 \
	-device "virtio-net-pci,netdev=n0,mac=52:54:00:00:00:02,vectors=0,host_mtu=9000$([ "$packed" = 1 ] && echo ,packed=on)" \
	-chardev "socket,id=c1,path=$sock2" -netdev vhost-user,id=n1,chardev=c1 \
	-device "virtio-net-pci,netdev=n1,mac=52:54:00:00:00:03,vectors=0,host_mtu=9000,x-mtu-bypass-backend=off"

# When the guest listens, send it COUNT datagrams from the namespace.
if wait_for 120 grep -aq "VHT RECV-READY" "$dir/console.log"; then
	in_ns python3 - "$count" <<'PY'
import socket, struct, sys
# A window of 64 datagrams in flight, opened by the guest's acknowledgements (its count so
# far, every 16 datagrams): the guest runs on a software CPU and its receive vring (256
# buffers) must never fill, however slowly it runs; a window stalled for 20 s ends the
# stream and the count check below fails.
n, win = int(sys.argv[1]), 64
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(20)
acked, seq = 0, 0
try:
    while acked < n:
        while seq < n and seq - acked < win:
            d = struct.pack("!I", seq) + bytes((seq * 7 + i) & 0xff for i in range(4, 200))
            s.sendto(d, ("10.0.0.2", 5001))
            seq += 1
        acked = max(acked, struct.unpack("!I", s.recv(16)[:4])[0])
except socket.timeout:
    print("namespace sender: no acknowledgement for 20 s at %d sent, %d acknowledged"
          % (seq, acked), file=sys.stderr)
PY
fi
wait "$qpid"
qrc=$?
wait_for 20 grep -q "ns got=" "$dir/ns-rx.out"
kill -INT "$fwdpid"
wait "$fwdpid"
frc=$?

grep -a "^VHT" "$dir/console.log"
cat "$dir/ns-rx.out" | grep got
grep -E "outstanding|^[012] |link up" "$dir/fwd.log"
fail=0
grep -aq "VHT LINK carrier=1" "$dir/console.log" || { echo "FAIL: guest link not up"; fail=1; }
# The guest's feature string: one character per bit, bit 34 is VIRTIO_F_RING_PACKED.
gfeat=$(grep -a "^VHT FEATURES" "$dir/console.log" | awk '{print $3}')
if [ "$packed" = 1 ]; then
	[ "${gfeat:34:1}" = 1 ] || { echo "FAIL: packed virtqueues not negotiated (features $gfeat)"; fail=1; }
else
	[ "${gfeat:34:1}" != 1 ] || { echo "FAIL: packed virtqueues negotiated without packed=on"; fail=1; }
fi
grep -aq "VHT MTU main=9000 big=9000" "$dir/console.log" ||
	{ echo "FAIL: guest MTU not 9000 on both NICs (host_mtu=9000)"; fail=1; }
for p in "0 (vhost0)" "2 (vhost1)"; do
	grep -q "port $p: link up, mtu 9000" "$dir/fwd.log" ||
		{ echo "FAIL: tide-fwd port $p did not report mtu 9000 at link up"; fail=1; }
done
grep -aq "VHT FRAME size=$frame_size sent=$frame_count got=$frame_count bad=0" "$dir/console.log" ||
	{ echo "FAIL: $frame_size-byte frames through the second NIC"; fail=1; }
grep -aq "VHT PING 3 packets transmitted, 3 packets received" "$dir/console.log" ||
	{ echo "FAIL: ping through tide-fwd"; fail=1; }
grep -aq "VHT SEND sent=$count" "$dir/console.log" || { echo "FAIL: guest send"; fail=1; }
grep -q "ns got=$count bad=0" "$dir/ns-rx.out" || { echo "FAIL: guest -> namespace stream"; fail=1; }
grep -aq "VHT RECV got=$count bad=0" "$dir/console.log" || { echo "FAIL: namespace -> guest stream"; fail=1; }
grep -q "buffers outstanding after stop: 0 " "$dir/fwd.log" || { echo "FAIL: tide-fwd buffers"; fail=1; }
[ "$frc" -eq 0 ] || { echo "FAIL: tide-fwd exit $frc"; fail=1; }
if [ $fail -ne 0 ]; then
	echo "--- qemu ($qrc)"; tail -5 "$dir/qemu.out"; echo "--- console"; tail -30 "$dir/console.log"
	echo "--- tide-fwd"; tail -30 "$dir/fwd.log"
fi
exit $fail
