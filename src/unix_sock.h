/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * UNIX control sockets of the drivers that serve a peer on a path (memif, vhost-user):
 * the address, and a listener that takes over the socket file of a process that died.
 * Internal; control thread only.
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

#endif /* TIDE_SRC_UNIX_SOCK_H */
