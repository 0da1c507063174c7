#!/bin/sh
# tide-fwd forwards between two veth pairs through AF_XDP (run by netns-env, which made the
# pairs and removes them): frames sent into pair a's namespace end must come out of pair b's
# namespace end, every one, intact; tide-fwd must end with no buffer outstanding. Native and
# generic XDP, and native with --rx-mode interrupt (the lcore sleeps on the sockets between
# the sender's pauses and must wake for every frame). Then txonly with a pool the Tx queue can
# hold entirely (frames sent in place stay the queue's until it reclaims them): it must still
# finish its --packets count.
#   test_fwd_veth.sh TIDE_FWD
set -u
fwd=$1
n=2000
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

for mode in native generic interrupt; do
	xdp=$mode
	extra=""
	if [ "$mode" = interrupt ]; then
		xdp=native
		extra="--rx-mode interrupt"
	fi
	# shellcheck disable=SC2086 # $extra: zero or two words
	"$fwd" --port "afxdp:dev=$TDX_A,mode=$xdp" --port "afxdp:dev=$TDX_B,mode=$xdp" \
		--fwd io --duration 120 --quiet --json "$out/$mode.json" $extra \
		>"$out/$mode.log" 2>&1 &
	pid=$!
	# Sender on a's peer, receiver on b's peer, both in the namespace. The sender first
	# sends probe frames (another EtherType) until one comes through tide-fwd: the path is
	# up; tide-fwd is stopped with SIGINT once the receiver is done, not on a timer.
	nsenter --net="/run/netns/$TDX_NS" python3 - "$TDX_A_PEER" "$TDX_B_PEER" "$n" \
		>"$out/$mode.py" 2>&1 <<'PY'
import socket, struct, sys, time
a, b, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
rx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x88b5))
rx.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
rx.bind((b, 0))
rx.settimeout(0.2)
tx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
tx.bind((a, 0))
probe_rx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x88b6))
probe_rx.bind((b, 0))
probe_rx.settimeout(0.01)
probe = b'\xff' * 6 + b'\x02\x00\x00\x00\x00\x01' + b'\x88\xb6' + bytes(50)
deadline = time.time() + 30
while True:
    if time.time() > deadline:
        print("no probe frame came through tide-fwd within 30 s")
        sys.exit(1)
    tx.send(probe)
    try:
        if probe_rx.recv(4096)[12:14] == b'\x88\xb6':
            break
    except socket.timeout:
        pass
def frame(i):
    body = struct.pack('!I', i) + bytes((i + k) & 0xff for k in range(46 + i % 200))
    return b'\xff' * 6 + b'\x02\x00\x00\x00\x00\x01' + b'\x88\xb5' + body
for i in range(n):
    tx.send(frame(i))
    if i % 64 == 0:
        time.sleep(0.002)
got, bad, end = set(), 0, time.time() + 4
while time.time() < end and len(got) < n:
    try:
        d = rx.recv(4096)
    except socket.timeout:
        continue
    i = struct.unpack('!I', d[14:18])[0]
    if i >= n or d[:len(frame(i))] != frame(i):
        bad += 1
    got.add(i)
print(f"sent {n} received {len(got)} bad {bad}")
sys.exit(0 if len(got) == n and bad == 0 else 1)
PY
	py=$?
	kill -INT "$pid" 2>/dev/null
	wait "$pid"
	rc=$?
	cat "$out/$mode.py"
	if [ "$py" -ne 0 ] || [ "$rc" -ne 0 ]; then
		echo "FAIL ($mode): receiver status $py, tide-fwd status $rc"
		cat "$out/$mode.log"
		exit 1
	fi
	# Without --rxd/--txd the queues take the driver's preferred depths (DPDK's 2048).
	python3 - "$out/$mode.json" <<'PY' || exit 1
import json, sys
c = json.load(open(sys.argv[1]))["config"]
if (c["rxd"], c["txd"]) != (2048, 2048):
    sys.exit(f"afxdp default depths: rxd {c['rxd']} txd {c['txd']}, expected 2048 2048")
PY
	echo "ok: $mode"
done

# txonly, 512 Tx descriptors, 64 Rx, 600 buffers, no cache: after 512 frames in flight every
# allocation fails until the Tx queue reclaims. --duration bounds a stall.
"$fwd" --port "afxdp:dev=$TDX_A" --fwd txonly --rxd 64 --txd 512 --pool 600 --cache 0 \
	--packets 20000 --duration 30 --quiet --json "$out/txonly.json" >"$out/txonly.log" 2>&1
rc=$?
python3 - "$out/txonly.json" <<'PY' || { cat "$out/txonly.log"; exit 1; }
import json, sys
j = json.load(open(sys.argv[1]))
sent, by = j["total"]["tx_packets"], j["stopped_by"]
if sent != 20000 or by != "packets":
    sys.exit(f"FAIL (txonly, small pool): sent {sent} of 20000, stopped by {by}")
PY
if [ "$rc" -ne 0 ]; then
	echo "FAIL (txonly, small pool): tide-fwd status $rc"
	cat "$out/txonly.log"
	exit 1
fi
echo "ok: txonly with a pool the Tx queue can hold"
