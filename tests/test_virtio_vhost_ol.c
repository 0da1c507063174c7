/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Offloads with tide at both ends of vhost-user: a tide virtio port (client) and a tide
 * vhost port (server) in one process, each enabling what its port info offers, as an
 * application does. Split virtqueues only (the frontend has no packed layout).
 *  - offloaded both ways: TCP over IPv4 and IPv6, 8000 to 60000 bytes in chains, sent as
 *    TSO requests, arrive whole as TSO requests with the same segment size and lengths and
 *    the same bytes (the checksum field holding the pseudo-header sum); cut in software
 *    there, the segments' checksums verify and their payloads are what was sent. Partial
 *    TCP and UDP checksums arrive as requests and, filled, equal the sender's packet with
 *    its checksums computed. The senders' software counters stay 0;
 *  - a receiving side without Rx offloads (vhost's or virtio's Rx queue; vhost
 *    offloads=no): the features are not negotiated, the sender cuts and fills in software
 *    (its counters say how many) and what arrives is tso_segsz-sized segments with every
 *    checksum right;
 *  - exact counts, no fault; after each case the vhost pool full and every frame the virtio
 *    Tx queue sent given back; every pool full at the end of each configuration.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <tide/lcore.h>
#include <tide/offload.h>
#include <tide/port.h>
#include <tide/vhost.h>

#include "ol_pkt.h"
#include "testutil.h"
#include "proc_util.h"
#include "tmp_util.h"

#define DEADLINE_S 10.0
#define MAX_OUT	   128
#define RING	   256	/* descriptors a queue */
#define VDATAROOM  9216 /* the virtio pool's: a 60 KiB packet in 7 segments, sent in place */

#define F_CSUM	     (1ull << 0)
#define F_GUEST_CSUM (1ull << 1)
#define F_GUEST_TSO4 (1ull << 7)
#define F_GUEST_TSO6 (1ull << 8)
#define F_HOST_TSO4  (1ull << 11)
#define F_HOST_TSO6  (1ull << 12)
#define F_HOST	     (F_CSUM | F_HOST_TSO4 | F_HOST_TSO6)
#define F_GUEST	     (F_GUEST_CSUM | F_GUEST_TSO4 | F_GUEST_TSO6)

#define RX_WANT (TIDE_OFFLOAD_RX_TCP_CKSUM | TIDE_OFFLOAD_RX_UDP_CKSUM | TIDE_OFFLOAD_RX_TCP_LRO)
#define TX_WANT                                                                                    \
	(TIDE_OFFLOAD_TX_IPV4_CKSUM | TIDE_OFFLOAD_TX_TCP_CKSUM | TIDE_OFFLOAD_TX_UDP_CKSUM |      \
	 TIDE_OFFLOAD_TX_TCP_TSO)

static char dir[64];
static uint8_t A[70000], B[70000], C[70000];

struct side {
	const char *name;
	struct tide_port *p;
	struct tide_pool *pool;
	struct tide_rxq *rxq;
	struct tide_txq *txq;
	uint64_t rxol, txol; /* enabled on the queues */
	uint64_t got, sent;  /* frames received, frames the peer received from this side */
	uint64_t bytes;	     /* bytes of the frames the peer received from this side */
};

static struct side V, H; /* virtio, vhost */

static uint64_t xstat(struct tide_port *p, const char *name)
{
	uint64_t v = 0;

	if (tide_xstats_get_by_name(p, name, &v) != 0)
		fail_msg("no xstat %s", name);
	return v;
}

/* The software work a sender did: checksums filled, TSO packets cut. */
static uint64_t sw_cksum(const struct side *s)
{
	return xstat(s->p, s == &V ? "virtio_tx_sw_cksum" : "vhost_tx_sw_cksum");
}

static uint64_t sw_tso(const struct side *s)
{
	return xstat(s->p, s == &V ? "virtio_tx_sw_tso" : "vhost_tx_sw_gso");
}

