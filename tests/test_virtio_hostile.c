/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The virtio frontend against a vhost-user backend of our own that breaks one rule per
 * case in what it writes into the used rings. The backend runs in this process: it answers
 * the handshake on the socket and then writes the rings at the addresses the frontend gave
 * (ours, since it is the same process). Each case: the port faults with the reason in the
 * log, the fault is counted (virtio_faults, the queue's errors), the connection is dropped,
 * the link goes down, and after stop every buffer is back in the pool.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <tide/lcore.h>
#include <tide/log.h>
#include <tide/offload.h>
#include <tide/port.h>

#include "testutil.h"
#include "unix_sock.h"
#include "vhost_user.h"
#include "virtio_ring.h"
#include "proc_util.h"
#include "tmp_util.h"

static char dir[64], sock[96];
static unsigned ndesc = 256; /* each queue's ring */
/* The offload cases' ring layout: packed virtqueues (packed=yes, offered) when set. */
static bool packed;

/* ---- log capture (the control thread logs the reason) ---- */

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static char logbuf[8192];

static void capture(enum tide_log_level l, const char *c, const char *m, void *u)
{
	(void)l;
	(void)c;
	(void)u;
	pthread_mutex_lock(&log_lock);
	strncat(logbuf, m, sizeof(logbuf) - strlen(logbuf) - 2);
	strcat(logbuf, "\n");
	pthread_mutex_unlock(&log_lock);
}

static bool logged(const char *what)
{
	bool found;

	pthread_mutex_lock(&log_lock);
	found = strstr(logbuf, what) != NULL;
	pthread_mutex_unlock(&log_lock);
	return found;
}

/* ---- the backend ---- */

struct backend {
	int lfd, cfd;
	uint64_t features, proto;
	uint64_t acked;	    /* SET_FEATURES */
	uint32_t nack;	    /* answer this request's REPLY_ACK with an error */
	uint32_t bad_reply; /* answer this request with a 4-byte payload */
	struct vring_desc *desc[2];
	struct vring_avail *avail[2];
	struct vring_used *used[2];
	unsigned num[2];
	bool kicked[2];
};

static void reply_u64(struct backend *b, uint32_t req, uint64_t v)
{
	struct {
		struct vhost_user_msg_hdr h;
		uint64_t v;
	} __attribute__((packed)) m = {{req, VHOST_USER_VERSION | VHOST_USER_REPLY, 8}, v};

	assert_int_equal(send(b->cfd, &m, sizeof(m), MSG_NOSIGNAL), sizeof(m));
}

/* One message: header, payload and any fds (closed: the rings are reachable anyway). */
static void backend_msg(struct backend *b)
{
	struct vhost_user_msg_hdr h;
	uint8_t pl[512];
	char cbuf[CMSG_SPACE(sizeof(int) * 8)];
	struct iovec iov = {&h, sizeof(h)};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			    .msg_controllen = sizeof(cbuf)};
	struct vhost_user_vring_addr ad;
	struct vhost_user_vring_state st;

	assert_int_equal(recvmsg(b->cfd, &mh, MSG_WAITALL), sizeof(h));
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
		for (size_t i = 0; CMSG_LEN((i + 1) * sizeof(int)) <= c->cmsg_len; i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			close(fd);
		}
	assert_true(h.size <= sizeof(pl));
	if (h.size)
		assert_int_equal(recv(b->cfd, pl, h.size, MSG_WAITALL), h.size);
	if (h.request == b->bad_reply) {
		struct {
			struct vhost_user_msg_hdr h;
			uint32_t v;
		} __attribute__((packed)) m = {{h.request, VHOST_USER_VERSION | VHOST_USER_REPLY, 4}, 0};

		assert_int_equal(send(b->cfd, &m, sizeof(m), MSG_NOSIGNAL), sizeof(m));
		return;
	}
	if (h.flags & VHOST_USER_NEED_REPLY)
		reply_u64(b, h.request, h.request == b->nack ? 1 : 0);
	switch (h.request) {
	case VHOST_USER_GET_FEATURES:
		reply_u64(b, h.request, b->features);
		break;
	case VHOST_USER_SET_FEATURES:
		memcpy(&b->acked, pl, sizeof(b->acked));
		break;
	case VHOST_USER_GET_PROTOCOL_FEATURES:
		reply_u64(b, h.request, b->proto);
		break;
	case VHOST_USER_SET_VRING_NUM:
		memcpy(&st, pl, sizeof(st));
		b->num[st.index] = st.num;
		break;
	case VHOST_USER_SET_VRING_ADDR:
		memcpy(&ad, pl, sizeof(ad));
		b->desc[ad.index] = (struct vring_desc *)(uintptr_t)ad.desc;
		b->avail[ad.index] = (struct vring_avail *)(uintptr_t)ad.avail;
		b->used[ad.index] = (struct vring_used *)(uintptr_t)ad.used;
		break;
	case VHOST_USER_SET_VRING_KICK: {
		uint64_t u;

		memcpy(&u, pl, 8);
		b->kicked[u & 0xff] = true;
		break;
	}
	default:
		break; /* SET_OWNER, SET_FEATURES, SET_MEM_TABLE, BASE, CALL: nothing to answer */
	}
}

/* ---- one case ---- */

struct env {
	struct tide_pool *pool;
	struct tide_port *p;
	struct tide_rxq *rxq;
	struct tide_txq *txq;
	struct backend b;
};

/* Stop (which gives every buffer back) and close the port; the pool must be full. */
static void env_close(struct env *e)
{
	assert_int_equal(tide_port_stop(e->p), 0);
	tide_port_close(e->p);
	tide_pool_cache_flush(e->pool);
	assert_pool_full(e->pool);
	tide_pool_free(e->pool);
}

/* Open and start the port (its queues with offloads @rxol / @txol), accept its connection. */
static void env_open_ol(struct env *e, uint64_t features, const char *keys, uint64_t rxol,
			uint64_t txol)
{
	struct tide_rxq_conf rc = {.sz = sizeof(rc), .offloads = rxol};
	struct tide_txq_conf tc = {.sz = sizeof(tc), .offloads = txol};
	char spec[192];
	struct tide_pktpool_opts o = {.sz = sizeof(o), .pool_flags = TIDE_POOL_F_SHARED};

	memset(e, 0, sizeof(*e));
	pthread_mutex_lock(&log_lock);
	logbuf[0] = 0;
	pthread_mutex_unlock(&log_lock);
	e->b.features = features;
	e->b.lfd = unix_sock_listen(sock, false, SOCK_STREAM, 1);
	assert_true(e->b.lfd >= 0);
	assert_int_equal(tide_pktpool_create("hostile", 1024, 0, 0, &o, &e->pool), 0);
	snprintf(spec, sizeof(spec), "virtio:path=%s,role=client%s", sock, keys);
	assert_int_equal(tide_port_open(spec, &e->p), 0);
	assert_int_equal(tide_port_configure(e->p, 1, 1), 0);
	assert_int_equal(tide_rxq_setup(e->p, 0, ndesc, e->pool, &rc), 0);
	assert_int_equal(tide_txq_setup(e->p, 0, ndesc, &tc), 0);
	e->rxq = tide_port_rxq(e->p, 0);
	e->txq = tide_port_txq(e->p, 0);
	assert_int_equal(tide_port_start(e->p), 0);
	{
		struct pollfd pf = {.fd = e->b.lfd, .events = POLLIN};

		assert_int_equal(poll(&pf, 1, 5000), 1);
	}
	e->b.cfd = accept4(e->b.lfd, NULL, NULL, SOCK_CLOEXEC); /* blocking */
	assert_true(e->b.cfd >= 0);
	/* One connection only: a reconnect after the fault finds nobody listening. */
	close(e->b.lfd);
	unlink(sock);
}

static void env_open(struct env *e, uint64_t features, const char *keys)
{
	env_open_ol(e, features, keys, 0, 0);
}

