/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * memif control plane: the control socket, the handshake of both roles, regions and rings,
 * link up and down. Runs only in tide_port_poll_ctl() (and start/stop/close) on the control
 * thread; every socket is non-blocking, so a poll never waits for the peer.
 *
 * The protocol rules themselves (sizes, order, fd counts, ranges) are checked by
 * memif_msg.c; this file adds what needs the operating system or the port: the id and
 * secret, the region files (a sealed memfd at least as large as announced), the mappings and
 * the ring cookies. Any violation disconnects the peer with a reason and counts it; the
 * port then waits for (server) or retries (client) a new connection.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "memif.h"
#include "osutil.h"
#include "quiesce.h"
#include "unix_sock.h"

static int sock_addr(const struct memif_port *mp, struct sockaddr_un *sa, socklen_t *len)
{
	*len = unix_sock_addr(mp->path, mp->abstract, sa);
	return 0;
}

/* ---- queues: publish and quiesce ---- */

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

/*
 * Take every queue off the shared memory (quiesce_take(): live = 0, the barrier that pairs
 * with memif_enter()'s store of busy then load of live, the wait for busy == 0). An Rx queue
 * has two entries: the bursts (busy) and the interrupt calls of memif.c (ibusy).
 */
static void quiesce(struct memif_port *mp)
{
	struct tide_port *p = mp->port;
	struct quiesce_slot s[3 * TIDE_MAX_QUEUES]; /* nb_rxq, nb_txq <= TIDE_MAX_QUEUES */
	unsigned n = 0;

	for (unsigned i = 0; i < p->nb_rxq; i++)
		if (p->rxq[i]) {
			struct memif_rxq *q = (struct memif_rxq *)p->rxq[i];

			s[n++] = (struct quiesce_slot){&q->live, &q->ibusy, NULL};
			s[n++] = (struct quiesce_slot){&q->live, &q->busy, &q->fault};
		}
	for (unsigned i = 0; i < p->nb_txq; i++)
		if (p->txq[i]) {
			struct memif_txq *q = (struct memif_txq *)p->txq[i];

			s[n++] = (struct quiesce_slot){&q->live, &q->busy, &q->fault};
		}
	quiesce_take(p->name, mp->fence, s, n);
}

static void qring_set(struct memif_port *mp, struct memif_qring *r, const struct memif_ringinfo *ri)
{
	memset(r, 0, sizeof(*r));
	r->ring = (struct memif_ring *)(mp->rbase[ri->region] + ri->offset);
	r->size = (uint16_t)(1u << ri->log2);
	r->mask = (uint16_t)(r->size - 1);
	r->efd = ri->efd;
	/* Copy mode, client: the ring's own buffers, slot after slot, in region 0. */
	r->buf0 = mp->rbase[0] + ri->boff;
	r->boff0 = (uint32_t)ri->boff;
	r->rbase = mp->rbase;
	r->lim.region_size = mp->rsize;
	r->lim.n_regions = mp->nreg;
	/* Client: the length of one of our own buffers. Server: the client chose its buffer
	 * size (libmemif and DPDK: 16 bits); the region bounds where a descriptor may point. */
	r->lim.buffer_size = mp->role == MEMIF_ROLE_SERVER ? UINT16_MAX : mp->bufsize;
	r->lim.max_chain = mp->max_chain < r->size ? mp->max_chain : r->size;
}

/*
 * The link is up: give each queue its ring and publish the generation (release: pairs with
 * the acquire load of live in memif_enter(); the ring pointers are visible before it).
 */
