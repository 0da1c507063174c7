/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Helpers of the tests that speak a control protocol over a UNIX socket themselves (memif,
 * vhost-user): a check that ends the test, and one message sent with file descriptors.
 */
#ifndef TIDE_TEST_SOCK_UTIL_H
#define TIDE_TEST_SOCK_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define SU_CHECK(c)                                                                                \
	do {                                                                                       \
		if (!(c)) {                                                                        \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c);      \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

#define SU_MAX_FDS 16

/* Send @len bytes on @sock with @nfds (0..SU_MAX_FDS) fds as SCM_RIGHTS; sendmsg()'s result. */
static inline ssize_t su_sendmsg(int sock, const void *buf, size_t len, const int *fds,
				 unsigned nfds)
{
	char cbuf[CMSG_SPACE(sizeof(int) * SU_MAX_FDS)];
	struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};

	SU_CHECK(nfds <= SU_MAX_FDS);
	if (nfds) {
		struct cmsghdr *c;

		memset(cbuf, 0, sizeof(cbuf));
		mh.msg_control = cbuf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
	}
	return sendmsg(sock, &mh, MSG_NOSIGNAL);
}

#endif
