#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# tide-fwd calls tide_port_poll_ctl() only on the ports whose info has needs_poll_ctl set,
# and the vhost port's control thread does only what woke it. tide-fwd runs under strace
# (one output file per thread) with two ports: a vhost server port and a memif server port
# with no peer. The frontend is a plain UNIX socket (python3) driven step by step:
#   1. it connects and stays silent; once the port has accepted it, the test waits for 20
#      more live-statistics lines (period 0.02 s). Each line is printed by a tick of
#      tide-fwd's main loop, after that tick's poll_ctl calls;
#   2. a second frontend connects and sees the port close it (one frontend at a time);
#   3. the first sends GET_FEATURES (a header, no payload) and reads the reply.
# Then tide-fwd is stopped (SIGINT) and the calls are counted:
#   - tide-fwd's main thread: no recvmsg at all (a tick that polls the vhost port would make
#     one on the silent connection), and at least 20
#     accept4 (the memif port is still polled: it accepts its peers only inside
#     tide_port_poll_ctl(); this also shows that strace sees the main thread's calls);
#   - the vhost control thread (the one whose accept4 returned an fd): exactly 2 accept4,
#     both returning an fd (steps 1 and 2: none on a wake-up by the connection), and
#     exactly 2 recvmsg (step 3: the message, then the one that finds the socket empty;
#     none after an accept or on a wake-up by the listening socket).
#     Every step ends inside one locked pass of the thread (the accept, the close, the
#     reply), and port stop takes the lock before the thread can end: the counts are exact.
# usage: test_vhost_fwd_ctl.sh PATH/TO/tide-fwd
#   exit 77 (skip) without strace (or where it cannot trace) or python3
set -u
fwd=$1
strace=$(command -v strace) || { echo "skip: strace not installed" >&2; exit 77; }
"$strace" -f -qq -o /dev/null true 2>/dev/null || { echo "skip: strace cannot trace here (ptrace not allowed)" >&2; exit 77; }
command -v python3 >/dev/null || { echo "skip: python3 not installed (the silent frontend)" >&2; exit 77; }
dir=$(mktemp -d "${TMPDIR:-/tmp}/tide-vhost-fwdctl-XXXXXX")
pids=()
cleanup() {
	# tide-fwd runs under strace: killing strace would leave it running, detached. Its
	# command line names this test's own directory.
	pkill -9 -f -- "--port vhost:socket=$dir/" 2>/dev/null
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
fail() { echo "FAIL: $*"; echo "--- tide-fwd output:"; tail -n 20 "$dir/fwd.log"; exit 1; }

. "$(dirname "$0")/wait_for.sh"

vsock=$dir/vh.sock
msock=$dir/mf.sock
# LeakSanitizer cannot run under ptrace (sanitizer build): leaks are the other tests' to find.
ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 TIDE_LOG_LEVEL=info "$strace" -f -ff -qq -e trace=recvmsg,accept4,execve -o "$dir/st" \
	"$fwd" --port "vhost:socket=$vsock,role=server" --port "memif:socket=$msock,role=server" \
	--fwd rxonly --stats-period 0.02 >"$dir/fwd.log" 2>&1 &
pids+=($!)
wait_for test -S "$vsock" || fail "no vhost socket $vsock"

# The frontend: connects, then does what the test writes into the FIFO, line by line.
mkfifo "$dir/cmd"
python3 -c '
import socket, struct, sys
def conn():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sys.argv[1])
    return s
s = conn()
print("connected", flush=True)
for line in open(sys.argv[2]):
    if line.strip() == "second":
        t = conn()
        t.settimeout(20)
        print("second refused" if t.recv(1) == b"" else "second: got data", flush=True)
        t.close()
    elif line.strip() == "features":
        s.sendall(struct.pack("<III", 1, 1, 0))   # GET_FEATURES, version 1, no payload
        r = b""
        s.settimeout(20)
        while len(r) < 20:
            d = s.recv(20 - len(r))
            if not d:
                break
            r += d
        req, flags, size = struct.unpack("<III", r[:12])
        print("features reply: request %d size %d" % (req, size), flush=True)
' "$vsock" "$dir/cmd" >"$dir/fe.log" 2>&1 &
pids+=($!)
exec {cmd}<>"$dir/cmd" # read-write: opens at once, even if the frontend never starts
connected() { grep -aq 'frontend connected' "$dir/fwd.log"; }
wait_for connected || fail "the vhost port did not accept the frontend"
lines() { grep -ac '^\[ *[0-9.]* s\]' "$dir/fwd.log"; }
ticks() { [ "$(lines)" -ge $(($1 + 20)) ]; }
l0=$(lines)
wait_for ticks "$l0" || fail "tide-fwd printed $(($(lines) - l0)) of 20 statistics lines in 10 s"
nticks=$(($(lines) - l0))
fe_says() { grep -aq "$1" "$dir/fe.log"; }
echo second >&"$cmd"
wait_for fe_says 'second refused' || fail "the second frontend was not closed: $(cat "$dir/fe.log")"
echo features >&"$cmd"
wait_for fe_says 'features reply: request 1 size 8' || fail "no GET_FEATURES reply: $(cat "$dir/fe.log")"

# The main thread's file is st.PID (its execve is traced there): SIGINT goes to tide-fwd
# itself, which then prints its summary and exits; strace ends with it.
main=$(grep -l '^execve(' "$dir"/st.* | head -n 1)
[ -n "$main" ] || fail "no strace output of tide-fwd's main thread"
kill -INT "${main##*.}"
wait "${pids[0]}"
rc=$?
exec {cmd}>&-
[ $rc -eq 0 ] || fail "tide-fwd exited with $rc"

recv=$(grep -c '^recvmsg(' "$main")
acc=$(grep -c '^accept4(' "$main")
ctl=$(grep -l '^accept4(.* = [0-9]' "$dir"/st.* | grep -vx "$main" | head -n 1)
[ -n "$ctl" ] || fail "no thread accepted the frontend"
c_acc=$(grep -c '^accept4(' "$ctl")
c_acc_ok=$(grep -c '^accept4(.* = [0-9]' "$ctl")
c_recv=$(grep -c '^recvmsg(' "$ctl")
echo "main thread, $nticks ticks with a silent frontend connected: recvmsg $recv, accept4 $acc (memif)"
echo "vhost control thread: accept4 $c_acc ($c_acc_ok returned an fd), recvmsg $c_recv"
[ "$recv" -eq 0 ] || fail "tide-fwd's main thread made $recv recvmsg calls: it polls the vhost port's control plane"
[ "$acc" -ge 20 ] || fail "tide-fwd's main thread made $acc accept4 calls in 20 ticks: it no longer polls the memif port"
[ "$c_acc" -eq 2 ] && [ "$c_acc_ok" -eq 2 ] ||
	fail "the control thread made $c_acc accept4 calls, $c_acc_ok returning an fd (want 2 and 2): $(grep '^accept4(' "$ctl")"
[ "$c_recv" -eq 2 ] || fail "the control thread made $c_recv recvmsg calls (want 2: GET_FEATURES and the empty socket): $(grep '^recvmsg(' "$ctl" | cut -c1-100)"
echo ok