/* Open a side; its queues enable the offloads wanted of what the port offers (@ol). */
static void side_open(struct side *s, const char *name, const char *spec, bool shared, unsigned n,
		      unsigned dataroom, bool rxol, bool ol)
{
	struct tide_pktpool_opts o = {.sz = sizeof(o),
				      .pool_flags = shared ? TIDE_POOL_F_SHARED : 0};
	struct tide_port_info info = {.sz = sizeof(info)};
	struct tide_rxq_conf rc = {.sz = sizeof(rc)};
	struct tide_txq_conf tc = {.sz = sizeof(tc)};

	memset(s, 0, sizeof(*s));
	s->name = name;
	assert_int_equal(tide_pktpool_create(name, n, 0, dataroom, &o, &s->pool), 0);
	if (tide_port_open(spec, &s->p) != 0)
		fail_msg("cannot open %s", spec);
	assert_int_equal(tide_port_info_get(s->p, &info), 0);
	if (ol) {
		if ((info.rx_offload_capa & RX_WANT) != RX_WANT ||
		    (info.tx_offload_capa & TX_WANT) != TX_WANT)
			fail_msg("%s: capabilities rx 0x%llx tx 0x%llx", name,
				 (unsigned long long)info.rx_offload_capa,
				 (unsigned long long)info.tx_offload_capa);
		s->rxol = rxol ? info.rx_offload_capa & RX_WANT : 0;
		s->txol = info.tx_offload_capa & TX_WANT;
	} else {
		assert_int_equal(info.rx_offload_capa, 0);
		assert_int_equal(info.tx_offload_capa, 0);
	}
	rc.offloads = s->rxol;
	tc.offloads = s->txol;
	assert_int_equal(tide_port_configure(s->p, 1, 1), 0);
	assert_int_equal(tide_rxq_setup(s->p, 0, RING, s->pool, &rc), 0);
	assert_int_equal(tide_txq_setup(s->p, 0, RING, &tc), 0);
	s->rxq = tide_port_rxq(s->p, 0);
	s->txq = tide_port_txq(s->p, 0);
}

/*
 * Send @m from @s; while the ring is full, poll @r's Rx queue, whose bursts post the
 * virtio side's receive buffers (nothing may arrive before the packet is sent).
 */
static void send1(struct side *s, struct side *r, struct tide_mbuf *m)
{
	double end = now_s() + DEADLINE_S;

	while (tide_tx_burst(s->txq, &m, 1) != 1) {
		struct tide_mbuf *x;

		if (now_s() > end)
			fail_msg("%s: cannot send", s->name);
		if (tide_rx_burst(r->rxq, &x, 1) != 0)
			fail_msg("%s: a frame before the one sent (%u bytes)", r->name, x->pkt_len);
		tide_txq_done_cleanup(V.txq, 0);
		usleep(100);
	}
}

/* Receive exactly @n frames on @r (more within a short while fails). */
static unsigned recv_n(struct side *r, struct tide_mbuf **out, unsigned n)
{
	double end = now_s() + DEADLINE_S;
	unsigned k = 0;

	while (k < n) {
		if (now_s() > end)
			fail_msg("%s: %u of %u frames arrived", r->name, k, n);
		k += tide_rx_burst(r->rxq, out + k, (uint16_t)(n - k));
		tide_txq_done_cleanup(V.txq, 0);
	}
	for (int i = 0; i < 20; i++) {
		struct tide_mbuf *x;

		usleep(200);
		if (tide_rx_burst(r->rxq, &x, 1) != 0)
			fail_msg("%s: a frame more than the %u expected (%u bytes)", r->name, n,
				 x->pkt_len);
	}
	r->got += n;
	return k;
}

static void expect_bytes(const struct tide_mbuf *m, const uint8_t *want, uint32_t len,
			 const char *what)
{
	if (m->pkt_len != len)
		fail_msg("%s: %u bytes, want %u", what, m->pkt_len, len);
	assert_int_equal(tide_mbuf_read(m, 0, len, C), 0);
	for (uint32_t i = 0; i < len; i++)
		if (C[i] != want[i])
			fail_msg("%s: byte %u is 0x%02x, want 0x%02x", what, i, C[i], want[i]);
}

