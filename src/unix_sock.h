/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * UNIX control sockets of the drivers that serve a peer on a path (memif, vhost-user):
 * the address, a listener that takes over the socket file of a process that died, and the
 * receive of a message with the file descriptors that came with it. Internal; control
 * thread only.
 */
#ifndef TIDE_SRC_UNIX_SOCK_H
#define TIDE_SRC_UNIX_SOCK_H

#include <stdbool.h>
#include <sys/socket.h>
#include <sys/un.h>

/*
 * @path as a UNIX socket address in @sa (@abstract: in the abstract namespace, a leading
 * NUL and no terminator); returns the address length. No argument checks: the caller
 * checked that @path fits (strlen < sizeof(sa->sun_path), one less when abstract).
 */
socklen_t unix_sock_addr(const char *path, bool abstract, struct sockaddr_un *sa);

/*
 * A listening socket of @type (SOCK_STREAM, SOCK_SEQPACKET), non-blocking and close-on-exec,
 * on @path. When the path is taken by a socket file nobody listens on (its process died),
 * the file is removed and the bind retried; a file that is not a socket, or a socket with
 * a listener, is left alone. Returns the fd or -errno.
 */
int unix_sock_listen(const char *path, bool abstract, int type, int backlog);

/*
 * A connected socket of @type (SOCK_STREAM or SOCK_SEQPACKET, with SOCK_NONBLOCK if
 * wanted), close-on-exec, to the listener on @path: the fd, or -errno (-ENOENT or
 * -ECONNREFUSED: nobody listens there yet; -EAGAIN: a non-blocking connect found its
 * backlog full).
 */
int unix_sock_connect(const char *path, bool abstract, int type);

/*
 * One sendmsg() of @iov[0..@iovcnt) on @sock with @fds[0..@nfds) along as SCM_RIGHTS
 * (@nfds at most UNIX_SOCK_MAX_FDS), never raising SIGPIPE; @flags adds MSG_DONTWAIT or
 * the like. Returns the bytes sent or -errno.
 */
ssize_t unix_sock_send(int sock, const struct iovec *iov, unsigned iovcnt, const int *fds,
		       unsigned nfds, int flags);

#define UNIX_SOCK_MAX_FDS 8 /* the most descriptors one unix_sock_recv() makes room for */

/*
 * The file descriptors that came with received messages (SCM_RIGHTS): @fd[0..n) are the
 * caller's to use or close (one it takes over it may set to -1); @max (at most
 * UNIX_SOCK_MAX_FDS) is how many it accepts. @lost
 * says that more came: each one beyond @max was closed at once, or the kernel dropped them
 * for want of room (MSG_CTRUNC). Start from {.max = N} (n 0, lost false).
 */
struct unix_sock_fds {
	int fd[UNIX_SOCK_MAX_FDS];
	unsigned n, max;
	bool lost;
};

/*
 * One recvmsg() on the non-blocking socket @sock into @buf (at most @len bytes), with the
 * descriptors sent along: received close-on-exec, appended to @fds (room for @fds->max in
 * one call; the rest is lost, see above). On every return, error or not, what @fds holds is
 * the caller's: it closes them on its error paths (unix_sock_fds_close()). @trunc (may be
 * NULL) tells whether the datagram was longer than @len (MSG_TRUNC: the rest is gone).
 * Returns the bytes received (> 0), 0 when the peer closed the connection, -EAGAIN when
 * nothing is waiting (also after EINTR), or another -errno.
 */
ssize_t unix_sock_recv(int sock, void *buf, size_t len, struct unix_sock_fds *fds, bool *trunc);

/* Close every descriptor @fds holds (an entry the caller took and set to -1 is skipped)
 * and forget them (n 0, lost false; max kept). */
void unix_sock_fds_close(struct unix_sock_fds *fds);

#endif /* TIDE_SRC_UNIX_SOCK_H */
