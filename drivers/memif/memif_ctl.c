/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * memif control plane: messages on the control socket and the entry points. Runs only in
 * tide_port_poll_ctl() (and start/stop/close) on the control thread; every socket is
 * non-blocking, so a poll never waits for the peer. The handshake of each role is in
 * memif_server.c and memif_client.c, link up and down in memif_link.c (memif_ctl.h).
 *
 * The protocol rules themselves (sizes, order, fd counts, ranges) are checked by
 * memif_msg.c; the control plane adds what needs the operating system or the port: the id
 * and secret, the region files (a sealed memfd at least as large as announced), the
 * mappings and the ring cookies. Any violation disconnects the peer with a reason and
 * counts it; the port then waits for (server) or retries (client) a new connection.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "log.h"
#include "osutil.h"
#include "memif_ctl.h"
#include "quiesce.h"
#include "unix_sock.h"

/* ---- messages ---- */

int memif_send_on(int sock, const struct memif_msg *m, int fd)
{
	uint8_t buf[MEMIF_MSG_SIZE];
	struct iovec iov = {.iov_base = buf, .iov_len = sizeof(buf)};
	ssize_t n;

	if (memif_msg_encode(m, buf) < 0)
		return -EINVAL;
	n = unix_sock_send(sock, &iov, 1, &fd, fd >= 0, MSG_DONTWAIT);
	if (n != (ssize_t)sizeof(buf))
		return n < 0 ? (int)n : -EIO;
	return 0;
}

int memif_ctl_send(struct memif_port *mp, const struct memif_msg *m, int fd)
{
	return memif_send_on(mp->cfd, m, fd);
}

#define MEMIF_MAX_FDS 4 /* more than one is already a violation; room to see and close them */

int memif_recv_on(int sock, struct memif_msg *m, int *fd, const char **why)
{
	uint8_t buf[MEMIF_MSG_SIZE + 1];
	struct unix_sock_fds fds = {.max = MEMIF_MAX_FDS};
	bool trunc;
	ssize_t len = unix_sock_recv(sock, buf, sizeof(buf), &fds, &trunc);

	*why = NULL;
	if (len == -EAGAIN)
		return 0;
	if (len <= 0)
		*why = len == 0 ? "peer closed the connection" : strerror((int)-len);
	else if (fds.lost)
		*why = "too many file descriptors";
	else if (trunc)
		*why = "message too long";
	else if (memif_msg_decode(buf, (size_t)len, m, why) == 0 && fds.n > 1)
		*why = "unexpected file descriptor";
	if (*why != NULL) {
		unix_sock_fds_close(&fds);
		return len <= 0 ? -1 : -2;
	}
	*fd = fds.n ? fds.fd[0] : -1;
	return 1;
}

/*
 * Receive one message. Returns 1 with the message decoded, 0 when nothing is waiting, or
 * -1 when the link went down (peer gone, or a violation; handled here).
 */
static int recv_msg(struct memif_port *mp, struct memif_msg *m, int *fd)
{
	const char *why;
	int rc = memif_recv_on(mp->cfd, m, fd, &why);

	if (rc == 1 && memif_conn_step(&mp->conn, m, *fd >= 0, &why) < 0) {
		if (*fd >= 0)
			close(*fd);
		rc = -2;
	}
	if (rc == -1)
		memif_ctl_disconnect(mp, why, MEMIF_DISC_NORMAL, false);
	else if (rc == -2)
		memif_ctl_disconnect(mp, why, MEMIF_DISC_CTL, true);
	return rc < 0 ? -1 : rc;
}

/* ---- entry points ---- */