static void env_up_ol(struct env *e, uint64_t features, const char *keys, uint64_t rxol,
		      uint64_t txol)
{
	struct tide_link l;
	char pkeys[128];
	double end;

	if (packed) {
		snprintf(pkeys, sizeof(pkeys), "%s,packed=yes", keys);
		keys = pkeys;
		features |= VIRTIO_BIT(VIRTIO_F_RING_PACKED);
	}

	env_open_ol(e, features | VIRTIO_BIT(VIRTIO_F_VERSION_1), keys, rxol, txol);
	while (!e->b.kicked[0] || !e->b.kicked[1])
		backend_msg(&e->b);
	/* Poll Rx while waiting, as an application does: the first Rx burst on the live queue
	 * posts the receive buffers, and the control thread waits for that (up to 100 ms)
	 * before it lets the Tx queue go live and the link come up. */
	end = now_s() + 10;
	do {
		assert_int_equal(tide_rx_burst(e->rxq, (struct tide_mbuf *[1]){NULL}, 0), 0);
		assert_int_equal(tide_port_link_get(e->p, &l), 0);
		if (now_s() > end)
			fail_msg("link not up");
	} while (!l.up);
	if (features & VIRTIO_BIT(VIRTIO_F_RING_PACKED)) {
		/* Packed: the last of them available in the first pass (wrap counter 1). */
		struct vring_packed_desc *d = (struct vring_packed_desc *)(void *)e->b.desc[0];

		assert_int_equal(__atomic_load_n(&d[ndesc - 1].flags, __ATOMIC_ACQUIRE),
				 VRING_PACKED_DESC_F_AVAIL | VRING_DESC_F_WRITE);
		return;
	}
	assert_int_equal(__atomic_load_n(&e->b.avail[0]->idx, __ATOMIC_ACQUIRE), ndesc);
}

static void env_up(struct env *e, uint64_t features, const char *keys)
{
	env_up_ol(e, features, keys, 0, 0);
}

static void send4(struct env *e)
{
	struct tide_mbuf *m[4];

	assert_int_equal(tide_mbuf_alloc_bulk(e->pool, m, 4), 0);
	for (int i = 0; i < 4; i++)
		memset(tide_mbuf_append(m[i], 60), i, 60);
	assert_int_equal(tide_tx_burst(e->txq, m, 4), 4);
}

static void used_put(struct vring_used *u, unsigned num, uint16_t at, uint32_t id, uint32_t len)
{
	u->ring[at & (num - 1)].id = id;
	u->ring[at & (num - 1)].len = len;
}

static void used_publish(struct vring_used *u, uint16_t idx)
{
	__atomic_store_n(&u->idx, idx, __ATOMIC_RELEASE);
}

/* Poll the queue until the port faults; then the reason, the counters, the link. */
static void expect_fault(struct env *e, const char *reason, bool rx)
{
	struct tide_mbuf *pkts[32];
	struct tide_port_stats st = {.sz = sizeof(st)};
	struct tide_link l;
	double end = now_s() + 10;
	uint64_t faults = 0;
	char b;

	for (;;) {
		if (rx)
			tide_mbuf_free_bulk(pkts, tide_rx_burst(e->rxq, pkts, 32));
		else
			tide_txq_done_cleanup(e->txq, 0);
		assert_int_equal(tide_xstats_get_by_name(e->p, "virtio_faults", &faults), 0);
		assert_int_equal(tide_port_link_get(e->p, &l), 0);
		if (faults == 1 && !l.up)
			break;
		if (now_s() > end)
			fail_msg("no fault after 10 s (faults %llu, link %d); log:\n%s",
				 (unsigned long long)faults, l.up, logbuf);
		usleep(1000);
	}
	if (!logged(reason))
		fail_msg("log has no '%s':\n%s", reason, logbuf);
	assert_int_equal(tide_port_stats_get(e->p, &st), 0);
	assert_true((rx ? st.rxq[0].errors : st.txq[0].errors) >= 1);
	/* The backend's end of the connection was closed. */
	assert_int_equal(recv(e->b.cfd, &b, 1, 0), 0);
	close(e->b.cfd);
	/* Bursts on the faulted queue move nothing; stop gives every buffer back. */
	assert_int_equal(tide_rx_burst(e->rxq, pkts, 32), 0);
	env_close(e);
}

/*
 * The used-ring cases: one rule broken in what the backend writes into a used ring. Tx
 * cases (vring 1) first have four packets sent; Rx cases (vring 0) find the receive
 * buffers posted. @nb >= 0: the first Rx buffer's virtio-net header (mergeable buffers) is
 * zeroed and its num_buffers set to @nb. Each used entry's length is @len, or with
 * @past > 0 one byte more than posted descriptor @past - 1 holds, with @past < 0 exactly
 * what descriptor -@past - 1 holds (a full buffer: only then is num_buffers read, unless
 * the queue has offloads).
 */
struct used_case {
	const char *name;
	uint64_t features;
	const char *keys;
	bool rx;
	int nb;
	unsigned n;
	struct {
		uint32_t id, len;
		int past;
	} used[2];
	uint16_t idx; /* used->idx published */
	const char *reason;
	uint64_t rxol; /* Rx offloads enabled (the burst that copies each header) */
};

#define F_MRG VIRTIO_BIT(VIRTIO_NET_F_MRG_RXBUF)

static const struct used_case used_cases[] = {
    /* Tx, per-id completion: a used id beyond the queue size; the same buffer used twice. */
    {"tx_used_id_out_of_range", 0, ",in_order=no", false, -1, 1, {{9999, 0, 0}}, 1,
     "used id beyond the queue size"},
    {"tx_used_id_twice", 0, ",in_order=no", false, -1, 2, {{2, 0, 0}, {2, 0, 0}}, 2,
     "used id of a buffer not in flight"},
    /* Tx, in-order completion by count: used->idx moves past the 4 buffers made available. */
    {"tx_used_idx_jump", VIRTIO_BIT(VIRTIO_F_IN_ORDER), "", false, -1, 0, {{0}}, 5,
     "used index moved past the posted buffers"},
    /* Rx: used->idx jumps beyond the ring (more entries than buffers posted). */
    {"rx_used_idx_jump", 0, "", true, -1, 0, {{0}}, 256 + 7,
     "used index moved past the posted buffers"},
    /* Rx: a used id beyond the queue size. */
    {"rx_used_id_out_of_range", 0, "", true, -1, 1, {{256, 64, 0}}, 1,
     "used id beyond the queue size"},
    /* Rx: the same buffer used twice (the first use is a good packet). */
    {"rx_used_id_twice", 0, "", true, -1, 2, {{5, 12 + 60, 0}, {5, 12 + 60, 0}}, 2,
     "used id of a buffer not posted"},
    /* Rx: a length beyond the posted buffer; one shorter than the virtio-net header. */
    {"rx_used_len", 0, "", true, -1, 1, {{0, 0, 1}}, 1, "used length outside the posted buffer"},
    {"rx_used_len_short", 0, "", true, -1, 1, {{0, 5, 0}}, 1,
     "used length outside the posted buffer"},
    /* Rx, mergeable buffers: num_buffers beyond what is posted, and of 0. */
    {"rx_num_buffers", F_MRG, "", true, 300, 1, {{0, 0, -1}}, 1,
     "num_buffers of 0 or beyond the posted buffers"},
    {"rx_num_buffers_zero", F_MRG, "", true, 0, 1, {{0, 0, -1}}, 1,
     "num_buffers of 0 or beyond the posted buffers"},
    /* Rx, mergeable buffers: the second buffer of a packet longer than posted. */
    {"rx_mrg_second_len", F_MRG, "", true, 2, 2, {{0, 12 + 60, 0}, {1, 0, 2}}, 2,
     "used length outside the posted buffer"},
    /* The same with Rx offloads: num_buffers is taken from the header's one copy. */
    {"rx_num_buffers_ol", F_MRG, "", true, 300, 1, {{0, 12 + 60, 0}}, 1,
     "num_buffers of 0 or beyond the posted buffers", TIDE_OFFLOAD_RX_TCP_CKSUM},
    {"rx_num_buffers_zero_ol", F_MRG, "", true, 0, 1, {{0, 12 + 60, 0}}, 1,
     "num_buffers of 0 or beyond the posted buffers", TIDE_OFFLOAD_RX_TCP_CKSUM},
    {"rx_used_len_ol", 0, "", true, -1, 1, {{0, 0, 1}}, 1, "used length outside the posted buffer",
     TIDE_OFFLOAD_RX_TCP_CKSUM},
};

static void test_used(void **state)
{
	const struct used_case *c = *state;
	unsigned v = c->rx ? 0 : 1;
	struct env e;

	env_up_ol(&e, c->features, c->keys, c->rxol, 0);
	if (!c->rx)
		send4(&e);
	if (c->nb >= 0) {
		struct virtio_net_hdr_mrg *h =
		    (struct virtio_net_hdr_mrg *)(uintptr_t)e.b.desc[0][0].addr;

		memset(h, 0, sizeof(*h));
		h->num_buffers = (uint16_t)c->nb;
	}
	for (unsigned i = 0; i < c->n; i++) {
		int past = c->used[i].past;
		uint32_t len = past > 0	  ? e.b.desc[v][past - 1].len + 1
			       : past < 0 ? e.b.desc[v][-past - 1].len
					  : c->used[i].len;

		used_put(e.b.used[v], e.b.num[v], (uint16_t)i, c->used[i].id, len);
	}
	used_publish(e.b.used[v], c->idx);
	expect_fault(&e, c->reason, c->rx);
}

