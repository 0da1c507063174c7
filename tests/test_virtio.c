/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The virtio frontend against tide's own vhost-user backend, in one process over a UNIX
 * socket: exact counts and payloads both ways, for each feature combination the frontend
 * negotiates (in-order or per-id completion, mergeable receive buffers, the event index),
 * each over split and over packed virtqueues, and every pool whole at the end.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <tide/lcore.h>
#include <tide/log.h>
#include <tide/port.h>
#include <tide/vhost.h>

#include "testutil.h"
#include "proc_util.h"
#include "tmp_util.h"

#define FRAMES	   10000u
#define DEADLINE_S 60.0
#define BURST	   32

static char dir[64];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "%s/tide-virtio-XXXXXX", test_tmp());
	if (mkdtemp(dir) == NULL)
		return -1;
	return 0;
}

static int teardown(void **state)
{
	char p[96];

	(void)state;
	snprintf(p, sizeof(p), "%s/v.sock", dir);
	unlink(p);
	rmdir(dir);
	return 0;
}

struct side {
	struct tide_port *p;
	struct tide_pool *pool;
	struct tide_rxq *rxq;
	struct tide_txq *txq;
	uint32_t sent, got;   /* frames sent, received (in order: the next expected seq) */
	struct tide_pool *other; /* non-NULL: odd frames come from this pool, even ones are
				    sent with a second reference the sender drops after the burst */
};

static void side_open_tx(struct side *s, const char *spec, bool shared, unsigned dataroom,
			 enum tide_txfree txfree)
{
	struct tide_pktpool_opts o = {.sz = sizeof(o), .pool_flags = shared ? TIDE_POOL_F_SHARED : 0};
	struct tide_txq_conf c = {.sz = sizeof(c), .txfree = txfree,
				  .flags = txfree == TIDE_TXFREE_FAST ? TIDE_TXQ_F_FAST_FREE : 0};

	memset(s, 0, sizeof(*s));
	assert_int_equal(tide_pktpool_create(shared ? "virtio" : "vhost", 4096, 64, dataroom, &o,
					     &s->pool),
			 0);
	if (tide_port_open(spec, &s->p) != 0)
		fail_msg("cannot open %s", spec);
	assert_int_equal(tide_port_configure(s->p, 1, 1), 0);
	assert_int_equal(tide_rxq_setup(s->p, 0, 256, s->pool, NULL), 0);
	assert_int_equal(tide_txq_setup(s->p, 0, 256, &c), 0);
	s->rxq = tide_port_rxq(s->p, 0);
	s->txq = tide_port_txq(s->p, 0);
}

static void side_open(struct side *s, const char *spec, bool shared, unsigned dataroom)
{
	side_open_tx(s, spec, shared, dataroom, TIDE_TXFREE_AUTO);
}

/* Frame @seq of @size bytes: the sequence number, then a pattern that depends on it. */
static void frame_fill(uint8_t *b, uint32_t seq, unsigned size)
{
	memcpy(b, &seq, 4);
	for (unsigned i = 4; i < size; i++)
		b[i] = (uint8_t)(seq * 7 + i);
}