static void link_up(struct memif_port *mp)
{
	struct tide_port *p = mp->port;
	int rx_dir = mp->role == MEMIF_ROLE_SERVER ? MEMIF_DIR_C2S : MEMIF_DIR_S2C;
	unsigned n_rx = rx_dir == MEMIF_DIR_C2S ? mp->n_c2s : mp->n_s2c;
	unsigned n_tx = rx_dir == MEMIF_DIR_C2S ? mp->n_s2c : mp->n_c2s;
	uint32_t gen = ++mp->gen;

	if (gen == 0 || gen >= MEMIF_SEEN_FAULT) /* never a "seen" marker */
		gen = mp->gen = 1;
	for (unsigned i = 0; i < p->nb_rxq && i < n_rx; i++) {
		struct memif_rxq *q = (struct memif_rxq *)p->rxq[i];

		qring_set(mp, &q->r, &mp->ring[rx_dir][i]);
		/* Copy-mode client: every S2C slot's buffer is posted now, not at the first Rx
		 * burst ([S2C-head], release). The server zeroes head and tail when it accepts
		 * the connect (libmemif does), so not earlier; and a server that answers our
		 * first Tx before we post finds no buffer: libmemif's icmp_responder then
		 * treats the request as zero-copy, rewrites it in place and answers it twice
		 * rewritten. The worker's resync publishes the same head. */
		if (mp->role == MEMIF_ROLE_CLIENT && !mp->zc)
			memif_publish(&q->r.ring->head, (uint16_t)q->r.size);
		/* The receiver of a ring owns its mask flag: ours polled (no kicks) unless the
		 * application asked for interrupts. */
		if (__atomic_load_n(&q->intr, __ATOMIC_RELAXED))
			__atomic_fetch_and(&q->r.ring->flags, (uint16_t)~MEMIF_RING_FLAG_MASK_INT,
					   __ATOMIC_RELEASE);
		else
			__atomic_fetch_or(&q->r.ring->flags, MEMIF_RING_FLAG_MASK_INT,
					  __ATOMIC_RELEASE);
		__atomic_store_n(&q->live, gen, __ATOMIC_RELEASE);
	}
	for (unsigned i = 0; i < p->nb_txq && i < n_tx; i++) {
		struct memif_txq *q = (struct memif_txq *)p->txq[i];

		qring_set(mp, &q->r, &mp->ring[!rx_dir][i]);
		__atomic_store_n(&q->live, gen, __ATOMIC_RELEASE);
	}
	mp->connects++;
	mp->retry_ns = MEMIF_RETRY_NS;
	mp->last_err = 0;
	__atomic_store_n(&mp->up, 1, __ATOMIC_RELAXED);
	tide_port_link_changed(p);
	tide_log(TIDE_LOG_NOTICE, p->name, "link up: '%s', %u C2S and %u S2C rings of %u slots",
		 mp->peer_name, mp->n_c2s, mp->n_s2c,
		 1u << mp->ring[MEMIF_DIR_C2S][0].log2);
}

/* ---- tear down ---- */

static void free_regions(struct memif_port *mp)
{
	for (unsigned i = 0; i < MEMIF_MAX_REGIONS; i++) {
		struct memif_region *r = &mp->reg[i];

		if (r->mapped && r->addr != NULL)
			munmap(r->addr, r->size);
		/* Zero-copy regions are pool memory: neither mapped nor owned here. */
		if (r->mapped || mp->role == MEMIF_ROLE_SERVER)
			os_close_fd(&r->fd);
		r->fd = -1;
		r->addr = NULL;
		r->size = 0;
		r->mapped = false;
		mp->rbase[i] = NULL;
		mp->rsize[i] = 0;
	}
	mp->nreg = 0;
	for (unsigned d = 0; d < 2; d++)
		for (unsigned i = 0; i < MEMIF_MAX_RINGS; i++) {
			if (mp->ring[d][i].present)
				os_close_fd(&mp->ring[d][i].efd);
			mp->ring[d][i].present = false;
			mp->ring[d][i].efd = -1;
		}
}

int memif_send_on(int sock, const struct memif_msg *m, int fd)
{
	uint8_t buf[MEMIF_MSG_SIZE];
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = {.iov_base = buf, .iov_len = sizeof(buf)};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};

	if (memif_msg_encode(m, buf) < 0)
		return -EINVAL;
	if (fd >= 0) {
		struct cmsghdr *c;

		memset(cbuf, 0, sizeof(cbuf));
		mh.msg_control = cbuf;
		mh.msg_controllen = sizeof(cbuf);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	if (sendmsg(sock, &mh, MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)sizeof(buf))
		return -errno ? -errno : -EIO;
	return 0;
}