/* A frame whose checksums are all right by tide_offload_cksum_verify(). */
static void expect_good(struct tide_mbuf *m, bool v6, const char *what)
{
	uint32_t f;

	m->ol_flags &= ~(TIDE_MBUF_F_RX_IP_CKSUM_MASK | TIDE_MBUF_F_RX_L4_CKSUM_MASK);
	assert_int_equal(tide_offload_cksum_verify(m), 0);
	f = m->ol_flags;
	if ((f & TIDE_MBUF_F_RX_L4_CKSUM_MASK) != TIDE_MBUF_F_RX_L4_CKSUM_GOOD ||
	    (!v6 && (f & TIDE_MBUF_F_RX_IP_CKSUM_MASK) != TIDE_MBUF_F_RX_IP_CKSUM_GOOD))
		fail_msg("%s: checksum status 0x%x", what, f);
}

/* Segments @seg[0..n) of the TCP packet @k at @ref: sizes, checksums, payload in order. */
static void expect_segments(struct tide_mbuf **seg, int n, const struct pkt *k, const uint8_t *ref,
			    uint16_t mss, const char *what)
{
	uint32_t hl = k->l2 + k->l3 + k->l4, off = 0;
	char w[96];

	if (n != (int)((k->payload + mss - 1) / mss))
		fail_msg("%s: %d segments of %u payload bytes at %u", what, n, k->payload, mss);
	for (int i = 0; i < n; i++) {
		uint32_t pl = k->payload - off < mss ? k->payload - off : mss;

		snprintf(w, sizeof(w), "%s, segment %d", what, i);
		if (seg[i]->pkt_len != hl + pl)
			fail_msg("%s: %u bytes, want %u", w, seg[i]->pkt_len, hl + pl);
		if (seg[i]->ol_flags & (TIDE_MBUF_F_TX_TCP_SEG | TIDE_MBUF_F_TX_L4_MASK))
			fail_msg("%s: Tx requests left 0x%x", w, seg[i]->ol_flags);
		expect_good(seg[i], k->v6, w);
		assert_int_equal(tide_mbuf_read(seg[i], hl, pl, C), 0);
		if (memcmp(C, ref + hl + off, pl) != 0)
			fail_msg("%s: payload differs", w);
		off += pl;
	}
	tide_mbuf_free_bulk(seg, (unsigned)n);
}

/* The Tx request flags of a packet @k (the IPv4 header checksum too). */
static uint32_t req_flags(const struct pkt *k, bool tso)
{
	uint32_t f = k->v6 ? TIDE_MBUF_F_TX_IPV6 : TIDE_MBUF_F_TX_IPV4 | TIDE_MBUF_F_TX_IP_CKSUM;

	f |= k->udp ? TIDE_MBUF_F_TX_UDP_CKSUM : TIDE_MBUF_F_TX_TCP_CKSUM;
	return f | (tso ? TIDE_MBUF_F_TX_TCP_SEG : 0);
}

/* Send the packet at @ref as built, with its checksum fields zeroed and @f requested. */
static void send_req(struct side *s, struct side *r, const uint8_t *ref, const struct pkt *k,
		     uint32_t f, uint16_t mss)
{
	struct tide_mbuf *m;

	memcpy(B, ref, k->len);
	if (!k->v6)
		put16(B + k->l2 + 10, 0);
	put16(B + k->l2 + k->l3 + (k->udp ? 6 : 16), 0);
	m = test_chain(s->pool, B, k->len, UINT32_MAX, 0, NULL);
	m->ol_flags = f;
	m->l2_len = (uint8_t)k->l2;
	m->l3_len = (uint16_t)k->l3;
	m->l4_len = (uint8_t)k->l4;
	m->tso_segsz = mss;
	send1(s, r, m);
}

/*
 * A TSO packet (@payload bytes of TCP at @mss) from @s to @r; @offloaded: the receiving
 * side negotiated the features, else the sender cut it.
 */
