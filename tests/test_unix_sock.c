/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * src/unix_sock.c, the listener of the memif and vhost servers: a socket file whose process
 * died is taken over; a live listener, a file that is not a socket, and a taken abstract
 * name are not. A live listener that accepts nothing (its backlog full) neither blocks the
 * probe nor loses its file. unix_sock_recv(), the receive of both control planes: the
 * descriptors that came with a message are kept up to the caller's limit, those beyond it
 * are closed and reported lost, as are those the kernel dropped (MSG_CTRUNC); a datagram
 * longer than the buffer says so; nothing waiting and a closed peer are told apart; no
 * descriptor leaks on any path. unix_sock_connect() and unix_sock_send(), the client side:
 * nobody listening is an error code, not an fd; a message goes out with its descriptors, and
 * more descriptors than a receiver makes room for are refused before anything is sent.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sock_util.h"
#include "unix_sock.h"
#include "proc_util.h"
#include "tmp_util.h"

static char dir[64], sock[108];

/* At exit, after a failed check too: nothing left behind. */
static void cleanup(void)
{
	unlink(sock);
	rmdir(dir);
}

static int listen_on(const char *path, bool abstract)
{
	return unix_sock_listen(path, abstract, SOCK_STREAM, 4);
}

static int listen_on_type(const char *path, int type)
{
	return unix_sock_listen(path, false, type, 4);
}

/*
 * A listener on @path (type @type) that never accepts, its backlog filled with pending
 * connections: unix_sock_listen() on the same path must come back at once with
 * -EADDRINUSE (the probe finds it alive) and leave the file. The call runs in a child so
 * that a probe that blocks is seen (and ended) instead of hanging the test.
 */
