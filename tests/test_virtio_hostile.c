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
#include <tide/port.h>

#include "testutil.h"
#include "unix_sock.h"
#include "vhost_user.h"
#include "virtio_ring.h"

static char dir[64], sock[96];

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

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- the backend ---- */

struct backend {
	int lfd, cfd;
	uint64_t features, proto;
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

/* Open and start the port, accept its connection. */
static void env_open(struct env *e, uint64_t features, const char *keys)
{
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
	assert_int_equal(tide_rxq_setup(e->p, 0, 256, e->pool, NULL), 0);
	assert_int_equal(tide_txq_setup(e->p, 0, 256, NULL), 0);
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

static void env_up(struct env *e, uint64_t features, const char *keys)
{
	struct tide_link l;
	double end;

	env_open(e, features | VIRTIO_BIT(VIRTIO_F_VERSION_1), keys);
	while (!e->b.kicked[0] || !e->b.kicked[1])
		backend_msg(&e->b);
	end = now_s() + 10;
	do {
		assert_int_equal(tide_port_link_get(e->p, &l), 0);
		if (now_s() > end)
			fail_msg("link not up");
	} while (!l.up);
	/* The first Rx burst posts the receive buffers. */
	assert_int_equal(tide_rx_burst(e->rxq, (struct tide_mbuf *[1]){NULL}, 0), 0);
	if (features & VIRTIO_BIT(VIRTIO_F_RING_PACKED)) {
		/* Packed: the last of them available in the first pass (wrap counter 1). */
		struct vring_packed_desc *d = (struct vring_packed_desc *)(void *)e->b.desc[0];

		assert_int_equal(__atomic_load_n(&d[255].flags, __ATOMIC_ACQUIRE),
				 VRING_PACKED_DESC_F_AVAIL | VRING_DESC_F_WRITE);
		return;
	}
	assert_int_equal(__atomic_load_n(&e->b.avail[0]->idx, __ATOMIC_ACQUIRE), 256);
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
	assert_int_equal(tide_port_stop(e->p), 0);
	tide_port_close(e->p);
	tide_pool_cache_flush(e->pool);
	assert_pool_full(e->pool);
	tide_pool_free(e->pool);
}

/*
 * The used-ring cases: one rule broken in what the backend writes into a used ring. Tx
 * cases (vring 1) first have four packets sent; Rx cases (vring 0) find the receive
 * buffers posted. @nb >= 0: the first Rx buffer's virtio-net header (mergeable buffers) is
 * zeroed and its num_buffers set to @nb. Each used entry's length is @len, or with
 * @past > 0 one byte more than posted descriptor @past - 1 holds.
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
    {"rx_num_buffers", F_MRG, "", true, 300, 1, {{0, 12 + 60, 0}}, 1,
     "num_buffers of 0 or beyond the posted buffers"},
    {"rx_num_buffers_zero", F_MRG, "", true, 0, 1, {{0, 12 + 60, 0}}, 1,
     "num_buffers of 0 or beyond the posted buffers"},
    /* Rx, mergeable buffers: the second buffer of a packet longer than posted. */
    {"rx_mrg_second_len", F_MRG, "", true, 2, 2, {{0, 12 + 60, 0}, {1, 0, 2}}, 2,
     "used length outside the posted buffer"},
};

static void test_used(void **state)
{
	const struct used_case *c = *state;
	unsigned v = c->rx ? 0 : 1;
	struct env e;

	env_up(&e, c->features, c->keys);
	if (!c->rx)
		send4(&e);
	if (c->nb >= 0) {
		struct virtio_net_hdr_mrg *h =
		    (struct virtio_net_hdr_mrg *)(uintptr_t)e.b.desc[0][0].addr;

		memset(h, 0, sizeof(*h));
		h->num_buffers = (uint16_t)c->nb;
	}
	for (unsigned i = 0; i < c->n; i++) {
		uint32_t len = c->used[i].past ? e.b.desc[v][c->used[i].past - 1].len + 1
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
 * (@past > 0: one byte more than descriptor @past - 1 was posted with), its flags.
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
    {"packed_rx_num_buffers", F_MRG, "", true, 300, 1, {{0, 12 + 60, 0, PK_USED}},
     "num_buffers of 0 or beyond the posted buffers"},
    {"packed_rx_num_buffers_zero", F_MRG, "", true, 0, 1, {{0, 12 + 60, 0, PK_USED}},
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
		ring[i].len = c->used[i].past ? ring[c->used[i].past - 1].len + 1 : c->used[i].len;
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
	assert_int_equal(tide_port_stop(e->p), 0);
	tide_port_close(e->p);
	tide_pool_cache_flush(e->pool);
	assert_pool_full(e->pool);
	tide_pool_free(e->pool);
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

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/tide-virtio-h-XXXXXX");
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

int main(void)
{
	enum { NU = sizeof(used_cases) / sizeof(used_cases[0]) };
	enum { NP = sizeof(packed_cases) / sizeof(packed_cases[0]) };
	struct CMUnitTest tests[NU + NP + 4] = {
	    [NU + NP] = cmocka_unit_test(test_no_version_1),
	    [NU + NP + 1] = cmocka_unit_test(test_bad_reply),
	    [NU + NP + 2] = cmocka_unit_test(test_nack),
	    [NU + NP + 3] = cmocka_unit_test(test_packed_not_offered),
	};

	for (unsigned i = 0; i < NU; i++)
		tests[i] = (struct CMUnitTest){.name = used_cases[i].name,
					       .test_func = test_used,
					       .initial_state = (void *)&used_cases[i]};
	for (unsigned i = 0; i < NP; i++)
		tests[NU + i] = (struct CMUnitTest){.name = packed_cases[i].name,
						    .test_func = test_packed,
						    .initial_state = (void *)&packed_cases[i]};
	if (tide_thread_register() < 0)
		return 1;
	return cmocka_run_group_tests(tests, setup, teardown);
}