static void tso_case(struct side *s, struct side *r, bool v6, uint32_t payload, uint16_t mss,
		     bool offloaded)
{
	struct tide_mbuf *in[MAX_OUT], *seg[MAX_OUT];
	struct pkt k = build(A, v6, false, payload, payload ^ mss, true);
	uint64_t c0 = sw_cksum(s), t0 = sw_tso(s);
	unsigned nseg = (payload + mss - 1) / mss;
	uint32_t want_f;
	char what[96];
	int n;

	snprintf(what, sizeof(what), "%s -> %s, TCP/IPv%c %u bytes at %u", s->name, r->name,
		 v6 ? '6' : '4', payload, mss);
	send_req(s, r, A, &k, req_flags(&k, true), mss);
	if (!offloaded) {
		/* The sender cut it: nseg frames, every checksum filled, nothing requested. */
		recv_n(r, in, nseg);
		s->sent += nseg;
		for (unsigned i = 0; i < nseg; i++)
			s->bytes += in[i]->pkt_len;
		expect_segments(in, (int)nseg, &k, A, mss, what);
		assert_int_equal(sw_tso(s) - t0, 1);
		return;
	}
	recv_n(r, in, 1);
	s->sent++;
	s->bytes += in[0]->pkt_len;
	/* Whole, the same bytes (A holds the pseudo-header sum where the checksum goes). */
	expect_bytes(in[0], A, k.len, what);
	want_f = (v6 ? TIDE_MBUF_F_TX_IPV6 : TIDE_MBUF_F_TX_IPV4) | TIDE_MBUF_F_TX_TCP_CKSUM |
		 TIDE_MBUF_F_TX_TCP_SEG | TIDE_MBUF_F_RX_L4_CKSUM_NONE;
	if ((in[0]->ol_flags & ~TIDE_MBUF_F_RX_IP_CKSUM_MASK) != want_f ||
	    in[0]->tso_segsz != mss || in[0]->l2_len != k.l2 || in[0]->l3_len != k.l3 ||
	    in[0]->l4_len != k.l4)
		fail_msg("%s: flags 0x%x (want 0x%x), tso_segsz %u, lengths %u/%u/%u", what,
			 in[0]->ol_flags, want_f, in[0]->tso_segsz, in[0]->l2_len, in[0]->l3_len,
			 in[0]->l4_len);
	n = tide_offload_segment(in[0], r->pool, seg, MAX_OUT);
	if (n < 0)
		fail_msg("%s: tide_offload_segment: %d", what, n);
	build(A, v6, false, payload, payload ^ mss, false); /* the same frame, checksum final */
	expect_segments(seg, n, &k, A, mss, what);
	assert_int_equal(sw_tso(s), t0);
	assert_int_equal(sw_cksum(s), c0);
}

/* A partial checksum (TCP or UDP, @payload bytes) from @s to @r. */
static void csum_case(struct side *s, struct side *r, bool v6, bool udp, uint32_t payload,
		      bool offloaded)
{
	struct tide_mbuf *in;
	struct pkt k = build(A, v6, udp, payload, payload * 3 + udp, false);
	uint64_t c0 = sw_cksum(s), t0 = sw_tso(s);
	uint32_t want_f;
	char what[96];

	snprintf(what, sizeof(what), "%s -> %s, %s/IPv%c checksum, %u bytes", s->name, r->name,
		 udp ? "UDP" : "TCP", v6 ? '6' : '4', payload);
	send_req(s, r, A, &k, req_flags(&k, false), 0);
	recv_n(r, &in, 1);
	s->sent++;
	s->bytes += in->pkt_len;
	if (!offloaded) {
		expect_bytes(in, A, k.len, what);
		if (in->ol_flags & (TIDE_MBUF_F_TX_L4_MASK | TIDE_MBUF_F_TX_TCP_SEG))
			fail_msg("%s: Tx requests 0x%x", what, in->ol_flags);
		expect_good(in, v6, what);
		tide_mbuf_free(in);
		assert_int_equal(sw_cksum(s) - c0, 1);
		assert_int_equal(sw_tso(s), t0);
		return;
	}
	build(B, v6, udp, payload, payload * 3 + udp, true);
	expect_bytes(in, B, k.len, what);
	want_f = (v6 ? TIDE_MBUF_F_TX_IPV6 : TIDE_MBUF_F_TX_IPV4) |
		 (udp ? TIDE_MBUF_F_TX_UDP_CKSUM : TIDE_MBUF_F_TX_TCP_CKSUM) |
		 TIDE_MBUF_F_RX_L4_CKSUM_NONE;
	if ((in->ol_flags & ~TIDE_MBUF_F_RX_IP_CKSUM_MASK) != want_f || in->l2_len != k.l2 ||
	    in->l3_len != k.l3)
		fail_msg("%s: flags 0x%x (want 0x%x), lengths %u/%u", what, in->ol_flags, want_f,
			 in->l2_len, in->l3_len);
	assert_int_equal(tide_offload_cksum_fill(in), 0);
	expect_bytes(in, A, k.len, what);
	tide_mbuf_free(in);
	assert_int_equal(sw_cksum(s), c0);
	assert_int_equal(sw_tso(s), t0);
}