static void send_some(struct side *s, unsigned size, uint32_t total)
{
	struct tide_mbuf *pkts[BURST];
	unsigned n = total - s->sent < BURST ? total - s->sent : BURST;
	uint8_t buf[9216];
	uint16_t k;

	if (n == 0 || tide_mbuf_alloc_bulk(s->pool, pkts, n) < 0)
		return;
	if (s->other != NULL)
		for (unsigned j = 0; j < n; j++) {
			if ((s->sent + j) % 2 == 1) {
				tide_mbuf_free(pkts[j]);
				pkts[j] = tide_mbuf_alloc(s->other);
				require_non_null(pkts[j]);
			}
		}
	for (unsigned j = 0; j < n; j++) {
		uint32_t seq = s->sent + j;
		unsigned left = size, off = 0;
		struct tide_mbuf *m = pkts[j];

		frame_fill(buf, seq, size);
		/* Frames above the data room are chains (the backend's copy takes them). */
		while (left > 0) {
			unsigned k2 = left < tide_mbuf_tailroom(m) ? left : tide_mbuf_tailroom(m);

			memcpy(tide_mbuf_append(pkts[j], (uint16_t)k2), buf + off, k2);
			off += k2;
			left -= k2;
			if (left > 0) {
				struct tide_mbuf *t = tide_mbuf_alloc(s->pool);

				require_non_null(t);
				assert_int_equal(tide_mbuf_chain(pkts[j], t), 0);
				m = t;
			}
		}
	}
	/* The second reference of even frames: on every segment, as a chain is shared. */
	if (s->other != NULL)
		for (unsigned j = 0; j < n; j++)
			if ((s->sent + j) % 2 == 0)
				for (struct tide_mbuf *g = pkts[j]; g != NULL; g = g->next)
					tide_mbuf_refcnt_update(g, 1);
	k = tide_tx_burst(s->txq, pkts, (uint16_t)n);
	if (s->other != NULL)
		for (unsigned j = 0; j < n; j++)
			if ((s->sent + j) % 2 == 0)
				tide_mbuf_free(pkts[j]); /* the second reference */
	tide_mbuf_free_bulk(pkts + k, n - k);
	s->sent += k;
}

/* Receive and check: sizes, order and every byte. Returns the segments seen. */
static unsigned recv_some(struct side *s, unsigned size)
{
	struct tide_mbuf *pkts[BURST];
	uint16_t n = tide_rx_burst(s->rxq, pkts, BURST);
	uint8_t want[9216], got[9216];
	unsigned segs = 0;

	for (unsigned j = 0; j < n; j++) {
		struct tide_mbuf *m = pkts[j];

		if (m->pkt_len != size)
			fail_msg("frame %u: %u bytes, sent %u", s->got, m->pkt_len, size);
		assert_int_equal(tide_mbuf_read(m, 0, size, got), 0);
		frame_fill(want, s->got, size);
		if (memcmp(got, want, size) != 0) {
			uint32_t seq;

			memcpy(&seq, got, 4);
			fail_msg("frame %u: payload differs (it carries seq %u)", s->got, seq);
		}
		segs += m->nb_segs;
		s->got++;
	}
	tide_mbuf_free_bulk(pkts, n);
	return segs;
}

static void wait_up(struct side *a, struct side *b)
{
	double end = now_s() + DEADLINE_S;
	struct tide_link la, lb;

	do {
		assert_int_equal(tide_port_link_get(a->p, &la), 0);
		assert_int_equal(tide_port_link_get(b->p, &lb), 0);
		if (now_s() > end)
			fail_msg("link not up: virtio %d, vhost %d", la.up, lb.up);
		usleep(1000);
	} while (!la.up || !lb.up);
}

static uint64_t xstat(struct tide_port *p, const char *name)
{
	uint64_t v = 0;

	if (tide_xstats_get_by_name(p, name, &v) != 0)
		fail_msg("no xstat %s", name);
	return v;
}

/* Stop and close both ports; every pool (the sender's other one too) whole, then freed. */
static void sides_close(struct side *v, struct side *h)
{
	assert_int_equal(tide_port_stop(v->p), 0);
	assert_int_equal(tide_port_stop(h->p), 0);
	tide_port_close(v->p);
	tide_port_close(h->p);
	tide_pool_cache_flush(v->pool);
	tide_pool_cache_flush(h->pool);
	assert_pool_full(v->pool);
	assert_pool_full(h->pool);
	tide_pool_free(v->pool);
	tide_pool_free(h->pool);
	if (v->other) {
		tide_pool_cache_flush(v->other);
		assert_pool_full(v->other);
		tide_pool_free(v->other);
	}
}