/*
 * The packed-ring cases: one rule broken in the used elements the backend writes into a
 * packed ring (both wrap counters start at 1, so a sound used element at a position of
 * the first pass has AVAIL = USED = 1). Tx cases (vring 1) first have four packets sent
 * (ids 0-3 at positions 0-3); Rx cases (vring 0) find 256 receive buffers posted. @nb >= 0:
 * the first Rx buffer's num_buffers (mergeable buffers). Each element: its id, its length
 * (@past > 0: one byte more than descriptor @past - 1 was posted with; @past < 0: exactly
 * what descriptor -@past - 1 was posted with), its flags.
 */
#define PK_USED (VRING_PACKED_DESC_F_AVAIL | VRING_PACKED_DESC_F_USED)

struct packed_case {
	const char *name;
	uint64_t features;
	const char *keys;
	bool rx;
	int nb;
	unsigned n;
	struct {
		uint16_t id;
		uint32_t len;
		int past;
		uint16_t flags;
	} used[2];
	const char *reason;
};

static const struct packed_case packed_cases[] = {
    /* Tx, per-id completion: an id beyond the queue size; one not in flight (ids 0-3 are);
     * the same buffer used twice; a used element with the wrap counter of the wrong pass. */
    {"packed_tx_id_out_of_range", 0, ",in_order=no", false, -1, 1, {{999, 0, 0, PK_USED}},
     "used id beyond the queue size"},
    {"packed_tx_id_not_in_flight", 0, ",in_order=no", false, -1, 1, {{9, 0, 0, PK_USED}},
     "used id of a buffer not in flight"},
    {"packed_tx_id_twice", 0, ",in_order=no", false, -1, 2,
     {{2, 0, 0, PK_USED}, {2, 0, 0, PK_USED}}, "used id of a buffer not in flight"},
    {"packed_tx_wrap", 0, ",in_order=no", false, -1, 1, {{0, 0, 0, 0}},
     "used flags with the wrong wrap counter"},
    /* Tx, in order (one element for a run ending at its id): a run past the four in
     * flight; an id beyond the queue size; the wrong wrap counter. */
    {"packed_tx_in_order_run", VIRTIO_BIT(VIRTIO_F_IN_ORDER), "", false, -1, 1,
     {{4, 0, 0, PK_USED}}, "used id of a buffer not in flight"},
    {"packed_tx_in_order_id_out_of_range", VIRTIO_BIT(VIRTIO_F_IN_ORDER), "", false, -1, 1,
     {{256, 0, 0, PK_USED}}, "used id beyond the queue size"},
    {"packed_tx_in_order_wrap", VIRTIO_BIT(VIRTIO_F_IN_ORDER), "", false, -1, 1,
     {{3, 0, 0, VRING_PACKED_DESC_F_USED}}, "used flags with the wrong wrap counter"},
    /* Rx: an id beyond the queue size; the same buffer used twice (the first use is a
     * good packet); a length beyond the posted buffer, one shorter than the header; the
     * wrong wrap counter. */
    {"packed_rx_id_out_of_range", 0, "", true, -1, 1, {{256, 12 + 60, 0, PK_USED}},
     "used id beyond the queue size"},
    {"packed_rx_id_twice", 0, "", true, -1, 2,
     {{5, 12 + 60, 0, PK_USED}, {5, 12 + 60, 0, PK_USED}}, "used id of a buffer not posted"},
    {"packed_rx_len", 0, "", true, -1, 1, {{0, 0, 1, PK_USED}},
     "used length outside the posted buffer"},
    {"packed_rx_len_short", 0, "", true, -1, 1, {{0, 5, 0, PK_USED}},
     "used length outside the posted buffer"},
    {"packed_rx_wrap", 0, "", true, -1, 1, {{0, 12 + 60, 0, 0}},
     "used flags with the wrong wrap counter"},
    /* Rx, mergeable buffers: num_buffers beyond what is posted, and of 0; the second
     * buffer of a packet with the wrong wrap counter, and longer than posted. */
    {"packed_rx_num_buffers", F_MRG, "", true, 300, 1, {{0, 0, -1, PK_USED}},
     "num_buffers of 0 or beyond the posted buffers"},
    {"packed_rx_num_buffers_zero", F_MRG, "", true, 0, 1, {{0, 0, -1, PK_USED}},
     "num_buffers of 0 or beyond the posted buffers"},
    {"packed_rx_mrg_second_wrap", F_MRG, "", true, 2, 2,
     {{0, 12 + 60, 0, PK_USED}, {1, 60, 0, VRING_PACKED_DESC_F_USED}},
     "used flags with the wrong wrap counter"},
    {"packed_rx_mrg_second_len", F_MRG, "", true, 2, 2,
     {{0, 12 + 60, 0, PK_USED}, {1, 0, 2, PK_USED}}, "used length outside the posted buffer"},
};

static void test_packed(void **state)
{
	const struct packed_case *c = *state;
	unsigned v = c->rx ? 0 : 1;
	char keys[64];
	struct vring_packed_desc *ring;
	struct env e;

	snprintf(keys, sizeof(keys), "%s,packed=yes", c->keys);
	env_up(&e, c->features | VIRTIO_BIT(VIRTIO_F_RING_PACKED), keys);
	ring = (struct vring_packed_desc *)(void *)e.b.desc[v];
	if (!c->rx)
		send4(&e);
	if (c->nb >= 0) {
		struct virtio_net_hdr_mrg *h = (struct virtio_net_hdr_mrg *)(uintptr_t)ring[0].addr;

		memset(h, 0, sizeof(*h));
		h->num_buffers = (uint16_t)c->nb;
	}
	/* The elements' bodies, then their flags, the first last (as a device publishes). */
	for (unsigned i = 0; i < c->n; i++) {
		int past = c->used[i].past;

		ring[i].len = past > 0	 ? ring[past - 1].len + 1
			      : past < 0 ? ring[-past - 1].len
					 : c->used[i].len;
		ring[i].id = c->used[i].id;
	}
	for (unsigned i = c->n; i-- > 0;)
		__atomic_store_n(&ring[i].flags, c->used[i].flags, __ATOMIC_RELEASE);
	expect_fault(&e, c->reason, c->rx);
}

/* packed=yes and a backend that does not offer VIRTIO_F_RING_PACKED: split virtqueues (the
 * avail index of a split ring moved: env_up checks it), with the reason logged. */
static void test_packed_not_offered(void **state)
{
	struct env e;

	(void)state;
	env_up(&e, 0, ",packed=yes");
	if (!logged("packed=yes: the device does not offer VIRTIO_F_RING_PACKED"))
		fail_msg("no fallback line in the log:\n%s", logbuf);
	close(e.b.cfd);
	assert_int_equal(tide_port_stop(e.p), 0);
	tide_port_close(e.p);
	tide_pool_cache_flush(e.pool);
	assert_pool_full(e.pool);
	tide_pool_free(e.pool);
}

/* Serve the handshake until the frontend closes the connection; then the reason, the
 * link, and every buffer back after stop. */
static void expect_refused(struct env *e, const char *reason, uint64_t ctl_errors)
{
	struct tide_link l;
	uint64_t v;
	char b;

	for (;;) {
		struct pollfd pf = {.fd = e->b.cfd, .events = POLLIN};

		assert_int_equal(poll(&pf, 1, 5000), 1);
		/* End of file, or a reset when the frontend left our reply unread. */
		if (recv(e->b.cfd, &b, 1, MSG_PEEK) <= 0)
			break;
		backend_msg(&e->b);
	}
	close(e->b.cfd);
	if (!logged(reason))
		fail_msg("log has no '%s':\n%s", reason, logbuf);
	assert_int_equal(tide_xstats_get_by_name(e->p, "virtio_ctl_errors", &v), 0);
	assert_int_equal(v, ctl_errors);
	assert_int_equal(tide_port_link_get(e->p, &l), 0);
	assert_int_equal(l.up, 0);
	env_close(e);
}

/* A device without VIRTIO_F_VERSION_1: the handshake stops, the connection is closed. */
static void test_no_version_1(void **state)
{
	struct env e;

	(void)state;
	env_open(&e, VIRTIO_BIT(VIRTIO_NET_F_MRG_RXBUF), "");
	expect_refused(&e, "does not offer VIRTIO_F_VERSION_1", 0);
}

/* A reply of the wrong size: counted, the connection is closed. */
static void test_bad_reply(void **state)
{
	struct env e;

	(void)state;
	env_open(&e, VIRTIO_BIT(VIRTIO_F_VERSION_1), "");
	e.b.bad_reply = VHOST_USER_GET_FEATURES;
	expect_refused(&e, "bad reply", 1);
}

