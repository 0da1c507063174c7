#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# A real Linux guest's TCP through tide (run by tests/afxdp/netns-env, which made the
# namespace; this test adds a veth pair of its own there, which netns-env removes):
#
#   guest NIC 1 (offloads)     --vhost-user--> tide-fwd io <--AF_XDP--> veth A --> ns 10.0.1.1
#   guest NIC 2 (offloads=no)  --vhost-user--> tide-fwd io <--AF_XDP--> veth C --> ns 10.0.2.1
#
# One boot (QEMU, software CPU; the guest kernel and initramfs as test_vhost_qemu.sh makes
# them: tests/vhost_qemu_lib.sh). NIC 1 is on a vhost port with the default offloads=yes:
# the guest negotiates VIRTIO_NET_F_CSUM and HOST_TSO4 and sends TSO frames of up to 64 KiB
# with partial checksums; AF_XDP has no offloads, so tide-fwd cuts and fills them in
# software (its sw_gso count for the AF_XDP port must be above 0). NIC 2 is on a port with
# offloads=no: the guest negotiates none and does that work itself (sw_gso 0 there). On
# each NIC the guest sends MIB MiB over one TCP connection to a receiver in the namespace,
# and then receives MIB MiB from the namespace; the SHA-256 of what arrived must equal the
# SHA-256 of what was sent (the receiver in the namespace compares hashes; the guest's
# receiver checks every byte). tide-fwd must end with every buffer back.
#
# usage: test_vhost_qemu_tcp.sh TIDE_FWD CACHE_DIR GUEST_TOOL_SOURCE LIB
#   VHOST_QEMU_TCP_MIB: the stream size (default 32)
set -u
fwd=$1 cache=$2 tool_src=$3 lib=$4
mib=${VHOST_QEMU_TCP_MIB:-32}
. "$lib"
vq_setup "$fwd"

t_start=$SECONDS

# ---- a second single-queue veth pair (netns-env's pair B has two queues) ----
vc=tdxc$TDX_ID vcp=tdxC$TDX_ID
ip link add "$vc" type veth peer name "$vcp" netns "$TDX_NS" || skip "cannot create a veth pair"
sysctl -qw "net.ipv6.conf.$vc.disable_ipv6=1"
ip link set dev "$vc" up
in_ns sysctl -qw "net.ipv6.conf.$vcp.disable_ipv6=1"
in_ns ip link set dev "$vcp" up
# Local sockets leave checksums to the device (veth: never filled in) and AF_XDP hands the
# frame on as it is: checksums and segmentation in software on the namespace's side.
for l in "$TDX_A_PEER" "$vcp"; do
	in_ns ethtool -K "$l" tx off tso off gso off >/dev/null 2>&1 || skip "cannot turn off veth offloads"
done
in_ns ip addr add 10.0.1.1/24 dev "$TDX_A_PEER"
in_ns ip addr add 10.0.2.1/24 dev "$vcp"

# ---- the guest ----
cat >"$dir/init" <<EOF
#!/bin/sh
. /lib/guest-init.sh; . /lib/vq-init.sh
vq_init
n1=\$(nic 52:54:00:00:00:02) n2=\$(nic 52:54:00:00:00:03)
ip link set lo up
ip link set \$n1 up; ip addr add 10.0.1.2/24 dev \$n1
ip link set \$n2 up; ip addr add 10.0.2.2/24 dev \$n2
i=0; until grep -q 1 /sys/class/net/\$n2/carrier 2>/dev/null || [ \$i -ge 100 ]; do sleep 0.1; i=\$((i+1)); done
echo "VHT FEATURES1 \$(cat /sys/class/net/\$n1/device/features)"
echo "VHT FEATURES2 \$(cat /sys/class/net/\$n2/device/features)"
echo "VHT NIC1-START"; vhost_guest_tcp send 10.0.1.1 5000 $mib
echo "VHT TCP-MIB1 \$(grep Tcp: /proc/net/snmp | tail -1)"
echo "VHT NIC1-RECV"; vhost_guest_tcp recv 5001 $mib 60
echo "VHT NIC2-START"; vhost_guest_tcp send 10.0.2.1 5000 $mib
echo "VHT TCP-MIB2 \$(grep Tcp: /proc/net/snmp | tail -1)"
echo "VHT NIC2-RECV"; vhost_guest_tcp recv 5001 $mib 60
echo "VHT DONE"
poweroff -f
EOF
vq_guest "$cache" "$tool_src" "$dir/init"