struct run {
	const char *virtio;   /* extra keys of the virtio port */
	const char *vhost;    /* of the vhost port */
	unsigned dataroom;    /* of the virtio port's pool (0: default) */
	unsigned v2h, h2v;    /* frame sizes each way (0: that direction is idle) */
	bool h2v_dropped;     /* the backend cannot place h2v frames: it drops them all */
	unsigned min_segs;    /* h2v frames arrive in at least this many segments each */
	uint64_t on, off;     /* features the backend must report negotiated, and not */
	bool bounce;          /* the virtio side sends what the device cannot read in place */
	enum tide_txfree txfree; /* of the virtio Tx queue */
	bool recycles;        /* completed Tx buffers must reach the Rx refill directly */
	bool v2h_dropped;     /* the virtio side cannot send its v2h frames: it drops them all */
};

#define F_INDIRECT (1ull << 28)

#define F_MRG	   (1ull << 15)
#define F_EVENT	   (1ull << 29)
#define F_IN_ORDER (1ull << 35)
#define F_PACKED   (1ull << 34)

/* The layout a case runs on: the virtio port's extra keys and the feature it must get. */
static const char *layout_keys(bool packed)
{
	return packed ? ",packed=yes" : "";
}

static void exchange(const struct run *r, bool packed)
{
	char spec[256];
	struct side v, h;
	struct tide_port_stats st = {.sz = sizeof(st)};
	struct tide_vhost_info vi = {.sz = sizeof(vi)};
	uint32_t want_v = r->v2h ? FRAMES : 0, want_h = r->h2v ? FRAMES : 0;
	uint64_t segs = 0;
	double end;

	snprintf(spec, sizeof(spec), "vhost:socket=%s/v.sock,role=server%s", dir, r->vhost);
	side_open(&h, spec, false, 0);
	snprintf(spec, sizeof(spec), "virtio:path=%s/v.sock,role=client%s%s", dir, r->virtio,
		 layout_keys(packed));
	side_open_tx(&v, spec, true, r->dataroom, r->txfree);
	if (r->bounce)
		assert_int_equal(tide_pktpool_create("private", 1024, 0, r->dataroom, NULL, &v.other),
				 0);
	assert_int_equal(tide_port_start(h.p), 0);
	assert_int_equal(tide_port_start(v.p), 0);
	wait_up(&v, &h);
	assert_int_equal(tide_vhost_info_get(h.p, &vi), 0);
	if ((vi.features & r->on) != r->on || (vi.features & r->off) != 0 ||
	    !(vi.features & F_PACKED) != !packed)
		fail_msg("negotiated features 0x%llx: want 0x%llx on and 0x%llx off, packed %d",
			 (unsigned long long)vi.features, (unsigned long long)r->on,
			 (unsigned long long)r->off, packed);
	end = now_s() + DEADLINE_S;
	while ((h.got < want_v && !r->v2h_dropped) || (r->v2h_dropped && v.sent < want_v) ||
	       (v.got < want_h && !r->h2v_dropped) || (r->h2v_dropped && h.sent < want_h)) {
		if (now_s() > end)
			fail_msg("after %.0f s: virtio sent %u, vhost got %u; vhost sent %u, virtio got %u",
				 DEADLINE_S, v.sent, h.got, h.sent, v.got);
		if (r->v2h)
			send_some(&v, r->v2h, want_v);
		if (r->h2v)
			send_some(&h, r->h2v, want_h);
		recv_some(&h, r->v2h);
		segs += recv_some(&v, r->h2v);
	}
	/* Exact counts, nothing extra in flight. */
	for (int i = 0; i < 100; i++) {
		recv_some(&h, r->v2h);
		segs += recv_some(&v, r->h2v);
		tide_txq_done_cleanup(v.txq, 0);
	}
	assert_int_equal(h.got, r->v2h_dropped ? 0 : want_v);
	assert_int_equal(v.got, r->h2v_dropped ? 0 : want_h);
	assert_int_equal(tide_port_stats_get(v.p, &st), 0);
	assert_int_equal(st.opackets, r->v2h_dropped ? 0 : want_v);
	assert_int_equal(st.obytes, r->v2h_dropped ? 0 : (uint64_t)want_v * r->v2h);
	assert_int_equal(st.ipackets, v.got);
	assert_int_equal(st.ibytes, (uint64_t)v.got * r->h2v);
	/* Frames dropped on the way out are counted as errors, and only those. */
	assert_int_equal(st.rxq[0].errors + st.txq[0].errors, r->v2h_dropped ? want_v : 0);
	/* The Tx engine released (and, paired with the Rx queue, recycled) what completed. */
	if ((!r->v2h_dropped && st.tx_released + st.tx_recycled < want_v - 256) ||
	    (r->recycles && st.tx_recycled == 0))
		fail_msg("tx_released %llu, tx_recycled %llu", (unsigned long long)st.tx_released,
			 (unsigned long long)st.tx_recycled);
	assert_int_equal(xstat(v.p, "virtio_faults"), 0);
	assert_int_equal(xstat(v.p, "virtio_connects"), 1);
	assert_int_equal(xstat(v.p, "virtio_tx_bounced"), r->bounce && !r->v2h_dropped ? want_v : 0);
	if (r->h2v && !r->h2v_dropped && segs < (uint64_t)FRAMES * r->min_segs)
		fail_msg("%llu segments for %u frames, want at least %u each",
			 (unsigned long long)segs, FRAMES, r->min_segs);
	assert_int_equal(tide_port_stats_get(h.p, &st), 0);
	assert_int_equal(st.ipackets, r->v2h_dropped ? 0 : want_v);
	if (r->h2v_dropped) {
		/* The backend took every frame and counted each as an error (too large). */
		assert_int_equal(st.txq[0].errors, want_h);
		assert_int_equal(st.opackets, 0);
	} else {
		assert_int_equal(st.opackets, want_h);
	}
	sides_close(&v, &h);
}