/* The scheme (src/quiesce.h): membarrier() when the kernel has it, else fences. */
int memif_quiesce_setup(struct memif_port *mp)
{
	int kind = quiesce_kind();

	if (mp->quiesce == MEMIF_QUIESCE_MEMBARRIER && kind == 0) {
		TIDE_LOG_ERR_(mp->port->name, "quiesce=membarrier: the kernel refuses membarrier() (use quiesce=fence or auto)");
		return -ENOSYS;
	}
	mp->fence = mp->quiesce == MEMIF_QUIESCE_FENCE || kind == 0;
	if (mp->fence && mp->quiesce == MEMIF_QUIESCE_AUTO)
		TIDE_LOG_INFO_(mp->port->name, "no membarrier(): bursts take a full fence each");
	return 0;
}

int memif_ctl_poll(struct memif_port *mp)
{
	struct tide_port *p = mp->port;
	struct memif_msg m;
	int fd, rc;

	if (!mp->started)
		return 0;
	memif_zq_step(mp, os_now_ns());
	/* A worker found a violation in shared memory. Acquire: pairs with memif_fault(). */
	for (unsigned i = 0; i < p->nb_rxq && mp->cfd >= 0; i++) {
		const char *f = __atomic_load_n(&((struct memif_rxq *)p->rxq[i])->fault,
						__ATOMIC_ACQUIRE);
		if (f)
			memif_ctl_disconnect(mp, f, MEMIF_DISC_DATA, true);
	}
	for (unsigned i = 0; i < p->nb_txq && mp->cfd >= 0; i++) {
		const char *f = __atomic_load_n(&((struct memif_txq *)p->txq[i])->fault,
						__ATOMIC_ACQUIRE);
		if (f)
			memif_ctl_disconnect(mp, f, MEMIF_DISC_DATA, true);
	}
	/* A peer that stops answering in the handshake must not hold the interface. */
	if (mp->cfd >= 0 && !mp->up && os_now_ns() > mp->hs_deadline)
		memif_ctl_disconnect(mp, "handshake timed out", MEMIF_DISC_CTL, true);
	if (mp->role == MEMIF_ROLE_SERVER)
		memif_listener_poll(mp);
	else if (mp->cfd < 0 && !mp->zq_active)
		memif_client_try(mp); /* not during a quarantine: the old buffers are still held */
	/* Lock-step protocol: a handful of messages per connection; take what is there. */
	while (mp->cfd >= 0 && (rc = recv_msg(mp, &m, &fd)) > 0) {
		if (mp->role == MEMIF_ROLE_SERVER)
			memif_server_handle(mp, &m, fd);
		else
			memif_client_handle(mp, &m);
	}
	return 0;
}

int memif_ctl_start(struct memif_port *mp)
{
	int rc;

	mp->cfd = -1;
	mp->retry_at = 0;
	mp->retry_ns = 0;
	mp->last_err = 0;
	rc = memif_quiesce_setup(mp);
	if (rc < 0)
		return rc;
	if (mp->role == MEMIF_ROLE_CLIENT) {
		mp->started = true;
		return 0;
	}
	rc = memif_listener_join(mp);
	if (rc < 0)
		return rc;
	mp->started = true;
	return 0;
}

int memif_listen(const struct memif_port *mp)
{
	/* A socket file left by a process that died is taken over (unix_sock.h). */
	int fd = unix_sock_listen(mp->path, mp->abstract, SOCK_SEQPACKET, 8);

	if (fd < 0)
		TIDE_LOG_ERR_(mp->port->name, "socket=%s: cannot listen: %s", mp->path,
			      strerror(-fd));
	return fd;
}

void memif_ctl_stop(struct memif_port *mp)
{
	memif_ctl_disconnect(mp, "port stopped", MEMIF_DISC_NORMAL, true);
	/* A stopped port holds no buffer: wait out a zero-copy quarantine (bounded by
	 * MEMIF_ZQ_CLOSE_MS + zc_quarantine). */
	while (memif_zq_step(mp, os_now_ns()))
		os_sleep_ns(1000000);
	if (mp->role == MEMIF_ROLE_SERVER && mp->started)
		memif_listener_leave(mp);
	mp->started = false;
}