# ---- the namespace: a receiver per NIC (sha-256 of what arrived against the stream's) ----
cat >"$dir/stream.py" <<'PY'
import hashlib, socket, sys, time

BLOCK = 65536


def block():
    x, b = 1, bytearray(BLOCK)
    for j in range(BLOCK):
        x = (x * 1103515245 + 12345) & 0xffffffff
        b[j] = x >> 24
    return bytes(b)


def stream(total):
    blk = block()
    for b in range(total // BLOCK):
        yield b.to_bytes(8, "little") + blk[8:]


def recv(ip, total, secs):
    want = hashlib.sha256()
    for c in stream(total):
        want.update(c)
    l = socket.socket()
    l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    l.bind((ip, 5000))
    l.listen(1)
    l.settimeout(secs)
    print("ready", flush=True)
    s, _ = l.accept()
    s.settimeout(30)
    got, h, t0 = 0, hashlib.sha256(), time.time()
    while True:
        d = s.recv(1 << 20)
        if not d:
            break
        h.update(d)
        got += len(d)
    s.close()
    ok = int(got == total and h.hexdigest() == want.hexdigest())
    print(f"ns recv {ip} bytes={got} secs={time.time() - t0:.2f} sha256={h.hexdigest()} "
          f"sent_sha256={want.hexdigest()} match={ok}", flush=True)


def send(ip, total, secs):
    s = socket.socket()
    end = time.time() + secs
    while True:
        try:
            s.connect((ip, 5001))
            break
        except OSError:
            if time.time() > end:
                raise
            time.sleep(0.2)
            s = socket.socket()
    t0 = time.time()
    for c in stream(total):
        s.sendall(c)
    s.close()
    print(f"ns send {ip} bytes={total} secs={time.time() - t0:.2f}", flush=True)


if __name__ == "__main__":
    mode, ip, total, secs = sys.argv[1], sys.argv[2], int(sys.argv[3]) << 20, int(sys.argv[4])
    (recv if mode == "recv" else send)(ip, total, secs)
PY
for n in 1 2; do
	in_ns python3 "$dir/stream.py" recv 10.0.$n.1 "$mib" 200 >"$dir/ns-rx$n.out" 2>&1 &
	pids+=($!)
done
wait_for 10 grep -q ready "$dir/ns-rx1.out" || { echo "FAIL: namespace receiver"; exit 1; }
wait_for 10 grep -q ready "$dir/ns-rx2.out" || { echo "FAIL: namespace receiver"; exit 1; }

# ---- tide-fwd: 0 <-> 1, 2 <-> 3 ----
s1=$dir/v1.sock s2=$dir/v2.sock
TIDE_LOG_LEVEL=info "$fwd" --port "vhost:socket=$s1" --port "afxdp:dev=$TDX_A,mode=generic" \
	--port "vhost:socket=$s2,offloads=no" --port "afxdp:dev=$vc,mode=generic" \
	--fwd io --duration 300 --stats-period 0 --json "$dir/fwd.json" >"$dir/fwd.log" 2>&1 &
fwdpid=$!
pids+=($fwdpid)
wait_for 10 test -S "$s1" -a -S "$s2" || { echo "FAIL: no vhost socket"; cat "$dir/fwd.log"; exit 1; }

t_boot=$SECONDS
vq_qemu 200 -chardev "socket,id=c0,path=$s1" -netdev vhost-user,id=n0,chardev=c0 \
	-device "virtio-net-pci,netdev=n0,mac=52:54:00:00:00:02,vectors=0" \
	-chardev "socket,id=c1,path=$s2" -netdev vhost-user,id=n1,chardev=c1 \
	-device "virtio-net-pci,netdev=n1,mac=52:54:00:00:00:03,vectors=0"
# The other direction: when the guest listens on a NIC, the namespace sends it the stream.
for n in 1 2; do
	if wait_for 180 grep -aq "VHT NIC$n-RECV" "$dir/console.log"; then
		in_ns python3 "$dir/stream.py" send 10.0.$n.2 "$mib" 30 >"$dir/ns-tx$n.out" 2>&1
	fi
done
wait "$qpid"
qrc=$?
t_guest=$((SECONDS - t_boot))
wait_for 10 grep -q "ns recv" "$dir/ns-rx2.out"
kill -INT "$fwdpid"
wait "$fwdpid"
frc=$?

grep -a "^VHT" "$dir/console.log"
cat "$dir/ns-rx1.out" "$dir/ns-rx2.out" "$dir/ns-tx1.out" "$dir/ns-tx2.out" 2>/dev/null | grep "^ns"
grep -E "outstanding|offloads in software|link up" "$dir/fwd.log"
sed -n '/^port  *name/,/^total/p;/^drops by reason/,/^total/p' "$dir/fwd.log"
fail=0
# The guest's feature bits, one character each: 0 CSUM, 1 GUEST_CSUM, 7/8 GUEST_TSO4/6,
# 11/12 HOST_TSO4/6.
f1=$(grep -a "^VHT FEATURES1" "$dir/console.log" | awk '{print $3}')
f2=$(grep -a "^VHT FEATURES2" "$dir/console.log" | awk '{print $3}')
[ "${f1:0:1}${f1:1:1}${f1:7:1}${f1:11:1}${f1:12:1}" = 11111 ] ||
	{ echo "FAIL: NIC 1 did not negotiate CSUM, GUEST_CSUM, GUEST_TSO4, HOST_TSO4/6 ($f1)"; fail=1; }
[ "${f2:0:1}${f2:1:1}${f2:7:1}${f2:11:1}${f2:12:1}" = 00000 ] ||
	{ echo "FAIL: NIC 2 (offloads=no) negotiated offloads ($f2)"; fail=1; }
for n in 1 2; do
	grep -q "ns recv 10.0.$n.1 bytes=$((mib << 20)) .* match=1" "$dir/ns-rx$n.out" ||
		{ echo "FAIL: NIC $n: guest -> namespace stream"; fail=1; }
done
[ "$(grep -ac "VHT TCP-SEND bytes=$((mib << 20)) " "$dir/console.log")" = 2 ] ||
	{ echo "FAIL: guest send"; fail=1; }
[ "$(grep -ac "VHT TCP-RECV bytes=$((mib << 20)) bad=0 " "$dir/console.log")" = 2 ] ||
	{ echo "FAIL: namespace -> guest streams"; fail=1; }
# Time: the offload path must not be the slow one (a stream stalled in retransmission
# back-off took 28-44 s where the other NIC took 1-2 s).
s1=$(grep -a "VHT TCP-SEND" "$dir/console.log" | sed -n 1p | sed 's/.*secs=//' | tr -d '\r')
s2=$(grep -a "VHT TCP-SEND" "$dir/console.log" | sed -n 2p | sed 's/.*secs=//' | tr -d '\r')
if [ -n "$s1" ] && [ -n "$s2" ] && python3 -c "import sys; sys.exit(not float(sys.argv[1]) > 3 * float(sys.argv[2]) + 5)" "$s1" "$s2"; then
	echo "FAIL: NIC 1's stream (offloads) took $s1 s, NIC 2's $s2 s"
	fail=1
fi
gso=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); p=d["ports"]; print(p[1]["sw_gso"], p[1]["sw_cksum"], p[3]["sw_gso"], p[3]["sw_cksum"], sum(x["drops"]["offload"] for x in p))' "$dir/fwd.json" 2>/dev/null)
echo "tide-fwd: AF_XDP port 1 sw_gso/sw_cksum, port 3 sw_gso/sw_cksum, offload drops: $gso"
read -r g1 c1 g3 c3 od <<<"$gso"
[ "${g1:-0}" -gt 0 ] || { echo "FAIL: no TSO frame segmented in software for NIC 1"; fail=1; }
[ "${g3:-1}" = 0 ] && [ "${c3:-1}" = 0 ] || { echo "FAIL: software offloads for NIC 2 (offloads=no)"; fail=1; }
[ "${od:-1}" = 0 ] || { echo "FAIL: offload drops"; fail=1; }
grep -q "buffers outstanding after stop: 0 " "$dir/fwd.log" || { echo "FAIL: tide-fwd buffers"; fail=1; }
[ "$frc" -eq 0 ] || { echo "FAIL: tide-fwd exit $frc"; fail=1; }
echo "time: guest ${t_guest} s, whole test $((SECONDS - t_start)) s"
if [ $fail -ne 0 ]; then
	echo "--- qemu ($qrc)"; tail -5 "$dir/qemu.out"; echo "--- console"; tail -30 "$dir/console.log"
	echo "--- tide-fwd"; tail -40 "$dir/fwd.log"
fi
exit $fail