/*
 * The exchanges, one per row: {virtio keys, vhost keys, dataroom, v2h, h2v, h2v_dropped,
 * min_segs, on, off, bounce, txfree, recycles, v2h_dropped} (struct run).
 */
static const struct {
	const char *name;
	struct run r;
} exchanges[] = {
    /* 64-byte frames both ways, VIRTIO_F_IN_ORDER: Tx completes by count. */
    {"small_in_order", {"", "", 0, 64, 64, false, 1, F_IN_ORDER | F_MRG, F_EVENT}},
    {"large_in_order", {"", "", 0, 1518, 1518, false, 1, F_IN_ORDER, 0}},
    /* Without VIRTIO_F_IN_ORDER: every used id is read, checked and marks its slot. */
    {"small_per_id", {",in_order=no", "", 0, 64, 64, false, 1, 0, F_IN_ORDER}},
    {"large_per_id", {",in_order=no", ",in_order=no", 0, 1518, 1518, false, 1, 0, F_IN_ORDER}},
    /* The event index negotiated: kicks follow avail_event instead of the used flags. */
    {"event_idx", {",event_idx=yes", "", 0, 64, 1518, false, 1, F_EVENT, 0}},
    /* Receive buffers of 512 bytes: 1518-byte frames span three with MRG_RXBUF... */
    {"mergeable", {",mrg_rxbuf=yes", "", 512, 64, 1518, false, 3, F_MRG, 0}},
    /* ...and without it the backend cannot place them: it drops and counts every one. */
    {"not_mergeable", {",mrg_rxbuf=no", "", 512, 64, 1518, true, 1, 0, F_MRG}},
    /* The release policies: the fast-free contract, and recycling into the Rx refill (auto
     * pairing: the Rx queue this thread polled last takes the Tx queue's completed
     * buffers). */
    {"txfree_fast", {"", "", 0, 64, 64, false, 1, F_IN_ORDER, 0, false, TIDE_TXFREE_FAST, false}},
    {"txfree_recycle",
     {"", "", 0, 64, 64, false, 1, F_IN_ORDER, 0, false, TIDE_TXFREE_RECYCLE, true}},
    /* Packets the device cannot read in place (a pool outside the memory table, a second
     * reference) are copied into the port's pool, each counted; the originals are freed. */
    {"bounce", {"", "", 0, 200, 64, false, 1, 0, 0, true}},
    /* Frames of several segments (1518 bytes in 512-byte mbufs) go out in place through an
     * indirect descriptor table... */
    {"tx_chains", {"", "", 512, 1518, 64, false, 1, F_INDIRECT, 0}},
    /* ...and without VIRTIO_F_INDIRECT_DESC they are copied into one mbuf when that
     * fits, else dropped and counted (here: 1518 bytes do not fit a 512-byte data room). */
    {"tx_chains_no_indirect",
     {"", ",indirect=no", 512, 1518, 64, false, 1, 0, F_INDIRECT, false, 0, false, true}},
    /* Chains the device cannot take in place: more segments than an indirect table holds
     * (4200 bytes: 9 segments), or segments from a pool outside the memory table (or with a
     * second reference). They do not fit one mbuf either: dropped and counted, never
     * sent. */
    {"tx_chains_refused_segs",
     {"", "", 512, 4200, 64, false, 1, F_INDIRECT, 0, false, 0, false, true}},
    {"tx_chains_refused_pool",
     {"", "", 512, 1518, 64, false, 1, F_INDIRECT, 0, true, 0, false, true}},
};