static void full_backlog(const char *path, int type)
{
	int l = socket(AF_UNIX, type | SOCK_CLOEXEC, 0), pend[64], npend = 0, st = 0;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct timespec ms = {0, 1000000};
	struct stat sb;
	pid_t pid;

	SU_CHECK(l >= 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	SU_CHECK(bind(l, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	SU_CHECK(listen(l, 0) == 0);
	for (;;) {
		int c = socket(AF_UNIX, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

		SU_CHECK(c >= 0 && npend < 64);
		if (connect(c, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
			SU_CHECK(errno == EAGAIN);
			close(c);
			break;
		}
		pend[npend++] = c;
	}
	pid = fork();
	SU_CHECK(pid >= 0);
	if (pid == 0)
		_exit(listen_on_type(path, type) == -EADDRINUSE ? 0 : 1);
	for (int i = 0; i < 2000 && waitpid(pid, &st, WNOHANG) == 0; i++)
		nanosleep(&ms, NULL);
	if (waitpid(pid, &st, WNOHANG) == 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		fprintf(stderr, "unix_sock_listen() still blocked after 2 s on a listener whose backlog is full (type %d)\n",
			type);
		exit(1);
	}
	SU_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	SU_CHECK(stat(path, &sb) == 0 && S_ISSOCK(sb.st_mode));
	for (int i = 0; i < npend; i++)
		close(pend[i]);
	close(l);
	unlink(path);
}

/* Send "msg" on @s with @nfds new descriptors (eventfds, closed here after the send). */
static void send_fds(int s, unsigned nfds)
{
	int fds[SU_MAX_FDS];

	for (unsigned i = 0; i < nfds; i++)
		SU_CHECK((fds[i] = eventfd(0, EFD_CLOEXEC)) >= 0);
	SU_CHECK(su_sendmsg(s, "msg", 3, fds, nfds) == 3);
	for (unsigned i = 0; i < nfds; i++)
		close(fds[i]);
}

/* Receive one message of 3 bytes from @s into @f: @kept descriptors kept (each open and
 * close-on-exec), @lost as given. */
static void recv_expect(int s, struct unix_sock_fds *f, unsigned kept, bool lost)
{
	char buf[8];
	bool trunc = true;

	SU_CHECK(unix_sock_recv(s, buf, sizeof(buf), f, &trunc) == 3);
	SU_CHECK(!trunc && memcmp(buf, "msg", 3) == 0);
	SU_CHECK(f->n == kept);
	SU_CHECK(f->lost == lost);
	for (unsigned i = 0; i < f->n; i++)
		SU_CHECK(fcntl(f->fd[i], F_GETFD) == FD_CLOEXEC);
}

/* The client side: connect (nobody there, then a listener), send with descriptors. */
static void connect_send(void)
{
	unsigned before = count_fds();
	int fds[UNIX_SOCK_MAX_FDS + 1], sv[2], l, c, a, rc;
	struct unix_sock_fds f = {.max = UNIX_SOCK_MAX_FDS};
	struct iovec iov[2] = {{"m", 1}, {"sg", 2}};

	rc = unix_sock_connect(sock, false, SOCK_SEQPACKET | SOCK_NONBLOCK);
	SU_CHECK(rc == -ENOENT);
	l = listen_on_type(sock, SOCK_SEQPACKET);
	SU_CHECK(l >= 0);
	c = unix_sock_connect(sock, false, SOCK_SEQPACKET | SOCK_NONBLOCK);
	SU_CHECK(c >= 0);
	SU_CHECK(fcntl(c, F_GETFD) == FD_CLOEXEC && (fcntl(c, F_GETFL) & O_NONBLOCK));
	a = accept4(l, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	SU_CHECK(a >= 0);
	for (unsigned i = 0; i <= UNIX_SOCK_MAX_FDS; i++)
		SU_CHECK((fds[i] = eventfd(0, EFD_CLOEXEC)) >= 0);
	/* One descriptor more than a receiver takes: refused, nothing on the wire. */
	SU_CHECK(unix_sock_send(c, iov, 2, fds, UNIX_SOCK_MAX_FDS + 1, MSG_DONTWAIT) == -EINVAL);
	SU_CHECK(unix_sock_recv(a, (char[8]){0}, 8, &f, NULL) == -EAGAIN);
	/* The most it takes, gathered from two pieces: all arrive. */
	SU_CHECK(unix_sock_send(c, iov, 2, fds, UNIX_SOCK_MAX_FDS, MSG_DONTWAIT) == 3);
	recv_expect(a, &f, UNIX_SOCK_MAX_FDS, false);
	unix_sock_fds_close(&f);
	/* The peer gone: an error code. */
	close(a);
	SU_CHECK(unix_sock_send(c, iov, 1, NULL, 0, MSG_DONTWAIT) == -EPIPE);
	/* On a stream socket (vhost-user's) the kernel also raises SIGPIPE unless the send says
	 * not to; its default action, which kills, is put in force whatever this process
	 * inherited. */
	SU_CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
	close(sv[1]);
	signal(SIGPIPE, SIG_DFL);
	SU_CHECK(unix_sock_send(sv[0], iov, 1, NULL, 0, MSG_DONTWAIT) == -EPIPE);
	close(sv[0]);
	for (unsigned i = 0; i <= UNIX_SOCK_MAX_FDS; i++)
		close(fds[i]);
	close(c);
	close(l);
	unlink(sock);
	SU_CHECK(count_fds() == before);
}

static void recv_fds(void)
{
	unsigned before = count_fds();
	struct unix_sock_fds f = {.max = 4};
	char buf[8];
	bool trunc;
	int sv[2];

	SU_CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) == 0);
	SU_CHECK(fcntl(sv[0], F_SETFL, O_NONBLOCK) == 0);
	/* Nothing waiting. */
	SU_CHECK(unix_sock_recv(sv[0], buf, sizeof(buf), &f, NULL) == -EAGAIN && f.n == 0);
	/* Within the limit, then exactly at it. */
	send_fds(sv[1], 2);
	recv_expect(sv[0], &f, 2, false);
	unix_sock_fds_close(&f);
	SU_CHECK(f.n == 0 && !f.lost && f.max == 4);
	send_fds(sv[1], 4);
	recv_expect(sv[0], &f, 4, false);
	/* A descriptor taken over by the caller (-1) is skipped by the close. */
	{
		int mine = f.fd[1];

		f.fd[1] = -1;
		unix_sock_fds_close(&f);
		SU_CHECK(fcntl(mine, F_GETFD) == FD_CLOEXEC);
		close(mine);
	}
	unix_sock_fds_close(&f);
	SU_CHECK(count_fds() == before + 2);
	/* A datagram longer than the buffer. */
	SU_CHECK(send(sv[1], "0123456789", 10, 0) == 10);
	trunc = false;
	SU_CHECK(unix_sock_recv(sv[0], buf, 4, &f, &trunc) == 4 && trunc && f.n == 0);
	/* The peer closes; its last message with a descriptor still comes, then the end. */
	send_fds(sv[1], 1);
	close(sv[1]);
	recv_expect(sv[0], &f, 1, false);
	unix_sock_fds_close(&f);
	SU_CHECK(unix_sock_recv(sv[0], buf, sizeof(buf), &f, NULL) == 0 && f.n == 0);
	close(sv[0]);
	SU_CHECK(count_fds() == before);
}

/*
 * Beyond the room: what the kernel does with the control buffer (MSG_CTRUNC, the room
 * CMSG_SPACE rounds up to). A test of its own (argument "ctrunc"): qemu-user translates
 * control messages through buffers of its own and does not reproduce it, so under emulation
 * it exits 77, a skip.
 */
static void recv_fds_ctrunc(void)
{
	unsigned before = count_fds();
	struct unix_sock_fds f = {.max = 4};
	int sv[2];

	SU_CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) == 0);
	SU_CHECK(fcntl(sv[0], F_SETFL, O_NONBLOCK) == 0);
	/* One more than the room: the kernel drops it (MSG_CTRUNC), the four are kept. */
	send_fds(sv[1], 5);
	recv_expect(sv[0], &f, 4, true);
	unix_sock_fds_close(&f);
	/* Room rounds up (CMSG_SPACE): with max 3 the kernel hands over a fourth; it is closed
	 * here and reported lost. */
	f.max = 3;
	send_fds(sv[1], 4);
	recv_expect(sv[0], &f, 3, true);
	/* Descriptors gather over messages (vhost's message in pieces): a full set loses the
	 * next ones. */
	send_fds(sv[1], 1);
	recv_expect(sv[0], &f, 3, true);
	unix_sock_fds_close(&f);
	close(sv[0]);
	close(sv[1]);
	SU_CHECK(count_fds() == before);
}

int main(int argc, char **argv)
{
	char file[108], abs[64];
	struct stat st;
	int a, b, fd;

	if (argc > 1 && strcmp(argv[1], "ctrunc") == 0) {
		if (getenv("TIDE_TEST_EMULATED") != NULL) {
			fprintf(stderr, "skip: qemu-user does not reproduce the kernel's control-buffer truncation (MSG_CTRUNC)\n");
			return 77;
		}
		recv_fds_ctrunc();
		printf("unix_sock ctrunc: ok\n");
		return 0;
	}
	SU_CHECK((size_t)snprintf(dir, sizeof(dir), "%s/tide-unix-sock-XXXXXX", test_tmp()) <
		 sizeof(dir));
	SU_CHECK(mkdtemp(dir) != NULL);
	atexit(cleanup);
	snprintf(sock, sizeof(sock), "%s/s.sock", dir);
	snprintf(file, sizeof(file), "%s/plain", dir);
	snprintf(abs, sizeof(abs), "tide-unix-sock-%d", (int)getpid());

	/* A live listener keeps its path. */
	a = listen_on(sock, false);
	SU_CHECK(a >= 0);
	SU_CHECK(listen_on(sock, false) == -EADDRINUSE);
	SU_CHECK(stat(sock, &st) == 0 && S_ISSOCK(st.st_mode));
	/* Its process gone (the fd closed, the file left behind): the next listener takes over. */
	close(a);
	SU_CHECK(stat(sock, &st) == 0 && S_ISSOCK(st.st_mode));
	b = listen_on(sock, false);
	SU_CHECK(b >= 0);
	close(b);
	unlink(sock);

	/* A file that is not a socket is never removed. */
	fd = open(file, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	SU_CHECK(fd >= 0);
	close(fd);
	SU_CHECK(listen_on(file, false) == -EADDRINUSE);
	SU_CHECK(stat(file, &st) == 0 && S_ISREG(st.st_mode));
	unlink(file);

	/* Abstract names: no file to take over; a taken name stays taken. */
	a = listen_on(abs, true);
	SU_CHECK(a >= 0);
	SU_CHECK(listen_on(abs, true) == -EADDRINUSE);
	close(a);
	b = listen_on(abs, true);
	SU_CHECK(b >= 0);
	close(b);

	/* A listener that never accepts, backlog full: alive, and the probe must not wait. */
	full_backlog(sock, SOCK_STREAM);
	full_backlog(sock, SOCK_SEQPACKET);

	recv_fds();
	connect_send();

	SU_CHECK(rmdir(dir) == 0);
	printf("unix_sock: ok\n");
	return 0;
}