static int send_msg(struct memif_port *mp, const struct memif_msg *m, int fd)
{
	return memif_send_on(mp->cfd, m, fd);
}

/* ---- zero-copy quarantine (memif.h) ---- */

/* Has the peer closed the control socket @fd? What it still sent is read and dropped. */
static bool peer_closed(int fd)
{
	for (int i = 0; i < 16; i++) {
		struct memif_msg m;
		const char *why;
		int mfd, rc = memif_recv_on(fd, &m, &mfd, &why);

		if (rc == 0)
			return false;
		if (rc == -1)
			return true;
		if (rc == 1 && mfd >= 0)
			close(mfd);
	}
	return false;
}

/* The link of a zero-copy connection went down: its buffers wait, the socket stays open. */
static void zq_begin(struct memif_port *mp)
{
	os_close_fd(&mp->zq_fd);
	mp->zq_fd = mp->cfd;
	mp->cfd = -1;
	mp->zq_gen = mp->gen;
	mp->zq_close_by = os_now_ns() + MEMIF_ZQ_CLOSE_MS * 1000000ull;
	mp->zq_until = 0;
	mp->zq_active = true;
}

bool memif_zq_step(struct memif_port *mp, uint64_t now)
{
	if (!mp->zq_active)
		return false;
	if (mp->zq_fd >= 0) {
		if (!peer_closed(mp->zq_fd)) {
			if (now < mp->zq_close_by)
				return true;
			TIDE_LOG_WARN_(mp->port->name, "the peer kept its control socket open %u ms after the disconnect; its zero-copy buffers go back %u ms from now",
				       MEMIF_ZQ_CLOSE_MS, mp->zq_ms);
		}
		os_close_fd(&mp->zq_fd);
		mp->zq_until = now + (uint64_t)mp->zq_ms * 1000000u;
	}
	if (now < mp->zq_until)
		return true;
	/* Release: pairs with the workers' acquire in memif_zq_clear(). */
	__atomic_store_n(&mp->zq_clear, mp->zq_gen, __ATOMIC_RELEASE);
	mp->zq_active = false;
	return false;
}

/*
 * Client, link going down by our choice (port stop): give the server up to
 * MEMIF_DRAIN_NS to consume what we published on C2S before the disconnect message goes
 * out. dpdk-testpmd 22.11 as server unmaps the regions on disconnect without waiting for
 * its forwarding lcore (a core dump shows the lcore faulting on the C2S ring header's
 * head in librte_net_memif after the unmap). Draining first means the server has every
 * packet we published and its lcore polls an empty ring when the message arrives; it does
 * not close DPDK's race (measured after a txonly run on one CPU: testpmd crashed or hung
 * in 7 of 20 runs without the drain, 3 of 20 with it). The queues are quiesced.
 */
static void drain_c2s(struct memif_port *mp)
{
	struct tide_port *p = mp->port;
	uint64_t end = os_now_ns() + MEMIF_DRAIN_NS;

	if (mp->role != MEMIF_ROLE_CLIENT)
		return;
	for (unsigned i = 0; i < p->nb_txq; i++) {
		struct memif_txq *q = (struct memif_txq *)p->txq[i];

		if (q == NULL || q->seen == MEMIF_SEEN_NONE || q->seen == MEMIF_SEEN_FAULT ||
		    q->r.ring == NULL)
			continue;
		/* [C2S-tail] acquire: the server is done with the slots before tail. */
		while (__atomic_load_n(&q->r.ring->tail, __ATOMIC_ACQUIRE) != q->head &&
		       os_now_ns() < end)
			sched_yield();
	}
}