/* One exchange row on one layout. */
struct xcase {
	const struct run *r;
	bool packed;
};

static void test_exchange(void **state)
{
	const struct xcase *x = *state;

	exchange(x->r, x->packed);
}

static const bool on_split = false, on_packed = true;

/* Move frames both ways until @v and @h have each received @want (64 bytes). */
static void pump(struct side *v, struct side *h, uint32_t want_v, uint32_t want_h)
{
	double end = now_s() + DEADLINE_S;

	while (h->got < want_v || v->got < want_h) {
		if (now_s() > end)
			fail_msg("virtio sent %u, vhost got %u of %u; vhost sent %u, virtio got %u of %u",
				 v->sent, h->got, want_v, h->sent, v->got, want_h);
		send_some(v, 64, want_v);
		send_some(h, 64, want_h);
		recv_some(h, 64);
		recv_some(v, 64);
	}
}

/*
 * The backend goes away with frames in flight on the virtio Tx ring and every receive
 * buffer posted; the frontend drops the connection, reconnects when the backend is back,
 * and runs from fresh rings: the old connection's buffers went home, the new exchange is
 * exact, and every pool is whole at the end.
 */
static void test_reconnect(void **state)
{
	bool packed = *(const bool *)*state;
	char spec[256];
	struct side v, h;
	struct tide_link l;
	struct tide_mbuf *pkts[BURST];
	double end;

	snprintf(spec, sizeof(spec), "vhost:socket=%s/v.sock,role=server", dir);
	side_open(&h, spec, false, 0);
	snprintf(spec, sizeof(spec), "virtio:path=%s/v.sock,role=client%s", dir,
		 layout_keys(packed));
	side_open(&v, spec, true, 0);
	assert_int_equal(tide_port_start(h.p), 0);
	assert_int_equal(tide_port_start(v.p), 0);
	wait_up(&v, &h);
	pump(&v, &h, 1000, 1000);
	/* 64 frames the backend never takes, then the backend leaves. */
	send_some(&v, 64, 1032);
	send_some(&v, 64, 1064);
	assert_int_equal(v.sent, 1064);
	/* Posted (256 Rx slots, refilled in batches of 32) and in flight (the 64; completed
	 * Tx buffers may have been reclaimed already). */
	if (tide_pool_in_use(v.pool) < 256 - 32 + 64)
		fail_msg("%u buffers held before the backend leaves", tide_pool_in_use(v.pool));
	assert_int_equal(tide_port_stop(h.p), 0);
	end = now_s() + DEADLINE_S;
	do {
		assert_int_equal(tide_port_link_get(v.p, &l), 0);
		if (now_s() > end)
			fail_msg("virtio link still up after the backend stopped");
	} while (l.up);
	assert_int_equal(xstat(v.p, "virtio_disconnects"), 1);
	/* Bursts while the link is down take nothing and give the old buffers back. */
	assert_int_equal(tide_rx_burst(v.rxq, pkts, BURST), 0);
	assert_int_equal(tide_tx_burst(v.txq, pkts, 0), 0);
	tide_pool_cache_flush(v.pool);
	assert_pool_full(v.pool);
	assert_int_equal(tide_port_start(h.p), 0);
	wait_up(&v, &h);
	assert_int_equal(xstat(v.p, "virtio_connects"), 2);
	h.got = v.sent; /* the 64 of the old connection are gone */
	pump(&v, &h, 2064, 2000);
	assert_int_equal(xstat(v.p, "virtio_faults"), 0);
	sides_close(&v, &h);
}