/* REPLY_ACK negotiated and the backend refuses the memory table. */
static void test_nack(void **state)
{
	struct env e;

	(void)state;
	env_open(&e, VIRTIO_BIT(VIRTIO_F_VERSION_1) | VIRTIO_BIT(VHOST_USER_F_PROTOCOL_FEATURES), "");
	e.b.proto = VIRTIO_BIT(VHOST_USER_PROTOCOL_F_REPLY_ACK);
	e.b.nack = VHOST_USER_SET_MEM_TABLE;
	expect_refused(&e, "SET_MEM_TABLE: the backend refused it", 0);
}

/* ---- offloads: the features asked for, the headers both ways ---- */

/* virtio-net feature bits (virtio 1.x, 5.1.3) and header values, as the wire has them. */
#define F_CSUM	     VIRTIO_BIT(0)
#define F_GUEST_CSUM VIRTIO_BIT(1)
#define F_GUEST_TSO4 VIRTIO_BIT(7)
#define F_GUEST_TSO6 VIRTIO_BIT(8)
#define F_GUEST_ECN  VIRTIO_BIT(9)
#define F_HOST_TSO4  VIRTIO_BIT(11)
#define F_HOST_TSO6  VIRTIO_BIT(12)
#define F_HOST_ECN   VIRTIO_BIT(13)
#define F_OL_ALL                                                                          \
	(F_CSUM | F_GUEST_CSUM | F_GUEST_TSO4 | F_GUEST_TSO6 | F_GUEST_ECN | F_HOST_TSO4 | \
	 F_HOST_TSO6 | F_HOST_ECN)
#define H_NEEDS_CSUM 1
#define H_DATA_VALID 2
#define H_GSO_TCPV4  1
#define H_GSO_TCPV6  4

#define RX_CK (TIDE_OFFLOAD_RX_TCP_CKSUM | TIDE_OFFLOAD_RX_UDP_CKSUM)
#define RX_OL (RX_CK | TIDE_OFFLOAD_RX_TCP_LRO)
#define TX_CK (TIDE_OFFLOAD_TX_IPV4_CKSUM | TIDE_OFFLOAD_TX_TCP_CKSUM | TIDE_OFFLOAD_TX_UDP_CKSUM)
#define TX_OL (TX_CK | TIDE_OFFLOAD_TX_TCP_TSO)

/* Which offload features the frontend takes, from what the device offers and the queues
 * enabled. */
struct feat_case {
	const char *name;
	uint64_t offered, rxol, txol;
	const char *keys;
	uint64_t acked; /* of F_OL_ALL */
};

static const struct feat_case feat_cases[] = {
    /* Nothing enabled: nothing taken, whatever is offered. */
    {"ol_features_none", F_OL_ALL | F_MRG, 0, 0, "", 0},
    /* Everything enabled and offered. */
    {"ol_features_all", F_OL_ALL | F_MRG, RX_OL, TX_OL, "", F_OL_ALL},
    /* Checksums only: no segmentation either way. */
    {"ol_features_csum", F_OL_ALL | F_MRG, RX_CK, TX_CK, "", F_CSUM | F_GUEST_CSUM},
    /* Rx GSO needs mergeable buffers: not taken with mrg_rxbuf=no. */
    {"ol_features_no_mrg", F_OL_ALL | F_MRG, RX_OL, 0, ",mrg_rxbuf=no", F_GUEST_CSUM},
    /* A device offering segmentation without the checksum it rests on: neither taken. */
    {"ol_features_deps", F_MRG | F_HOST_TSO4 | F_HOST_ECN | F_GUEST_TSO4 | F_GUEST_ECN, RX_OL,
     TX_OL, "", 0},
    /* ECN without the segmentation of either IP version: not taken. */
    {"ol_features_ecn", F_MRG | F_CSUM | F_HOST_ECN, 0, TX_OL, "", F_CSUM},
    {"ol_features_guest_ecn", F_MRG | F_GUEST_CSUM | F_GUEST_ECN, RX_OL, 0, "", F_GUEST_CSUM},
    /* A device without mergeable buffers: no Rx GSO. */
    {"ol_features_dev_no_mrg", F_OL_ALL, RX_OL, 0, "", F_GUEST_CSUM},
};

static void test_features(void **state)
{
	const struct feat_case *c = *state;
	struct env e;

	env_up_ol(&e, c->offered, c->keys, c->rxol, c->txol);
	assert_int_equal(e.b.acked & F_OL_ALL, c->acked);
	close(e.b.cfd);
	assert_int_equal(tide_port_stop(e.p), 0);
	tide_port_close(e.p);
	tide_pool_cache_flush(e.pool);
	assert_pool_full(e.pool);
	tide_pool_free(e.pool);
}