void memif_ctl_disconnect(struct memif_port *mp, const char *reason, int kind, bool send)
{
	bool was_up = mp->up, repeat;
	uint64_t now;

	if (mp->cfd < 0)
		return;
	quiesce(mp);
	if (send && was_up && kind == MEMIF_DISC_NORMAL)
		drain_c2s(mp);
	if (send) {
		struct memif_msg m = {.type = MEMIF_MSG_DISCONNECT};

		m.disconnect.code = kind != MEMIF_DISC_NORMAL;
		snprintf(m.disconnect.reason, sizeof(m.disconnect.reason), "%s", reason);
		send_msg(mp, &m, -1);
	}
	if (mp->zc && was_up)
		zq_begin(mp); /* the peer had our buffers: they wait for it to close */
	else
		os_close_fd(&mp->cfd);
	free_regions(mp);
	/* A client refused again for the same reason says it once, not at every retry. */
	repeat = !was_up && strcmp(mp->reason, reason) == 0;
	snprintf(mp->reason, sizeof(mp->reason), "%s", reason);
	__atomic_fetch_add(&mp->disconnects, 1, __ATOMIC_RELAXED);
	if (kind != MEMIF_DISC_NORMAL) {
		__atomic_fetch_add(&mp->violations, 1, __ATOMIC_RELAXED);
		if (kind == MEMIF_DISC_CTL)
			__atomic_fetch_add(&mp->ctl_errors, 1, __ATOMIC_RELAXED);
		TIDE_LOG_WARN_(mp->port->name, "%s: %s",
			       was_up ? "link down, the peer broke a rule" : "handshake failed",
			       reason);
	} else if (was_up) {
		tide_log(TIDE_LOG_NOTICE, mp->port->name, "link down: %s", reason);
	} else if (!send && !repeat) {
		/* The peer ended the handshake: a refusal (id, secret, rings...). */
		TIDE_LOG_WARN_(mp->port->name, "refused by '%s': %s",
			       mp->peer_name[0] ? mp->peer_name : "peer", reason);
	}
	__atomic_store_n(&mp->up, 0, __ATOMIC_RELAXED);
	if (was_up)
		tide_port_link_changed(mp->port);
	mp->next_msg = 0;
	/* Client: retry at once after a link that worked, back off after a failed attempt. */
	now = os_now_ns();
	if (was_up || mp->retry_ns == 0)
		mp->retry_ns = MEMIF_RETRY_NS;
	else if (mp->retry_ns < MEMIF_RETRY_MAX_NS)
		mp->retry_ns *= 2;
	mp->retry_at = now + (was_up ? 0 : mp->retry_ns);
}

/* ---- receiving ---- */

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

/*
 * A region file from the peer: a regular file at least @size bytes long that cannot shrink
 * under our mapping (a shrink would turn our loads into SIGBUS). We seal it ourselves when
 * the peer did not; a file that cannot be sealed is refused.
 */
static const char *region_check(int fd, uint64_t size)
{
	struct stat st;
	int seals;

	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return "region is not a file";
	if ((uint64_t)st.st_size < size)
		return "region file smaller than announced";
	seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0 || !(seals & F_SEAL_SHRINK)) {
		if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK) < 0)
			return "region can shrink (not a sealable memfd)";
	}
	return NULL;
}

/* ---- server ---- */

void memif_server_limits(const struct memif_port *mp, struct memif_limits *lim)
{
	const struct tide_port *p = mp->port;

	*lim = (struct memif_limits){
		.regions = MEMIF_MAX_REGIONS,
		.c2s_rings = (uint16_t)(p->nb_rxq ? p->nb_rxq : 1),
		.s2c_rings = (uint16_t)(p->nb_txq ? p->nb_txq : 1),
		.max_log2_ring_size = MEMIF_LOG2_RING_SIZE_MAX,
	};
}