/* Two queue pairs (VIRTIO_NET_F_MQ, VHOST_USER_PROTOCOL_F_MQ): each queue's frames stay on
 * it both ways, exact counts and payloads per queue. */
static void test_two_queues(void **state)
{
	bool packed = *(const bool *)*state;
	struct tide_pktpool_opts o = {.sz = sizeof(o), .pool_flags = TIDE_POOL_F_SHARED};
	struct tide_vhost_info vi = {.sz = sizeof(vi)};
	struct tide_pool *vpool, *hpool;
	struct side v[2], h[2];
	struct tide_port *vp, *hp;
	char spec[256];
	double end;

	assert_int_equal(tide_pktpool_create("mqv", 4096, 64, 0, &o, &vpool), 0);
	assert_int_equal(tide_pktpool_create("mqh", 4096, 64, 0, NULL, &hpool), 0);
	snprintf(spec, sizeof(spec), "vhost:socket=%s/v.sock,role=server,queues=2", dir);
	assert_int_equal(tide_port_open(spec, &hp), 0);
	snprintf(spec, sizeof(spec), "virtio:path=%s/v.sock,role=client,queues=2%s", dir,
		 layout_keys(packed));
	assert_int_equal(tide_port_open(spec, &vp), 0);
	assert_int_equal(tide_port_configure(hp, 2, 2), 0);
	assert_int_equal(tide_port_configure(vp, 2, 2), 0);
	for (unsigned q = 0; q < 2; q++) {
		memset(&v[q], 0, sizeof(v[q]));
		memset(&h[q], 0, sizeof(h[q]));
		v[q].p = vp, v[q].pool = vpool;
		h[q].p = hp, h[q].pool = hpool;
		assert_int_equal(tide_rxq_setup(vp, q, 256, vpool, NULL), 0);
		assert_int_equal(tide_txq_setup(vp, q, 256, NULL), 0);
		assert_int_equal(tide_rxq_setup(hp, q, 256, hpool, NULL), 0);
		assert_int_equal(tide_txq_setup(hp, q, 256, NULL), 0);
		v[q].rxq = tide_port_rxq(vp, q), v[q].txq = tide_port_txq(vp, q);
		h[q].rxq = tide_port_rxq(hp, q), h[q].txq = tide_port_txq(hp, q);
	}
	assert_int_equal(tide_port_start(hp), 0);
	assert_int_equal(tide_port_start(vp), 0);
	wait_up(&v[0], &h[0]);
	assert_int_equal(tide_vhost_info_get(hp, &vi), 0);
	assert_int_equal(!!(vi.features & F_PACKED), packed);
	end = now_s() + DEADLINE_S;
	while (h[0].got < 2000 || h[1].got < 3000 || v[0].got < 2000 || v[1].got < 3000) {
		if (now_s() > end)
			fail_msg("queue 0: %u/%u, queue 1: %u/%u", h[0].got, v[0].got, h[1].got,
				 v[1].got);
		for (unsigned q = 0; q < 2; q++) {
			/* Queue 1 carries other sizes and counts than queue 0. */
			send_some(&v[q], q ? 300 : 64, q ? 3000 : 2000);
			send_some(&h[q], q ? 700 : 128, q ? 3000 : 2000);
			recv_some(&h[q], q ? 300 : 64);
			recv_some(&v[q], q ? 700 : 128);
		}
	}
	assert_int_equal(xstat(vp, "virtio_faults"), 0);
	assert_int_equal(tide_port_stop(vp), 0);
	assert_int_equal(tide_port_stop(hp), 0);
	assert_int_equal(h[0].got + h[1].got + v[0].got + v[1].got, 10000);
	tide_port_close(vp);
	tide_port_close(hp);
	tide_pool_cache_flush(vpool);
	tide_pool_cache_flush(hpool);
	assert_pool_full(vpool);
	assert_pool_full(hpool);
	tide_pool_free(vpool);
	tide_pool_free(hpool);
}