static uint16_t ip_sum(const uint8_t *p, unsigned n)
{
	uint32_t s = 0;

	for (unsigned i = 0; i + 1 < n; i += 2)
		s += (uint32_t)(p[i] << 8 | p[i + 1]);
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

/* Ethernet, IPv4 (header checksum filled) and TCP with @flags (checksum 0), @payload bytes
 * of pattern. Returns the frame's length. */
static unsigned frame_tcp4(uint8_t *f, unsigned payload, uint8_t flags)
{
	static const uint8_t eth[14] = {2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00};
	uint8_t *ip = f + 14, *tcp = ip + 20;
	unsigned tot = 20 + 20 + payload;
	uint16_t c;

	memcpy(f, eth, 14);
	memset(ip, 0, 40);
	ip[0] = 0x45;
	ip[2] = (uint8_t)(tot >> 8);
	ip[3] = (uint8_t)tot;
	ip[8] = 64;
	ip[9] = 6;
	ip[12] = 10, ip[15] = 1, ip[16] = 10, ip[19] = 2;
	c = ip_sum(ip, 20);
	ip[10] = (uint8_t)(c >> 8);
	ip[11] = (uint8_t)c;
	tcp[0] = 0x30, tcp[1] = 0x39, tcp[2] = 0x00, tcp[3] = 0x50;
	tcp[4] = 0x01; /* sequence number */
	tcp[12] = 5 << 4;
	tcp[13] = flags;
	tcp[14] = 0xff;
	for (unsigned i = 0; i < payload; i++)
		tcp[20 + i] = (uint8_t)(i * 7 + 3);
	return 14 + tot;
}

/* Ethernet, IPv6 and TCP with @flags (checksum 0), @payload bytes of pattern. */
static unsigned frame_tcp6(uint8_t *f, unsigned payload, uint8_t flags)
{
	static const uint8_t eth[14] = {2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x86, 0xdd};
	uint8_t *ip = f + 14, *tcp = ip + 40;

	memcpy(f, eth, 14);
	memset(ip, 0, 60);
	ip[0] = 0x60;
	ip[4] = (uint8_t)((20 + payload) >> 8);
	ip[5] = (uint8_t)(20 + payload);
	ip[6] = 6;
	ip[7] = 64;
	ip[8] = 0xfd, ip[23] = 1, ip[24] = 0xfd, ip[39] = 2;
	tcp[0] = 0x30, tcp[1] = 0x39, tcp[3] = 0x50;
	tcp[4] = 0x01;
	tcp[12] = 5 << 4;
	tcp[13] = flags;
	tcp[14] = 0xff;
	for (unsigned i = 0; i < payload; i++)
		tcp[20 + i] = (uint8_t)(i * 7 + 3);
	return 14 + 40 + 20 + payload;
}

/*
 * The backend receives a frame into the buffers posted at avail positions @pos..: header
 * @h (num_buffers set here) and @len bytes of @frame spread over as many buffers as it
 * takes, each used entry written; then used->idx published. Returns the buffers used.
 */
/* The packed-ring flags of a used element at free-running position @pos of ring @num. */
static uint16_t pk_used_flags(uint32_t pos, unsigned num)
{
	return (pos & num) ? 0 : PK_USED;
}

/* Rx: frame @frame of @len bytes with header @h written into the posted buffers from
 * position @pos on (the header's num_buffers set), and used; returns the buffers used. */
static unsigned rx_inject(struct env *e, uint16_t pos, const struct virtio_net_hdr_mrg *h,
			  const uint8_t *frame, unsigned len)
{
	struct vring_packed_desc *ring = (struct vring_packed_desc *)(void *)e->b.desc[0];
	unsigned k = 0, off = 0, num = e->b.num[0];
	uint8_t *first = NULL;

	do {
		uint16_t at = (uint16_t)(pos + k) & (num - 1);
		uint16_t id = packed ? ring[at].id : e->b.avail[0]->ring[at];
		uint8_t *buf = (uint8_t *)(uintptr_t)(packed ? ring[at].addr : e->b.desc[0][id].addr);
		unsigned room = (packed ? ring[at].len : e->b.desc[0][id].len) - (k ? 0 : 12);
		unsigned n = len - off < room ? len - off : room;

		if (k == 0) {
			first = buf;
			memcpy(buf, h, 12);
			buf += 12;
		}
		memcpy(buf, frame + off, n);
		if (packed) {
			ring[at].id = id;
			ring[at].len = n + (k ? 0 : 12);
		} else {
			used_put(e->b.used[0], num, (uint16_t)(pos + k), id, n + (k ? 0 : 12));
		}
		off += n;
		k++;
	} while (off < len);
	((struct virtio_net_hdr_mrg *)(void *)first)->num_buffers = (uint16_t)k;
	if (!packed) {
		used_publish(e->b.used[0], (uint16_t)(pos + k));
		return k;
	}
	/* The flags, the first element's last (as a device publishes). */
	for (unsigned j = k; j-- > 0;)
		__atomic_store_n(&ring[(uint16_t)(pos + j) & (num - 1)].flags,
				 pk_used_flags(pos + j, num), __ATOMIC_RELEASE);
	return k;
}

static uint64_t xstat(struct env *e, const char *name)
{
	uint64_t v = UINT64_MAX;

	assert_int_equal(tide_xstats_get_by_name(e->p, name, &v), 0);
	return v;
}

/* The port is whole at the end: no fault, the link up; then stop, close, the pool full. */
static void env_done(struct env *e)
{
	struct tide_link l;

	assert_int_equal(xstat(e, "virtio_faults"), 0);
	assert_int_equal(tide_port_link_get(e->p, &l), 0);
	assert_int_equal(l.up, 1);
	close(e->b.cfd);
	env_close(e);
}

/*
 * Received headers: one per case, with a TCP/IPv4 frame of @payload bytes. A refused one
 * drops its packet, counted under its reason and in the queue's errors, and the port runs
 * on (a good frame after it arrives); an accepted one sets the packet's offload fields.
 */
struct rxh_case {
	const char *name;
	uint64_t rxol;
	struct virtio_net_hdr_mrg h;
	unsigned payload;
	const char *xstat; /* refused: the counter; NULL: accepted */
	uint32_t ol_flags; /* accepted: the packet's */
	uint16_t tso_segsz;
};

#define TCP4_CSUM .flags = H_NEEDS_CSUM, .csum_start = 34, .csum_offset = 16

static const struct rxh_case rxh_cases[] = {
    {"rx_hdr_flags", RX_OL, {.flags = 0x10}, 100, "virtio_rx_hdr_flags"},
    {"rx_hdr_csum_beyond", RX_OL, {.flags = H_NEEDS_CSUM, .csum_start = 34, .csum_offset = 200},
     100, "virtio_rx_hdr_csum_beyond"},
    {"rx_hdr_csum_start_beyond", RX_OL,
     {.flags = H_NEEDS_CSUM, .csum_start = 60000, .csum_offset = 16}, 100,
     "virtio_rx_hdr_csum_beyond"},
    {"rx_hdr_csum_align", RX_OL, {.flags = H_NEEDS_CSUM, .csum_start = 34, .csum_offset = 15},
     100, "virtio_rx_hdr_csum_align"},
    {"rx_hdr_csum_field", RX_OL, {.flags = H_NEEDS_CSUM, .csum_start = 30, .csum_offset = 16},
     100, "virtio_rx_hdr_csum_field"},
    {"rx_hdr_gso_size_zero", RX_OL, {TCP4_CSUM, .gso_type = H_GSO_TCPV4, .gso_size = 0}, 3000,
     "virtio_rx_hdr_gso_size"},
    {"rx_hdr_gso_size_big", RX_OL, {TCP4_CSUM, .gso_type = H_GSO_TCPV4, .gso_size = 3100}, 3000,
     "virtio_rx_hdr_gso_size"},
    {"rx_hdr_gso_type_unknown", RX_OL, {TCP4_CSUM, .gso_type = 2, .gso_size = 1448}, 3000,
     "virtio_rx_hdr_gso_type"},
    {"rx_hdr_gso_no_csum", RX_OL, {.gso_type = H_GSO_TCPV4, .gso_size = 1448}, 3000,
     "virtio_rx_hdr_gso_csum"},
    {"rx_hdr_gso_proto", RX_OL, {TCP4_CSUM, .gso_type = H_GSO_TCPV6, .gso_size = 1448}, 3000,
     "virtio_rx_hdr_gso_proto"},
    /* A queue without LRO: a GSO header is one the device had no right to send. */
    {"rx_hdr_gso_no_lro", RX_CK, {TCP4_CSUM, .gso_type = H_GSO_TCPV4, .gso_size = 1448}, 3000,
     "virtio_rx_hdr_gso_type"},
    /* Accepted. */
    {"rx_hdr_needs_csum", RX_OL, {TCP4_CSUM}, 100, NULL,
     TIDE_MBUF_F_TX_IPV4 | TIDE_MBUF_F_TX_TCP_CKSUM | TIDE_MBUF_F_RX_L4_CKSUM_NONE, 0},
    {"rx_hdr_data_valid", RX_OL, {.flags = H_DATA_VALID}, 100, NULL,
     TIDE_MBUF_F_RX_L4_CKSUM_GOOD, 0},
    {"rx_hdr_zero", RX_OL, {0}, 100, NULL, 0, 0},
    /* Large, over two mergeable buffers. */
    {"rx_hdr_gso", RX_OL, {TCP4_CSUM, .gso_type = H_GSO_TCPV4, .gso_size = 1448, .hdr_len = 54},
     3000, NULL,
     TIDE_MBUF_F_TX_IPV4 | TIDE_MBUF_F_TX_TCP_CKSUM | TIDE_MBUF_F_TX_TCP_SEG |
	 TIDE_MBUF_F_RX_L4_CKSUM_NONE,
     1448},
};

static void test_rx_hdr(void **state)
{
	const struct rxh_case *c = *state;
	static uint8_t frame[4096], got[4096];
	struct tide_port_stats st = {.sz = sizeof(st)};
	struct tide_mbuf *pk[4];
	unsigned len = frame_tcp4(frame, c->payload, 0x10), used;
	const struct virtio_net_hdr_mrg zero = {0};
	struct env e;
	uint16_t k;

	env_up_ol(&e, F_MRG | F_GUEST_CSUM | F_GUEST_TSO4 | F_GUEST_TSO6, "", c->rxol, 0);
	used = rx_inject(&e, 0, &c->h, frame, len);
	k = tide_rx_burst(e.rxq, pk, 4);
	assert_int_equal(tide_port_stats_get(e.p, &st), 0);
	if (c->xstat != NULL) {
		assert_int_equal(k, 0);
		assert_int_equal(xstat(&e, c->xstat), 1);
		assert_int_equal(st.rxq[0].errors, 1);
		/* The port runs on: the next frame arrives. */
		rx_inject(&e, (uint16_t)used, &zero, frame, 60);
		k = tide_rx_burst(e.rxq, pk, 4);
		assert_int_equal(k, 1);
		assert_int_equal(pk[0]->pkt_len, 60);
		tide_mbuf_free(pk[0]);
	} else {
		assert_int_equal(k, 1);
		assert_int_equal(st.rxq[0].errors, 0);
		assert_int_equal(pk[0]->pkt_len, len);
		assert_int_equal(pk[0]->nb_segs, used);
		assert_int_equal(pk[0]->ol_flags, c->ol_flags);
		if (c->ol_flags & TIDE_MBUF_F_TX_L4_MASK) {
			assert_int_equal(pk[0]->l2_len, 14);
			assert_int_equal(pk[0]->l3_len, 20);
		}
		if (c->tso_segsz) {
			assert_int_equal(pk[0]->tso_segsz, c->tso_segsz);
			assert_int_equal(pk[0]->l4_len, 20);
		}
		assert_int_equal(tide_mbuf_read(pk[0], 0, len, got), 0);
		assert_memory_equal(got, frame, len);
		tide_mbuf_free(pk[0]);
	}
	env_done(&e);
}

/* The header and frame of Tx descriptor @id (one buffer: header and frame together). */
static const struct virtio_net_hdr_mrg *tx_desc(struct env *e, unsigned id, const uint8_t **frame,
						unsigned *len)
{
	const struct vring_packed_desc *pd = (const struct vring_packed_desc *)(void *)e->b.desc[1];
	const struct vring_desc *d = &e->b.desc[1][id];
	uint64_t addr = packed ? pd[id].addr : d->addr;

	assert_int_equal((packed ? pd[id].flags : d->flags) & VRING_DESC_F_INDIRECT, 0);
	if (packed)
		assert_int_equal(pd[id].id, id);
	*frame = (const uint8_t *)(uintptr_t)addr + 12;
	*len = (packed ? pd[id].len : d->len) - 12;
	return (const struct virtio_net_hdr_mrg *)(uintptr_t)addr;
}

/* Tx: exactly @n buffers made available so far (split: the avail index; packed: positions
 * [n - num, n) hold their pass's available flags, position n does not). */
static void expect_tx_avail(struct env *e, unsigned n)
{
	const struct vring_packed_desc *pd = (const struct vring_packed_desc *)(void *)e->b.desc[1];
	unsigned num = e->b.num[1];

	if (!packed) {
		assert_int_equal(e->b.avail[1]->idx, n);
		return;
	}
	for (unsigned p = n > num ? n - num : 0; p <= n; p++) {
		uint16_t fl = pd[p & (num - 1)].flags & PK_USED;
		uint16_t av = (p & num) ? VRING_PACKED_DESC_F_USED : VRING_PACKED_DESC_F_AVAIL;

		if ((fl == av) != (p < n))
			fail_msg("packed Tx position %u: flags 0x%x, want %u made available", p, fl, n);
	}
}

/* Tx: the device uses the buffer at position 0 (id 0). */
static void tx_use_first(struct env *e)
{
	struct vring_packed_desc *pd = (struct vring_packed_desc *)(void *)e->b.desc[1];

	if (!packed) {
		used_put(e->b.used[1], e->b.num[1], 0, 0, 0);
		used_publish(e->b.used[1], 1);
		return;
	}
	pd[0].id = 0;
	pd[0].len = 0;
	__atomic_store_n(&pd[0].flags, PK_USED, __ATOMIC_RELEASE);
}

/* A TCP/IPv4 packet of @payload bytes with Tx requests @req (TIDE_MBUF_F_TX_*). */
static struct tide_mbuf *tx_pkt(struct env *e, unsigned payload, uint32_t req, uint16_t mss)
{
	struct tide_mbuf *m = tide_mbuf_alloc(e->pool);
	uint8_t *f;

	assert_non_null(m);
	f = (uint8_t *)tide_mbuf_append(m, (uint16_t)(54 + payload));
	assert_non_null(f);
	frame_tcp4(f, payload, 0x18);
	f[24] = f[25] = 0; /* the IPv4 header checksum: the request's to fill */
	m->ol_flags = req;
	m->l2_len = 14;
	m->l3_len = 20;
	m->l4_len = 20;
	m->tso_segsz = mss;
	return m;
}

/* Frame @f of @len bytes verified in software: both checksums good. */
static void expect_cksum_good(struct env *e, const uint8_t *f, unsigned len)
{
	struct tide_mbuf *m = tide_mbuf_alloc(e->pool);

	assert_non_null(m);
	memcpy(tide_mbuf_append(m, (uint16_t)len), f, len);
	assert_int_equal(tide_offload_cksum_verify(m), 0);
	assert_int_equal(m->ol_flags & TIDE_MBUF_F_RX_IP_CKSUM_MASK, TIDE_MBUF_F_RX_IP_CKSUM_GOOD);
	assert_int_equal(m->ol_flags & TIDE_MBUF_F_RX_L4_CKSUM_MASK, TIDE_MBUF_F_RX_L4_CKSUM_GOOD);
	tide_mbuf_free(m);
}

#define REQ_TCP4 (TIDE_MBUF_F_TX_IPV4 | TIDE_MBUF_F_TX_IP_CKSUM | TIDE_MBUF_F_TX_TCP_CKSUM)
#define REQ_TSO4 (REQ_TCP4 | TIDE_MBUF_F_TX_TCP_SEG)
#define REQ_TSO6 (TIDE_MBUF_F_TX_IPV6 | TIDE_MBUF_F_TX_TCP_CKSUM | TIDE_MBUF_F_TX_TCP_SEG)

/* A TCP/IPv6 TSO packet of @payload bytes. */
static struct tide_mbuf *tx_pkt6(struct env *e, unsigned payload, uint16_t mss)
{
	struct tide_mbuf *m = tide_mbuf_alloc(e->pool);
	uint8_t *f;

	assert_non_null(m);
	f = (uint8_t *)tide_mbuf_append(m, (uint16_t)(74 + payload));
	assert_non_null(f);
	frame_tcp6(f, payload, 0x18);
	m->ol_flags = REQ_TSO6;
	m->l2_len = 14;
	m->l3_len = 40;
	m->l4_len = 20;
	m->tso_segsz = mss;
	return m;
}

/* A device that does checksums and TSO: the header says what to do; a bad request is
 * dropped and counted. */
static void test_tx_hdr_device(void **state)
{
	struct tide_port_stats st = {.sz = sizeof(st)};
	const struct virtio_net_hdr_mrg *h;
	struct tide_mbuf *m[5];
	const uint8_t *f;
	unsigned len;
	struct env e;

	(void)state;
	env_up_ol(&e, F_CSUM | F_HOST_TSO4 | F_HOST_TSO6 | F_HOST_ECN, "", 0, TX_OL);
	m[0] = tx_pkt(&e, 1900 - 54, REQ_TSO4, 1000);
	m[1] = tx_pkt(&e, 100, REQ_TCP4, 0);
	m[2] = tx_pkt(&e, 100, REQ_TCP4, 0);
	m[2]->l3_len = 24; /* not the IP header's length: refused */
	m[3] = tx_pkt(&e, 100, 0, 0);
	/* UDP segmentation (a UDP datagram): never negotiated, refused. */
	m[4] = tx_pkt(&e, 1000, TIDE_MBUF_F_TX_IPV4 | TIDE_MBUF_F_TX_UDP_CKSUM |
					TIDE_MBUF_F_TX_UDP_SEG, 500);
	tide_mbuf_mtod(m[4], uint8_t *)[23] = 17;
	tide_mbuf_mtod(m[4], uint8_t *)[38] = 0x03; /* UDP length 1008 */
	tide_mbuf_mtod(m[4], uint8_t *)[39] = 0xf0;
	m[4]->l4_len = 8;
	assert_int_equal(tide_tx_burst(e.txq, m, 5), 5);
	expect_tx_avail(&e, 3);
	/* TSO: the frame whole, the device to cut it. */
	h = tx_desc(&e, 0, &f, &len);
	assert_int_equal(len, 1900);
	assert_int_equal(h->flags, H_NEEDS_CSUM);
	assert_int_equal(h->gso_type, H_GSO_TCPV4);
	assert_int_equal(h->gso_size, 1000);
	assert_int_equal(h->hdr_len, 54);
	assert_int_equal(h->csum_start, 34);
	assert_int_equal(h->csum_offset, 16);
	assert_int_equal(ip_sum(f + 14, 20), 0); /* the IPv4 header checksum is filled */
	/* The checksum alone. */
	h = tx_desc(&e, 1, &f, &len);
	assert_int_equal(len, 154);
	assert_int_equal(h->flags, H_NEEDS_CSUM);
	assert_int_equal(h->gso_type, 0);
	assert_int_equal(h->csum_start, 34);
	assert_int_equal(h->csum_offset, 16);
	/* No request: a zero header. */
	h = tx_desc(&e, 2, &f, &len);
	assert_int_equal(len, 154);
	assert_int_equal(h->flags | h->gso_type | h->csum_start | h->gso_size, 0);
	assert_int_equal(xstat(&e, "virtio_tx_offload_refused"), 2);
	assert_int_equal(xstat(&e, "virtio_tx_sw_cksum"), 0);
	assert_int_equal(xstat(&e, "virtio_tx_sw_tso"), 0);
	assert_int_equal(tide_port_stats_get(e.p, &st), 0);
	assert_int_equal(st.txq[0].errors, 2);
	assert_int_equal(st.txq[0].packets, 3);
	env_done(&e);
}

/* A device without the offloads: the queue does the work (checksums filled, the TSO
 * packet cut into MSS-sized frames), counted, every frame's checksums good. */
static void test_tx_hdr_software(void **state)
{
	const struct virtio_net_hdr_mrg *h;
	struct tide_mbuf *m[4];
	const uint8_t *f;
	unsigned len;
	struct env e;

	(void)state;
	env_up_ol(&e, 0, "", 0, TX_OL);
	m[0] = tx_pkt(&e, 100, REQ_TCP4, 0);
	m[1] = tx_pkt(&e, 1900 - 54, REQ_TSO4, 800);
	/* Bad requests: refused by the software checksum, and by the software cut. */
	m[2] = tx_pkt(&e, 100, REQ_TCP4, 0);
	m[2]->l3_len = 24;
	m[3] = tx_pkt(&e, 1000, REQ_TSO4, 0);
	assert_int_equal(tide_tx_burst(e.txq, m, 4), 4);
	expect_tx_avail(&e, 4);
	for (unsigned id = 0; id < 4; id++) {
		static const unsigned want[4] = {154, 854, 854, 300};

		h = tx_desc(&e, id, &f, &len);
		assert_int_equal(len, want[id]);
		assert_int_equal(h->flags | h->gso_type | h->csum_start | h->gso_size, 0);
		expect_cksum_good(&e, f, len);
	}
	assert_int_equal(xstat(&e, "virtio_tx_sw_cksum"), 1);
	assert_int_equal(xstat(&e, "virtio_tx_sw_tso"), 1);
	assert_int_equal(xstat(&e, "virtio_tx_offload_refused"), 2);
	env_done(&e);
}

/*
 * Packets without requests go with a zero header, on a queue with offloads and on one
 * without, also from a buffer whose headroom held other bytes where the header goes (a
 * header is written only where the buffer does not hold it already: each half of it is
 * tested, and a buffer that holds it already).
 */
static void test_tx_hdr_zero(void **state)
{
	static const struct virtio_net_hdr_mrg zero = {0};
	struct tide_mbuf *m[3];
	const uint8_t *f;
	unsigned len;
	struct env e;

	(void)state;
	for (int ol = 0; ol < 2; ol++) {
		env_up_ol(&e, ol ? F_CSUM | F_HOST_TSO4 : 0, "", 0, ol ? TX_OL : 0);
		for (unsigned i = 0; i < 3; i++) {
			uint8_t *h;

			m[i] = tx_pkt(&e, 100, 0, 0);
			h = tide_mbuf_mtod(m[i], uint8_t *) - sizeof(zero);
			memset(h, 0, sizeof(zero));
			if (i == 0)
				memset(h, 0xa5, 8); /* flags .. csum_start */
			else if (i == 1)
				memset(h + 8, 0x5a, 4); /* csum_offset, num_buffers */
		}
		assert_int_equal(tide_tx_burst(e.txq, m, 3), 3);
		expect_tx_avail(&e, 3);
		for (unsigned id = 0; id < 3; id++) {
			const struct virtio_net_hdr_mrg *h = tx_desc(&e, id, &f, &len);

			assert_int_equal(len, 154);
			if (memcmp(h, &zero, sizeof(zero)) != 0)
				fail_msg("%s offloads: packet %u went with a header that is not "
					 "zero", ol ? "with" : "without", id);
		}
		env_done(&e);
	}
}

/* TSO with CWR on a device without HOST_ECN: cut in software; CWR on the first piece only. */
static void test_tx_hdr_ecn(void **state)
{
	const struct virtio_net_hdr_mrg *h;
	struct tide_mbuf *m;
	const uint8_t *f;
	unsigned len;
	struct env e;

	(void)state;
	env_up_ol(&e, F_CSUM | F_HOST_TSO4, "", 0, TX_OL);
	m = tx_pkt(&e, 1600, REQ_TSO4, 800);
	tide_mbuf_mtod(m, uint8_t *)[47] |= 0x80; /* CWR */
	assert_int_equal(tide_tx_burst(e.txq, &m, 1), 1);
	expect_tx_avail(&e, 2);
	for (unsigned id = 0; id < 2; id++) {
		h = tx_desc(&e, id, &f, &len);
		assert_int_equal(len, 854);
		assert_int_equal(h->gso_type, 0);
		assert_int_equal(f[47] & 0x80, id == 0 ? 0x80 : 0);
		expect_cksum_good(&e, f, len);
	}
	assert_int_equal(xstat(&e, "virtio_tx_sw_tso"), 1);
	env_done(&e);
}

/* A packet that needs more pieces than any ring room allows (VIRTIO_CUT_MAX, or the
 * ring): refused and counted, not left waiting for room that never comes. */
static void test_tx_cut_too_many(void **state)
{
	const unsigned rings[2] = {256, 64};
	struct tide_mbuf *m;
	struct env e;

	(void)state;
	for (unsigned r = 0; r < 2; r++) {
		ndesc = rings[r];
		env_up_ol(&e, 0, "", 0, TX_OL);
		m = tx_pkt(&e, 1500, REQ_TSO4, r == 0 ? 10 : 20); /* 150, 75 pieces */
		assert_int_equal(tide_tx_burst(e.txq, &m, 1), 1);
		expect_tx_avail(&e, 0);
		assert_int_equal(xstat(&e, "virtio_tx_offload_refused"), 1);
		assert_int_equal(xstat(&e, "virtio_tx_sw_tso"), 0);
		env_done(&e);
	}
	ndesc = 256;
}

/* A device that segments IPv6 only: the IPv6 packet goes whole with its header, the IPv4
 * one is cut in software. */
static void test_tx_hdr_v6(void **state)
{
	const struct virtio_net_hdr_mrg *h;
	struct tide_mbuf *m[2];
	const uint8_t *f;
	unsigned len;
	struct env e;

	(void)state;
	env_up_ol(&e, F_CSUM | F_HOST_TSO6, "", 0, TX_OL);
	m[0] = tx_pkt6(&e, 1600, 800);
	m[1] = tx_pkt(&e, 1600, REQ_TSO4, 800);
	assert_int_equal(tide_tx_burst(e.txq, m, 2), 2);
	expect_tx_avail(&e, 3);
	h = tx_desc(&e, 0, &f, &len);
	assert_int_equal(len, 74 + 1600);
	assert_int_equal(h->gso_type, H_GSO_TCPV6);
	assert_int_equal(h->gso_size, 800);
	assert_int_equal(h->csum_start, 54);
	for (unsigned id = 1; id < 3; id++) {
		h = tx_desc(&e, id, &f, &len);
		assert_int_equal(len, 854);
		assert_int_equal(h->flags | h->gso_type, 0);
		expect_cksum_good(&e, f, len);
	}
	assert_int_equal(xstat(&e, "virtio_tx_sw_tso"), 1);
	env_done(&e);
}

/* More pieces than the ring has room for: the burst stops before the packet, which stays
 * the caller's, and takes it once there is room. */
static void test_tx_cut_room(void **state)
{
	struct tide_mbuf *m[64], *big;
	struct env e;
	unsigned n = 0;

	(void)state;
	env_up_ol(&e, 0, "", 0, TX_OL);
	/* Fill the ring (256) but 2 slots with plain packets. */
	while (n < 254) {
		unsigned b = 254 - n < 64 ? 254 - n : 64;

		for (unsigned i = 0; i < b; i++)
			m[i] = tx_pkt(&e, 10, 0, 0);
		assert_int_equal(tide_tx_burst(e.txq, m, (uint16_t)b), b);
		n += b;
	}
	big = tx_pkt(&e, 1500, REQ_TSO4, 500); /* 3 pieces */
	assert_int_equal(tide_tx_burst(e.txq, &big, 1), 0);
	expect_tx_avail(&e, 254);
	assert_int_equal(xstat(&e, "virtio_tx_sw_tso"), 0);
	/* The device uses one: room for the three pieces exactly, and the packet after them
	 * stays the caller's. */
	tx_use_first(&e);
	m[0] = big;
	m[1] = tx_pkt(&e, 10, 0, 0);
	assert_int_equal(tide_tx_burst(e.txq, m, 2), 1);
	expect_tx_avail(&e, 257);
	assert_int_equal(xstat(&e, "virtio_tx_sw_tso"), 1);
	tide_mbuf_free(m[1]);
	env_done(&e);
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "%s/tide-virtio-h-XXXXXX", test_tmp());
	if (mkdtemp(dir) == NULL)
		return -1;
	snprintf(sock, sizeof(sock), "%s/b.sock", dir);
	tide_log_set_handler(capture, NULL);
	tide_log_set_level(TIDE_LOG_WARNING); /* the reason is a warning */
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	tide_log_set_handler(NULL, NULL);
	unlink(sock);
	rmdir(dir);
	return 0;
}