/*
 * After a case: the vhost pool is full (the backend holds no buffer between bursts); the
 * virtio Tx queue has let go of every frame it sent (a packet it cut counts as its
 * frames), so that the virtio pool lends no more than its Rx ring holds (its refill comes
 * in batches: the exact count varies).
 */
static void pools_settled(void)
{
	struct tide_port_stats st = {.sz = sizeof(st)};
	double end = now_s() + DEADLINE_S;
	struct tide_mbuf *x;

	do {
		if (now_s() > end)
			fail_msg("virtio Tx: %llu frames released of %llu sent",
				 (unsigned long long)st.tx_released, (unsigned long long)V.sent);
		tide_txq_done_cleanup(V.txq, 0);
		assert_int_equal(tide_rx_burst(V.rxq, &x, 1), 0);
		assert_int_equal(tide_port_stats_get(V.p, &st), 0);
	} while (st.tx_released != V.sent);
	assert_pool_full(H.pool);
	if (tide_pool_in_use(V.pool) > RING)
		fail_msg("virtio pool: %u buffers out, ring of %u", tide_pool_in_use(V.pool), RING);
}

/* Every case from @s to @r. */
static void one_way(struct side *s, struct side *r, bool offloaded)
{
	static const uint32_t sizes[] = {8000, 30000, 60000};
	static const uint16_t mss[] = {1448, 1000, 1440};

	for (int v6 = 0; v6 < 2; v6++) {
		for (unsigned i = 0; i < 3; i++) {
			tso_case(s, r, v6, sizes[i], mss[i], offloaded);
			pools_settled();
		}
		for (int udp = 0; udp < 2; udp++) {
			csum_case(s, r, v6, udp, 100, offloaded);
			pools_settled();
			csum_case(s, r, v6, udp, 1400, offloaded);
			pools_settled();
		}
	}
}

struct cfg {
	const char *vhost;   /* extra keys of the vhost port */
	bool h_ol;	     /* the vhost port offers offloads (offloads=yes) */
	bool h_rxol, v_rxol; /* the Rx queues enable them */
	bool packed;	     /* the frontend asks for packed virtqueues (packed=yes) */
};