static void server_hello(struct memif_port *mp)
{
	struct memif_limits lim;
	struct memif_msg m;

	memif_server_limits(mp, &lim);
	memif_conn_init(&mp->conn, MEMIF_ROLE_SERVER, &lim);
	memif_msg_hello_from_limits(&m, &lim, mp->ifname);
	memif_conn_sent(&mp->conn, MEMIF_MSG_HELLO);
	if (send_msg(mp, &m, -1) < 0)
		memif_ctl_disconnect(mp, "cannot send hello", MEMIF_DISC_NORMAL, false);
}

void memif_refuse(int fd, const char *reason)
{
	struct memif_msg m = {.type = MEMIF_MSG_DISCONNECT};

	snprintf(m.disconnect.reason, sizeof(m.disconnect.reason), "%s", reason);
	memif_send_on(fd, &m, -1);
	close(fd);
}

void memif_server_take(struct memif_port *mp, int fd)
{
	if (mp->cfd >= 0) {
		/* One connection per interface; tell the newcomer why it is refused. */
		memif_refuse(fd, "already connected");
		return;
	}
	mp->cfd = fd;
	mp->peer_name[0] = '\0';
	mp->hs_deadline = os_now_ns() + (uint64_t)mp->hs_timeout_ms * 1000000u;
	server_hello(mp);
}

static void server_handle(struct memif_port *mp, const struct memif_msg *m, int fd);

void memif_server_adopt(struct memif_port *mp, int fd, const struct memif_conn *conn,
			const struct memif_msg *init, uint64_t deadline)
{
	mp->cfd = fd;
	mp->peer_name[0] = '\0';
	mp->hs_deadline = deadline;
	mp->conn = *conn;
	/* The socket advertised the largest ring counts of its ports; this one's apply. */
	memif_server_limits(mp, &mp->conn.limits);
	server_handle(mp, init, -1);
}

/* Map every region and check every ring; the answer to connect. */
static const char *server_map(struct memif_port *mp)
{
	mp->nreg = mp->conn.n_regions;
	for (unsigned i = 0; i < mp->nreg; i++) {
		struct memif_region *r = &mp->reg[i];
		void *a = mmap(NULL, r->size, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, 0);

		if (a == MAP_FAILED)
			return "cannot map region";
		r->addr = a;
		r->mapped = true;
		mp->rbase[i] = a;
		mp->rsize[i] = r->size;
	}
	mp->n_c2s = mp->conn.n_rings[MEMIF_DIR_C2S];
	mp->n_s2c = mp->conn.n_rings[MEMIF_DIR_S2C];
	for (unsigned d = 0; d < 2; d++)
		for (unsigned i = 0; i < mp->conn.n_rings[d]; i++) {
			const struct memif_ringinfo *ri = &mp->ring[d][i];
			struct memif_ring *ring = (struct memif_ring *)(mp->rbase[ri->region] +
									ri->offset);
			const char *why = NULL;

			if (memif_ring_check_cookie(ring, &why) < 0)
				return why;
			/* Single 16-bit stores: the peer must never see a torn index. */
			__atomic_store_n(&ring->head, 0, __ATOMIC_RELAXED);
			__atomic_store_n(&ring->tail, 0, __ATOMIC_RELAXED);
		}
	return NULL;
}

