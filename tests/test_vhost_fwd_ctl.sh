#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# tide-fwd calls tide_port_poll_ctl() only on the ports whose info has needs_poll_ctl set.
# tide-fwd runs under strace (one output file per thread) with two ports: a vhost server
# port with a frontend connected that stays silent, and a memif server port with no peer.
# The frontend is a plain UNIX socket that connects and sends nothing. Once the vhost port
# has accepted it, the test waits for 20 more live-statistics lines (period 0.02 s). Each
# line is printed by a tick of tide-fwd's main loop, after that tick's poll_ctl calls.
# Then, in tide-fwd's main thread:
#   - no recvmsg at all. A tick that polls the vhost port makes one recvmsg on the silent
#     connection, so the old loop makes at least 20 here;
#   - at least 20 accept4. The memif port is still polled: it accepts its peers only inside
#     tide_port_poll_ctl(). This also shows that strace sees the main thread's calls.
# The vhost control thread must have accepted the frontend (accept4 returning an fd).
#
# usage: test_vhost_fwd_ctl.sh PATH/TO/tide-fwd
#   exit 77 (skip) without strace or python3
set -u
fwd=$1
strace=$(command -v strace) || { echo "skip: strace not installed" >&2; exit 77; }
command -v python3 >/dev/null || { echo "skip: python3 not installed (the silent frontend)" >&2; exit 77; }
dir=$(mktemp -d /tmp/tide-vhost-fwdctl-XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; echo "--- tide-fwd output:"; tail -n 20 "$dir/fwd.log"; exit 1; }

# Wait until command $2... succeeds, for at most $1 seconds.
wait_for() {
	local t=$1; shift
	local end=$((SECONDS + t))
	until "$@"; do
		[ $SECONDS -ge $end ] && return 1
		sleep 0.02
	done
}

vsock=$dir/vh.sock
msock=$dir/mf.sock
TIDE_LOG_LEVEL=info "$strace" -f -ff -qq -e trace=recvmsg,accept4,execve -o "$dir/st" \
	"$fwd" --port "vhost:socket=$vsock,role=server" --port "memif:socket=$msock,role=server" \
	--fwd rxonly --stats-period 0.02 >"$dir/fwd.log" 2>&1 &
pids+=($!)
wait_for 20 test -S "$vsock" || fail "no vhost socket $vsock"

# The silent frontend: connects, then holds the connection until the test ends.
mkfifo "$dir/hold"
python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
print("connected", flush=True)
open(sys.argv[2]).read()
' "$vsock" "$dir/hold" >"$dir/fe.log" 2>&1 &
pids+=($!)
exec {hold}>"$dir/hold"
connected() { grep -aq 'frontend connected' "$dir/fwd.log"; }
wait_for 20 connected || fail "the vhost port did not accept the frontend"
lines() { grep -ac '^\[ *[0-9.]* s\]' "$dir/fwd.log"; }
ticks() { [ "$(lines)" -ge $(($1 + 20)) ]; }
l0=$(lines)
wait_for 60 ticks "$l0" || fail "tide-fwd printed $(($(lines) - l0)) of 20 statistics lines in 60 s"
# The main thread's file is st.PID (its execve is traced there): SIGINT goes to tide-fwd
# itself, which then prints its summary and exits; strace ends with it.
main=$(grep -l '^execve(' "$dir"/st.* | head -n 1)
[ -n "$main" ] || fail "no strace output of tide-fwd's main thread"
kill -INT "${main##*.}"
wait "${pids[0]}"
rc=$?
exec {hold}>&-
[ $rc -eq 0 ] || fail "tide-fwd exited with $rc"
recv=$(grep -c '^recvmsg(' "$main")
acc=$(grep -c '^accept4(' "$main")
served=$(grep -h '^accept4(' "$dir"/st.* | grep -vc '= -1 ')
echo "over $(($(lines) - l0)) ticks with a silent frontend connected: main thread recvmsg $recv, accept4 $acc (memif); accepted connections $served"
[ "$recv" -eq 0 ] || fail "tide-fwd's main thread made $recv recvmsg calls: it polls the vhost port's control plane"
[ "$acc" -ge 20 ] || fail "tide-fwd's main thread made $acc accept4 calls in 20 ticks: it no longer polls the memif port"
[ "$served" -ge 1 ] || fail "no thread accepted the frontend"
echo ok