/* Started, no backend yet (and again after one left): bursts take nothing and post
 * nothing; the rings are not the queues' until a connection runs. */
static void test_no_backend(void **state)
{
	char spec[256];
	struct side v;
	struct tide_mbuf *pkts[4];

	(void)state;
	snprintf(spec, sizeof(spec), "virtio:path=%s/nobody.sock,role=client", dir);
	side_open(&v, spec, true, 0);
	assert_int_equal(tide_port_start(v.p), 0);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(tide_mbuf_alloc_bulk(v.pool, pkts, 4), 0);
		assert_int_equal(tide_tx_burst(v.txq, pkts, 4), 0);
		tide_mbuf_free_bulk(pkts, 4);
		assert_int_equal(tide_rx_burst(v.rxq, pkts, 4), 0);
	}
	tide_pool_cache_flush(v.pool);
	assert_pool_full(v.pool);
	tide_port_close(v.p);
	assert_pool_full(v.pool);
	tide_pool_free(v.pool);
}

/* A pool the backend cannot map is refused when the queue is set up, with a reason. */
static char logged[512];

static void capture(enum tide_log_level l, const char *c, const char *m, void *u)
{
	(void)l;
	(void)c;
	(void)u;
	snprintf(logged, sizeof(logged), "%s", m);
}

static void test_pool_not_shared(void **state)
{
	struct tide_pool *pool;
	struct tide_port *p;
	char spec[128];

	(void)state;
	snprintf(spec, sizeof(spec), "virtio:path=%s/v.sock", dir);
	assert_int_equal(tide_pktpool_create("private", 512, 0, 0, NULL, &pool), 0);
	assert_int_equal(tide_port_open(spec, &p), 0);
	assert_int_equal(tide_port_configure(p, 1, 1), 0);
	tide_log_set_handler(capture, NULL);
	assert_int_equal(tide_rxq_setup(p, 0, 256, pool, NULL), -EINVAL);
	tide_log_set_handler(NULL, NULL);
	if (strstr(logged, "TIDE_POOL_F_SHARED") == NULL)
		fail_msg("log: %s", logged);
	tide_port_close(p);
	assert_pool_full(pool);
	tide_pool_free(pool);
}

/*
 * The frontend reclaims its Tx ring eagerly by default (tide_port_info.tx_reclaim_eager):
 * once the backend has taken two buckets (64 frames, rs_thresh 32 of 256 slots), the next
 * burst gives their buffers back, where the default free_thresh of 32 would wait until
 * fewer than 32 of the 256 slots were free. An explicit free_thresh still wins.
 */