static void server_handle(struct memif_port *mp, const struct memif_msg *m, int fd)
{
	struct memif_msg ans = {.type = MEMIF_MSG_ACK};
	const char *why = NULL;

	switch (m->type) {
	case MEMIF_MSG_INIT:
		if (m->init.id != mp->id)
			why = "ID not found";
		else if (memif_msg_secret_check(mp->secret, &m->init, &why) < 0)
			break;
		snprintf(mp->peer_name, sizeof(mp->peer_name), "%s", m->init.name);
		break;
	case MEMIF_MSG_ADD_REGION:
		why = region_check(fd, m->add_region.size);
		mp->reg[m->add_region.index].fd = fd;
		mp->reg[m->add_region.index].size = m->add_region.size;
		break;
	case MEMIF_MSG_ADD_RING: {
		int d = (m->add_ring.flags & MEMIF_RING_FLAG_C2S) ? MEMIF_DIR_C2S : MEMIF_DIR_S2C;
		struct memif_ringinfo *ri = &mp->ring[d][m->add_ring.index];

		ri->present = true;
		ri->region = m->add_ring.region;
		ri->offset = m->add_ring.offset;
		ri->log2 = m->add_ring.log2_ring_size;
		ri->efd = fd;
		if (ri->log2 == 0)
			why = "ring of one slot";
		break;
	}
	case MEMIF_MSG_CONNECT:
		why = server_map(mp);
		ans.type = MEMIF_MSG_CONNECTED;
		snprintf(ans.connected.if_name, sizeof(ans.connected.if_name), "%s", mp->ifname);
		if (why == NULL && mp->peer_name[0] == '\0')
			snprintf(mp->peer_name, sizeof(mp->peer_name), "%s", m->connect.if_name);
		break;
	case MEMIF_MSG_DISCONNECT:
		memif_ctl_disconnect(mp, m->disconnect.reason[0] ? m->disconnect.reason
								 : "peer disconnected", MEMIF_DISC_NORMAL, false);
		return;
	default:
		break;
	}
	if (why != NULL) {
		memif_ctl_disconnect(mp, why, MEMIF_DISC_CTL, true);
		return;
	}
	memif_conn_sent(&mp->conn, ans.type);
	if (send_msg(mp, &ans, -1) < 0) {
		memif_ctl_disconnect(mp, "cannot answer", MEMIF_DISC_NORMAL, false);
		return;
	}
	if (ans.type == MEMIF_MSG_CONNECTED)
		link_up(mp);
}

/* ---- client ---- */

