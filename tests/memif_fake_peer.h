/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * For the memif tests that play the peer's side of the control protocol themselves
 * (test_memif_hostile_client.c, test_memif_zc.c): one message received and decoded.
 */
#ifndef TIDE_TEST_MEMIF_FAKE_PEER_H
#define TIDE_TEST_MEMIF_FAKE_PEER_H

#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "memif_msg.h"
#include "memif_util.h"

/*
 * One message from the non-blocking control socket @sock, decoded into @m (a message of
 * another size, or one that does not decode, fails the test), with the fd that came with
 * it in *@fd (-1: none).
 * Returns 1 with a message, 0 when nothing is waiting, -1 when the socket closed or failed.
 */
static inline int mt_recv_msg(int sock, struct memif_msg *m, int *fd)
{
	uint8_t buf[MEMIF_MSG_SIZE];
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = {.iov_base = buf, .iov_len = sizeof(buf)};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			    .msg_controllen = sizeof(cbuf)};
	ssize_t n = recvmsg(sock, &mh, MSG_DONTWAIT);

	*fd = -1;
	MT_CHECK(n <= 0 || n == MEMIF_MSG_SIZE);
	if (n > 0) {
		struct cmsghdr *c = CMSG_FIRSTHDR(&mh);

		if (c != NULL && c->cmsg_type == SCM_RIGHTS)
			memcpy(fd, CMSG_DATA(c), sizeof(int));
		MT_CHECK(memif_msg_decode(buf, (size_t)n, m, NULL) == 0);
		return 1;
	}
	return n < 0 && errno == EAGAIN ? 0 : -1;
}

#endif /* TIDE_TEST_MEMIF_FAKE_PEER_H */