static void test_tx_reclaim_eager(void **state)
{
	struct tide_port_info info = {.sz = sizeof(info)};
	struct tide_port_stats st = {.sz = sizeof(st)};
	struct tide_txq_conf lazy = {.sz = sizeof(lazy), .free_thresh = 32};
	char spec[256];
	struct side v, h;
	double end;

	(void)state;
	for (int pass = 0; pass < 2; pass++) {
		snprintf(spec, sizeof(spec), "vhost:socket=%s/v.sock,role=server", dir);
		side_open(&h, spec, false, 0);
		snprintf(spec, sizeof(spec), "virtio:path=%s/v.sock,role=client", dir);
		side_open(&v, spec, true, 0);
		assert_int_equal(tide_port_info_get(v.p, &info), 0);
		assert_int_equal(info.tx_reclaim_eager, 1);
		if (pass == 1) /* the application's own free_thresh: reclaim waits */
			assert_int_equal(tide_txq_setup(v.p, 0, 256, &lazy), 0);
		v.txq = tide_port_txq(v.p, 0);
		assert_int_equal(tide_port_start(h.p), 0);
		assert_int_equal(tide_port_start(v.p), 0);
		wait_up(&v, &h);
		end = now_s() + DEADLINE_S;
		while (h.got < 64) {
			if (now_s() > end)
				fail_msg("virtio sent %u, vhost got %u of 64", v.sent, h.got);
			send_some(&v, 64, 64);
			recv_some(&h, 64);
		}
		assert_int_equal(tide_port_stats_get(v.p, &st), 0);
		assert_int_equal(st.tx_released, 0);
		send_some(&v, 64, 65);
		assert_int_equal(v.sent, 65);
		assert_int_equal(tide_port_stats_get(v.p, &st), 0);
		if (pass == 0 && st.tx_released < 64)
			fail_msg("eager: %llu of the 64 completed buffers reclaimed",
				 (unsigned long long)st.tx_released);
		if (pass == 1 && st.tx_released != 0)
			fail_msg("free_thresh 32: %llu reclaimed with 192 slots free",
				 (unsigned long long)st.tx_released);
		while (h.got < 65) {
			if (now_s() > end)
				fail_msg("vhost got %u of 65", h.got);
			recv_some(&h, 64);
		}
		sides_close(&v, &h);
	}
}

/* virtio-pci takes packed=yes: the open goes on to the device (none at this address, so
 * it fails there, and not on the key); a build without the PCI layer refuses pci= itself
 * (-ENOTSUP). */
static void test_packed_pci_open(void **state)
{
	struct tide_port *p = NULL;
	int rc;

	(void)state;
	logged[0] = '\0';
	tide_log_set_handler(capture, NULL);
	rc = tide_port_open("virtio:pci=0000:00:1f.7,packed=yes", &p);
	tide_log_set_handler(NULL, NULL);
	assert_null(p);
	if (rc >= 0 || strstr(logged, "packed") != NULL ||
	    (strstr(logged, "0000:00:1f.7: no such PCI device") == NULL &&
	     !(rc == -ENOTSUP && strstr(logged, "no PCI layer") != NULL)))
		fail_msg("rc %d, log: %s", rc, logged);
}

int main(void)
{
	enum { NX = sizeof(exchanges) / sizeof(exchanges[0]) };
	static struct xcase xc[2 * NX];
	static char names[NX][64];
	struct CMUnitTest tests[2 * NX + 8] = {
	    [2 * NX] = cmocka_unit_test_prestate(test_reconnect, (void *)&on_split),
	    [2 * NX + 1] = {"reconnect_packed", test_reconnect, NULL, NULL, (void *)&on_packed},
	    [2 * NX + 2] = cmocka_unit_test_prestate(test_two_queues, (void *)&on_split),
	    [2 * NX + 3] = {"two_queues_packed", test_two_queues, NULL, NULL, (void *)&on_packed},
	    [2 * NX + 4] = cmocka_unit_test(test_no_backend),
	    [2 * NX + 5] = cmocka_unit_test(test_pool_not_shared),
	    [2 * NX + 6] = cmocka_unit_test(test_packed_pci_open),
	    [2 * NX + 7] = cmocka_unit_test(test_tx_reclaim_eager),
	};

	/* Every row over split virtqueues, then over packed ones. */
	for (unsigned i = 0; i < 2 * NX; i++) {
		xc[i] = (struct xcase){&exchanges[i % NX].r, i >= NX};
		if (i >= NX)
			snprintf(names[i - NX], sizeof(names[0]), "%s_packed", exchanges[i - NX].name);
		tests[i] = (struct CMUnitTest){.name = i < NX ? exchanges[i].name : names[i - NX],
					       .test_func = test_exchange,
					       .initial_state = &xc[i]};
	}
	if (tide_thread_register() < 0)
		return 1;
	return cmocka_run_group_tests(tests, setup, teardown);
}