/* Region 0 and the eventfds for the plan negotiated from hello. */
static const char *client_regions(struct memif_port *mp)
{
	struct tide_port *p = mp->port;
	unsigned nrings = mp->n_c2s + mp->n_s2c, slots = 1u << mp->log2;
	uint64_t rings = (uint64_t)nrings * memif_ring_bytes(mp->log2), size, boff;
	struct memif_region *r0 = &mp->reg[0];
	uint8_t *a;
	int fd;

	rings = (rings + 63) & ~(uint64_t)63;
	size = rings + (mp->zc ? 0 : (uint64_t)nrings * slots * mp->bufsize);
	if (size > UINT32_MAX)
		return "region 0 above 4 GiB (fewer rings or smaller buffers)";
	fd = memfd_create("memif", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return "memfd_create failed";
	if (ftruncate(fd, (off_t)size) < 0 || fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK) < 0 ||
	    (a = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
		close(fd);
		return "cannot create region 0";
	}
	*r0 = (struct memif_region){.addr = a, .size = size, .fd = fd, .mapped = true};
	mp->rbase[0] = a;
	mp->rsize[0] = size;
	mp->nreg = 1;
	boff = rings;
	for (unsigned g = 0; g < nrings; g++) {
		int d = g < mp->n_c2s ? MEMIF_DIR_C2S : MEMIF_DIR_S2C;
		unsigned idx = g < mp->n_c2s ? g : g - mp->n_c2s;
		struct memif_ringinfo *ri = &mp->ring[d][idx];
		struct memif_ring *ring;

		ri->present = true;
		ri->region = 0;
		ri->offset = (uint32_t)(g * memif_ring_bytes(mp->log2));
		ri->log2 = mp->log2;
		ri->boff = boff;
		ri->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (ri->efd < 0)
			return "eventfd failed";
		ring = (struct memif_ring *)(a + ri->offset);
		ring->cookie = MEMIF_COOKIE;
		/* The receiver owns the flag: the server sets it on C2S if it polls; we set ours
		 * on S2C at link up (link_up()). A masked C2S ring would never wake an
		 * interrupt-mode server (libmemif's default). */
		ring->flags = 0;
		for (unsigned j = 0; j < slots && !mp->zc; j++) {
			ring->desc[j].region = 0;
			ring->desc[j].offset = (uint32_t)(boff + (uint64_t)j * mp->bufsize);
			ring->desc[j].length = mp->bufsize;
		}
		boff += (uint64_t)slots * mp->bufsize;
	}
	if (mp->zc) {
		/* Every distinct Rx pool becomes one region after region 0. */
		for (unsigned i = 0; i < p->nb_rxq; i++) {
			struct memif_rxq *q = (struct memif_rxq *)p->rxq[i];
			struct tide_pool_mem mi;
			unsigned k;

			for (k = 1; k < mp->nreg; k++)
				if (mp->rbase[k] == (uint8_t *)q->pool->elt_base)
					break;
			q->zreg = (uint16_t)k;
			if (k < mp->nreg)
				continue;
			tide_pool_mem_info(q->pool, &mi);
			mp->reg[k] = (struct memif_region){.addr = mi.base, .size = mi.len,
							   .fd = mi.fd, .mapped = false};
			mp->rbase[k] = mi.base;
			mp->rsize[k] = mi.len;
			mp->nreg++;
		}
		if (mp->nreg > mp->conn.limits.regions)
			return "the server accepts too few regions for zero-copy";
		for (unsigned i = 0; i < p->nb_txq; i++) {
			struct memif_txq *q = (struct memif_txq *)p->txq[i];

			q->nzpool = 0;
			for (unsigned k = 1; k < mp->nreg && k <= MEMIF_MAX_ZC_POOLS; k++)
				for (unsigned j = 0; j < p->nb_rxq; j++) {
					struct memif_rxq *rq = (struct memif_rxq *)p->rxq[j];

					if (rq->zreg == k) {
						q->zpool[k - 1] = rq->pool;
						q->nzpool = k;
						break;
					}
				}
		}
	}
	return NULL;
}

/* The plan: init, regions, C2S rings, S2C rings, connect. Message @i of it. */
static void client_msg(struct memif_port *mp, unsigned i, struct memif_msg *m, int *fd)
{
	unsigned nr = mp->nreg;

	memset(m, 0, sizeof(*m));
	*fd = -1;
	if (i == 0) {
		m->type = MEMIF_MSG_INIT;
		m->init.version = MEMIF_VERSION;
		m->init.id = mp->id;
		m->init.mode = MEMIF_MODE_ETHERNET;
		snprintf(m->init.secret, sizeof(m->init.secret), "%s", mp->secret);
		snprintf(m->init.name, sizeof(m->init.name), "%s", mp->ifname);
	} else if (i <= nr) {
		m->type = MEMIF_MSG_ADD_REGION;
		m->add_region.index = (uint16_t)(i - 1);
		m->add_region.size = mp->reg[i - 1].size;
		*fd = mp->reg[i - 1].fd;
	} else if (i <= nr + mp->n_c2s + mp->n_s2c) {
		unsigned g = i - nr - 1;
		int d = g < mp->n_c2s ? MEMIF_DIR_C2S : MEMIF_DIR_S2C;
		unsigned idx = g < mp->n_c2s ? g : g - mp->n_c2s;
		const struct memif_ringinfo *ri = &mp->ring[d][idx];

		m->type = MEMIF_MSG_ADD_RING;
		m->add_ring.flags = d == MEMIF_DIR_C2S ? MEMIF_RING_FLAG_C2S : 0;
		m->add_ring.index = (uint16_t)idx;
		m->add_ring.region = ri->region;
		m->add_ring.offset = ri->offset;
		m->add_ring.log2_ring_size = ri->log2;
		*fd = ri->efd;
	} else {
		m->type = MEMIF_MSG_CONNECT;
		snprintf(m->connect.if_name, sizeof(m->connect.if_name), "%s", mp->ifname);
	}
}

static void client_send_next(struct memif_port *mp)
{
	struct memif_msg m;
	int fd;

	client_msg(mp, mp->next_msg++, &m, &fd);
	if (memif_conn_sent(&mp->conn, m.type) < 0)
		memif_ctl_disconnect(mp, "cannot send", MEMIF_DISC_NORMAL, false);
	else if (send_msg(mp, &m, fd) < 0)
		/* libmemif closes without a reason when it refuses an id. */
		memif_ctl_disconnect(mp, "the peer closed the connection (unknown id?)",
				     MEMIF_DISC_NORMAL, false);
}

static void client_handle(struct memif_port *mp, const struct memif_msg *m)
{
	struct tide_port *p = mp->port;
	const char *why;

	switch (m->type) {
	case MEMIF_MSG_HELLO:
		snprintf(mp->peer_name, sizeof(mp->peer_name), "%s", m->hello.name);
		mp->n_c2s = (uint16_t)(p->nb_txq ? p->nb_txq : 1);
		mp->n_s2c = (uint16_t)(p->nb_rxq ? p->nb_rxq : 1);
		if (mp->n_c2s > mp->conn.limits.c2s_rings)
			mp->n_c2s = mp->conn.limits.c2s_rings;
		if (mp->n_s2c > mp->conn.limits.s2c_rings)
			mp->n_s2c = mp->conn.limits.s2c_rings;
		if (mp->log2 > mp->conn.limits.max_log2_ring_size) {
			memif_ctl_disconnect(mp, "ring size above the server's maximum", MEMIF_DISC_NORMAL, true);
			return;
		}
		why = client_regions(mp);
		if (why != NULL) {
			memif_ctl_disconnect(mp, why, MEMIF_DISC_NORMAL, true);
			return;
		}
		mp->next_msg = 0;
		client_send_next(mp);
		break;
	case MEMIF_MSG_ACK:
		client_send_next(mp);
		break;
	case MEMIF_MSG_CONNECTED:
		link_up(mp);
		break;
	case MEMIF_MSG_DISCONNECT:
		memif_ctl_disconnect(mp, m->disconnect.reason[0] ? m->disconnect.reason
								 : "peer disconnected", MEMIF_DISC_NORMAL, false);
		break;
	default:
		break;
	}
}

static void client_try(struct memif_port *mp)
{
	struct sockaddr_un sa;
	socklen_t len;
	uint64_t now = os_now_ns();
	int fd;

	if (now < mp->retry_at)
		return;
	if (mp->retry_ns == 0)
		mp->retry_ns = MEMIF_RETRY_NS;
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd >= 0) {
		sock_addr(mp, &sa, &len);
		if (connect(fd, (struct sockaddr *)&sa, len) == 0) {
			mp->cfd = fd;
			mp->peer_name[0] = '\0';
			mp->hs_deadline = now + (uint64_t)mp->hs_timeout_ms * 1000000u;
			memif_conn_init(&mp->conn, MEMIF_ROLE_CLIENT, NULL);
			return;
		}
	}
	/* No server yet: say so once per cause, and back off. */
	if (errno != mp->last_err) {
		mp->last_err = errno;
		tide_log(TIDE_LOG_NOTICE, mp->port->name, "socket=%s%s: %s; retrying",
			 mp->abstract ? "@" : "", mp->path, strerror(errno));
	}
	if (fd >= 0)
		close(fd);
	mp->retry_at = now + mp->retry_ns;
	if (mp->retry_ns < MEMIF_RETRY_MAX_NS)
		mp->retry_ns *= 2;
}

/* ---- entry points ---- */

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
		client_try(mp); /* not during a quarantine: the old buffers are still held */
	/* Lock-step protocol: a handful of messages per connection; take what is there. */
	while (mp->cfd >= 0 && (rc = recv_msg(mp, &m, &fd)) > 0) {
		if (mp->role == MEMIF_ROLE_SERVER)
			server_handle(mp, &m, fd);
		else
			client_handle(mp, &m);
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
	while (memif_zq_step(mp, os_now_ns())) {
		struct timespec ms = {0, 1000000};

		nanosleep(&ms, NULL);
	}
	if (mp->role == MEMIF_ROLE_SERVER && mp->started)
		memif_listener_leave(mp);
	mp->started = false;
}
