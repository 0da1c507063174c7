/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * src/unix_sock.c, the listener of the memif and vhost servers: a socket file whose process
 * died is taken over; a live listener, a file that is not a socket, and a taken abstract
 * name are not.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sock_util.h"
#include "unix_sock.h"

static int listen_on(const char *path, bool abstract)
{
	return unix_sock_listen(path, abstract, SOCK_STREAM, 4);
}

int main(void)
{
	char dir[] = "/tmp/tide-unix-sock-XXXXXX", sock[108], file[108], abs[64];
	struct stat st;
	int a, b, fd;

	SU_CHECK(mkdtemp(dir) != NULL);
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

	SU_CHECK(rmdir(dir) == 0);
	printf("unix_sock: ok\n");
	return 0;
}
