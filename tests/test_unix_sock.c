/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * src/unix_sock.c, the listener of the memif and vhost servers: a socket file whose process
 * died is taken over; a live listener, a file that is not a socket, and a taken abstract
 * name are not. A live listener that accepts nothing (its backlog full) neither blocks the
 * probe nor loses its file.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sock_util.h"
#include "unix_sock.h"

static char dir[] = "/tmp/tide-unix-sock-XXXXXX", sock[108];

/* At exit, after a failed check too: nothing left in /tmp. */
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

int main(void)
{
	char file[108], abs[64];
	struct stat st;
	int a, b, fd;

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

	SU_CHECK(rmdir(dir) == 0);
	printf("unix_sock: ok\n");
	return 0;
}