/*
 * Not a broken rule: without VIRTIO_F_IN_ORDER a device may use receive buffers in any
 * order. This backend takes the avail entries three at a time and uses each three in
 * reverse, for three laps of the ring, while the application receives in bursts of 32,
 * which end inside a group. The frontend then moves descriptors between slots, and the
 * slots it posts again must get their avail entries rewritten (it leaves them alone
 * while nothing moved): every avail entry names a descriptor that is neither at the
 * backend nor used and not yet received (a stale entry names one of those: its buffer
 * holds a frame the application has not had), and every frame arrives whole, in the
 * order used.
 */
static void test_rx_out_of_order(void **state)
{
	enum { GROUP = 3, FRAME = 60, LAPS = 3 };
	struct env e;
	struct vring_avail *a;
	struct vring_used *u;
	struct vring_desc *d;
	uint16_t next_avail = 0, uidx = 0;
	uint32_t sent = 0, got = 0;
	bool at_device[256] = {false}; /* taken from the avail ring, not used yet */
	int64_t used_at[256];	       /* the used position of each descriptor's last use */
	double end;

	(void)state;
	assert_true(ndesc <= 256);
	for (unsigned i = 0; i < 256; i++)
		used_at[i] = -1;
	env_up(&e, 0, ",in_order=no");
	a = e.b.avail[0];
	u = e.b.used[0];
	d = e.b.desc[0];
	end = now_s() + 30;
	while (got < LAPS * ndesc) {
		struct tide_mbuf *pkts[32];
		uint16_t nb;

		/* Use what is available, a group at a time, each group in reverse. */
		while ((uint16_t)(__atomic_load_n(&a->idx, __ATOMIC_ACQUIRE) - next_avail) >=
			   GROUP &&
		       sent - got + GROUP <= ndesc) {
			uint16_t ids[GROUP];

			for (unsigned k = 0; k < GROUP; k++) {
				ids[k] = a->ring[(uint16_t)(next_avail + k) & (ndesc - 1)];
				if (ids[k] >= ndesc || at_device[ids[k]] || used_at[ids[k]] >= got)
					fail_msg("avail entry %u names descriptor %u: none, at the "
						 "device, or used and not received yet",
						 (unsigned)(uint16_t)(next_avail + k), ids[k]);
				at_device[ids[k]] = true;
			}
			next_avail += GROUP;
			for (unsigned k = GROUP; k-- > 0;) {
				uint8_t *buf = (uint8_t *)(uintptr_t)d[ids[k]].addr;

				assert_true(d[ids[k]].len >= 12 + FRAME);
				memset(buf, 0, 12);
				memset(buf + 12, (int)(sent & 0xff), FRAME);
				memcpy(buf + 12, &sent, sizeof(sent));
				used_at[ids[k]] = sent++;
				used_put(u, ndesc, uidx++, ids[k], 12 + FRAME);
				at_device[ids[k]] = false;
			}
			used_publish(u, uidx);
		}
		nb = tide_rx_burst(e.rxq, pkts, 32);
		for (uint16_t i = 0; i < nb; i++) {
			const uint8_t *f = tide_mbuf_mtod(pkts[i], const uint8_t *);
			uint32_t seq;

			assert_int_equal(pkts[i]->pkt_len, FRAME);
			memcpy(&seq, f, sizeof(seq));
			if (seq != got)
				fail_msg("frame %u arrived as frame %u", got, seq);
			for (unsigned j = sizeof(seq); j < FRAME; j++)
				if (f[j] != (uint8_t)(got & 0xff))
					fail_msg("frame %u: byte %u overwritten", got, j);
			got++;
		}
		tide_mbuf_free_bulk(pkts, nb);
		if (now_s() > end)
			fail_msg("stuck: %u frames sent, %u received", sent, got);
	}
	env_done(&e);
}

