/* SPDX-License-Identifier: BSD-3-Clause */
/* UNIX control sockets shared by the memif and vhost drivers (see unix_sock.h). */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "unix_sock.h"

socklen_t unix_sock_addr(const char *path, bool abstract, struct sockaddr_un *sa)
{
	size_t n = strlen(path);

	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	if (abstract) {
		/* Abstract: a leading NUL, the name, no terminator (the length says where it ends).
		 */
		memcpy(sa->sun_path + 1, path, n);
		return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
	}
	memcpy(sa->sun_path, path, n);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + 1);
}

/*
 * Remove @path if it is a socket file that refuses connections (no process listens). The
 * probe does not block: a listener whose backlog is full (it accepts slowly, or never)
 * answers EAGAIN at once where a blocking connect() would wait for it, and it is alive.
 */
static void take_stale(const struct sockaddr_un *sa, socklen_t len, int type)
{
	const int nonblock = SOCK_NONBLOCK;
	int probe = socket(AF_UNIX, type | nonblock | SOCK_CLOEXEC, 0);
	struct stat st;

	if (probe < 0)
		return;
	if (connect(probe, (const struct sockaddr *)sa, len) < 0 && errno == ECONNREFUSED &&
	    stat(sa->sun_path, &st) == 0 && S_ISSOCK(st.st_mode))
		unlink(sa->sun_path);
	close(probe);
}

int unix_sock_listen(const char *path, bool abstract, int type, int backlog)
{
	struct sockaddr_un sa;
	socklen_t len = unix_sock_addr(path, abstract, &sa);
	int fd = socket(AF_UNIX, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), rc;

	if (fd < 0)
		return -errno;
	rc = bind(fd, (struct sockaddr *)&sa, len);
	if (rc < 0 && errno == EADDRINUSE && !abstract) {
		take_stale(&sa, len, type);
		rc = bind(fd, (struct sockaddr *)&sa, len);
	}
	if (rc < 0 || listen(fd, backlog) < 0) {
		int err = errno;

		close(fd);
		return -err;
	}
	return fd;
}

int unix_sock_connect(const char *path, bool abstract, int type)
{
	struct sockaddr_un sa;
	socklen_t len = unix_sock_addr(path, abstract, &sa);
	int fd = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, len) < 0) {
		int err = errno;

		close(fd);
		return -err;
	}
	return fd;
}

ssize_t unix_sock_send(int sock, const struct iovec *iov, unsigned iovcnt, const int *fds,
		       unsigned nfds, int flags)
{
	union {
		char b[CMSG_SPACE(sizeof(int) * UNIX_SOCK_MAX_FDS)];
		struct cmsghdr align;
	} cbuf;
	struct msghdr mh = {.msg_iov = (struct iovec *)(uintptr_t)iov, .msg_iovlen = iovcnt};
	ssize_t n;

	if (nfds > UNIX_SOCK_MAX_FDS)
		return -EINVAL;
	if (nfds) {
		struct cmsghdr *c;

		memset(&cbuf, 0, sizeof(cbuf));
		mh.msg_control = cbuf.b;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
	}
	n = sendmsg(sock, &mh, MSG_NOSIGNAL | flags);
	return n < 0 ? -errno : n;
}

ssize_t unix_sock_recv(int sock, void *buf, size_t len, struct unix_sock_fds *fds, bool *trunc)
{
	union {
		char b[CMSG_SPACE(sizeof(int) * UNIX_SOCK_MAX_FDS)];
		struct cmsghdr align;
	} cbuf;
	struct iovec iov = {.iov_base = buf, .iov_len = len};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf.b,
			    .msg_controllen = CMSG_SPACE(sizeof(int) * fds->max)};
	ssize_t n = recvmsg(sock, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);

	if (n < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? -EAGAIN : -errno;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		for (size_t i = 0; CMSG_LEN((i + 1) * sizeof(int)) <= c->cmsg_len; i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (fds->n < fds->max) {
				fds->fd[fds->n++] = fd;
			} else {
				close(fd); /* beyond the caller's limit */
				fds->lost = true;
			}
		}
	}
	if (mh.msg_flags & MSG_CTRUNC)
		fds->lost = true;
	if (trunc != NULL)
		*trunc = (mh.msg_flags & MSG_TRUNC) != 0;
	return n;
}

void unix_sock_fds_close(struct unix_sock_fds *fds)
{
	for (unsigned i = 0; i < fds->n; i++)
		if (fds->fd[i] >= 0)
			close(fds->fd[i]);
	fds->n = 0;
	fds->lost = false;
}