static void run_cfg(const struct cfg *c)
{
	char spec[256];
	struct tide_link lv, lh;
	struct tide_vhost_info vi = {.sz = sizeof(vi)};
	struct tide_port_stats st = {.sz = sizeof(st)};
	bool v2h = c->h_ol && c->h_rxol, h2v = c->h_ol && c->v_rxol;
	double end;

	snprintf(spec, sizeof(spec), "vhost:socket=%s/v.sock,role=server%s", dir, c->vhost);
	side_open(&H, "vhost", spec, false, 4096, 0, c->h_rxol, c->h_ol);
	snprintf(spec, sizeof(spec), "virtio:path=%s/v.sock,role=client%s", dir,
		 c->packed ? ",packed=yes" : "");
	side_open(&V, "virtio", spec, true, 1024, VDATAROOM, c->v_rxol, true);
	assert_int_equal(tide_port_start(H.p), 0);
	assert_int_equal(tide_port_start(V.p), 0);
	end = now_s() + DEADLINE_S;
	do {
		assert_int_equal(tide_port_link_get(V.p, &lv), 0);
		assert_int_equal(tide_port_link_get(H.p, &lh), 0);
		if (now_s() > end)
			fail_msg("link not up: virtio %d, vhost %d", lv.up, lh.up);
		usleep(1000);
	} while (!lv.up || !lh.up);
	assert_int_equal(tide_vhost_info_get(H.p, &vi), 0);
	if (!(vi.features & (1ull << 34)) != !c->packed) /* VIRTIO_F_RING_PACKED */
		fail_msg("negotiated 0x%llx: packed rings %s", (unsigned long long)vi.features,
			 c->packed ? "asked for, not taken" : "taken unasked");
	if ((vi.features & F_HOST) != (v2h ? F_HOST : 0) ||
	    (vi.features & F_GUEST) != (h2v ? F_GUEST : 0))
		fail_msg("negotiated 0x%llx: host features %s, guest features %s",
			 (unsigned long long)vi.features, v2h ? "on" : "off", h2v ? "on" : "off");

	one_way(&V, &H, v2h);
	if (c->h_ol)
		one_way(&H, &V, h2v);

	/*
	 * Exact counts, nothing refused or faulted. opackets and obytes count the frames that
	 * went to the peer: a packet the sender cut in software counts once per segment.
	 */
	assert_int_equal(tide_port_stats_get(H.p, &st), 0);
	assert_int_equal(st.ipackets, H.got);
	assert_int_equal(st.opackets, H.sent);
	assert_int_equal(st.obytes, H.bytes);
	assert_int_equal(st.rxq[0].errors + st.txq[0].errors, 0);
	assert_int_equal(tide_port_stats_get(V.p, &st), 0);
	assert_int_equal(st.ipackets, V.got);
	assert_int_equal(st.opackets, V.sent);
	assert_int_equal(st.obytes, V.bytes);
	assert_int_equal(st.rxq[0].errors + st.txq[0].errors, 0);
	assert_int_equal(H.got, V.sent);
	assert_int_equal(V.got, H.sent);
	assert_int_equal(tide_vhost_info_get(H.p, &vi), 0);
	assert_int_equal(vi.connects, 1);
	assert_int_equal(vi.disconnects, 0);
	assert_int_equal(vi.violations, 0);
	assert_int_equal(xstat(V.p, "virtio_faults"), 0);
	assert_int_equal(xstat(V.p, "virtio_connects"), 1);
	assert_int_equal(xstat(V.p, "virtio_tx_offload_refused"), 0);
	assert_int_equal(xstat(H.p, "vhost_tx_ol_bad"), 0);
	assert_int_equal(xstat(H.p, "vhost_tx_ol_nombuf"), 0);
	assert_int_equal(xstat(H.p, "vhost_tx_gso_partial"), 0);

	assert_int_equal(tide_port_stop(V.p), 0);
	assert_int_equal(tide_port_stop(H.p), 0);
	tide_port_close(V.p);
	tide_port_close(H.p);
	tide_pool_cache_flush(V.pool);
	tide_pool_cache_flush(H.pool);
	assert_pool_full(V.pool);
	assert_pool_full(H.pool);
	tide_pool_free(V.pool);
	tide_pool_free(H.pool);
}

/* Both ways offloaded: whole TSO packets and partial checksums, no software work. */
static void test_offloaded(void **state)
{
	(void)state;
	run_cfg(&(struct cfg){"", true, true, true});
}

/* vhost's Rx queue without offloads: virtio does the work toward it, not the reverse. */
static void test_vhost_rx_plain(void **state)
{
	(void)state;
	run_cfg(&(struct cfg){"", true, false, true});
}

/* virtio's Rx queue without offloads: vhost does the work toward it, not the reverse. */
static void test_virtio_rx_plain(void **state)
{
	(void)state;
	run_cfg(&(struct cfg){"", true, true, false});
}

/* vhost offloads=no: no capabilities, nothing offered; virtio does the work toward it. */
static void test_vhost_offloads_no(void **state)
{
	(void)state;
	run_cfg(&(struct cfg){",offloads=no", false, false, true});
}

/* The first two again on packed virtqueues. */
static void test_offloaded_packed(void **state)
{
	(void)state;
	run_cfg(&(struct cfg){"", true, true, true, true});
}

static void test_virtio_rx_plain_packed(void **state)
{
	(void)state;
	run_cfg(&(struct cfg){"", true, true, false, true});
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "%s/tide-vvol-XXXXXX", test_tmp());
	return mkdtemp(dir) == NULL ? -1 : 0;
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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_offloaded, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_vhost_rx_plain, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_virtio_rx_plain, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_vhost_offloads_no, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_offloaded_packed, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_virtio_rx_plain_packed, setup, teardown),
	};

	if (tide_thread_register() < 0)
		return 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