/*
 * Mergeable buffers: a buffer the device did not fill is the packet's last (the device
 * uses every buffer but the last up to its full length), so its header's num_buffers is
 * not read. Here the first of two short buffers says 5: each buffer is a packet of its
 * own, nothing faults. (A full buffer's num_buffers is read and checked: the
 * rx_num_buffers cases.) Split, and packed (test_rx_short_buffer_is_last_packed).
 */
static void test_rx_short_buffer_is_last(void **state)
{
	const struct virtio_net_hdr_mrg h = {0};
	struct env e;
	struct tide_mbuf *pkts[4];
	uint8_t frame[2][60];
	uint64_t first;
	uint16_t got = 0;
	double end;

	(void)state;
	env_up(&e, F_MRG, "");
	for (unsigned i = 0; i < 2; i++) {
		memset(frame[i], 0xa0 + (int)i, sizeof(frame[i]));
		assert_int_equal(rx_inject(&e, (uint16_t)i, &h, frame[i], sizeof(frame[i])), 1);
	}
	/* The first buffer's header claims more buffers (the frontend reads nothing before
	 * its next burst). */
	first = packed ? ((struct vring_packed_desc *)(void *)e.b.desc[0])[0].addr
		       : e.b.desc[0][e.b.avail[0]->ring[0]].addr;
	((struct virtio_net_hdr_mrg *)(uintptr_t)first)->num_buffers = 5;
	end = now_s() + 10;
	while (got < 2) {
		uint16_t nb = tide_rx_burst(e.rxq, pkts + got, (uint16_t)(4 - got));

		for (uint16_t i = got; i < got + nb; i++) {
			assert_int_equal(pkts[i]->pkt_len, 60);
			assert_int_equal(pkts[i]->nb_segs, 1);
			assert_int_equal(*tide_mbuf_mtod(pkts[i], const uint8_t *), 0xa0 + i);
		}
		got = (uint16_t)(got + nb);
		if (now_s() > end)
			fail_msg("%u of 2 packets in 10 s", got);
	}
	tide_mbuf_free_bulk(pkts, got);
	env_done(&e);
}

/* The offload cases (and the short-buffer case) again over packed virtqueues: packed set
 * around each. */
static int packed_on(void **state)
{
	(void)state;
	packed = true;
	return 0;
}

static int packed_off(void **state)
{
	(void)state;
	packed = false;
	return 0;
}

int main(void)
{
	static const struct CMUnitTest tx_ol[] = {
	    cmocka_unit_test(test_tx_hdr_device),   cmocka_unit_test(test_tx_hdr_software),
	    cmocka_unit_test(test_tx_hdr_ecn),	    cmocka_unit_test(test_tx_cut_room),
	    cmocka_unit_test(test_tx_hdr_v6),	    cmocka_unit_test(test_tx_cut_too_many),
	    cmocka_unit_test(test_tx_hdr_zero),
	};
	enum {
		NU = sizeof(used_cases) / sizeof(used_cases[0]),
		NF = sizeof(feat_cases) / sizeof(feat_cases[0]),
		NR = sizeof(rxh_cases) / sizeof(rxh_cases[0]),
		NP = sizeof(packed_cases) / sizeof(packed_cases[0]),
		NT = sizeof(tx_ol) / sizeof(tx_ol[0]),
		N0 = NU + NF + NP,
		NOL = NR + NT, /* the offload cases, split then packed */
	};
	static char names[NOL][64];
	struct CMUnitTest tests[N0 + 2 * NOL + 7] = {
	    [N0 + 2 * NOL] = cmocka_unit_test(test_no_version_1),
	    [N0 + 2 * NOL + 1] = cmocka_unit_test(test_bad_reply),
	    [N0 + 2 * NOL + 2] = cmocka_unit_test(test_nack),
	    [N0 + 2 * NOL + 3] = cmocka_unit_test(test_packed_not_offered),
	    [N0 + 2 * NOL + 4] = cmocka_unit_test(test_rx_out_of_order),
	    [N0 + 2 * NOL + 5] = cmocka_unit_test(test_rx_short_buffer_is_last),
	    [N0 + 2 * NOL + 6] = {.name = "test_rx_short_buffer_is_last_packed",
				  .test_func = test_rx_short_buffer_is_last,
				  .setup_func = packed_on,
				  .teardown_func = packed_off},
	};

	for (unsigned i = 0; i < NU; i++)
		tests[i] = (struct CMUnitTest){.name = used_cases[i].name,
					       .test_func = test_used,
					       .initial_state = (void *)&used_cases[i]};
	for (unsigned i = 0; i < NF; i++)
		tests[NU + i] = (struct CMUnitTest){.name = feat_cases[i].name,
						    .test_func = test_features,
						    .initial_state = (void *)&feat_cases[i]};
	for (unsigned i = 0; i < NP; i++)
		tests[NU + NF + i] = (struct CMUnitTest){.name = packed_cases[i].name,
							 .test_func = test_packed,
							 .initial_state = (void *)&packed_cases[i]};
	for (unsigned i = 0; i < NOL; i++) {
		struct CMUnitTest *t = &tests[N0 + i], *tp = &tests[N0 + NOL + i];

		if (i < NR)
			*t = (struct CMUnitTest){.name = rxh_cases[i].name,
						 .test_func = test_rx_hdr,
						 .initial_state = (void *)&rxh_cases[i]};
		else
			*t = tx_ol[i - NR];
		*tp = *t;
		snprintf(names[i], sizeof(names[i]), "%s_packed", t->name);
		tp->name = names[i];
		tp->setup_func = packed_on;
		tp->teardown_func = packed_off;
	}
	if (tide_thread_register() < 0)
		return 1;
	return cmocka_run_group_tests(tests, setup, teardown);
}
