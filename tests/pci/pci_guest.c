/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The guest side of the PCI suite: tide's e1000e driver on a QEMU e1000e behind the
 * emulated IOMMU, against the host's wire (tests/pci/wire.c), which it commands over a
 * serial port. Each check prints "PCITEST <name> ok" or "PCITEST <name> FAIL <why>";
 * the host script fails on any FAIL and on a missing ok.
 *
 * usage: pci_guest BDF TTY COUNT main|badmap
 *   main    open errors, exact counts and payloads both ways at 60, 1514 and 8996 bytes
 *           (64, 1518 and 9000 with the CRC), statistics, a Tx from unmapped memory
 *           refused, Rx interrupts, link down/up, stop/start/close while another thread
 *           polls, checksum offloads both ways, pools whole
 *   badmap  a descriptor pointing at memory the IOMMU does not map, written past the
 *           driver's check: the fault the host must see once
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <tide/log.h>
#include <tide/offload.h>
#include <tide/pci.h>
#include <tide/pool.h>
#include <tide/port.h>

#include "csum_frame.h"
#include "driver.h"
#include "e1000e.h"
#include "wire_frame.h"

#define GUEST_NAME "pci_guest"
#define GUEST_PACE 256
#include "guest_lib.h"

static char bdf[32];
static unsigned count;

/*
 * One burst as long as the Tx ring, on an empty ring (rs=every, so that every slot comes
 * back): a tail equal to the head reads as an empty ring to the device, so one slot must
 * stay free; the rest of the packets go with the next burst. Nothing may be lost.
 */
static void test_tx_ring_full(struct ctx *c)
{
	struct tide_txq_conf conf = {.sz = sizeof(conf), .rs = TIDE_RS_EVERY};
	struct tide_mbuf *m[64];
	unsigned rx = 0, bad = 1, order = 1, k1 = 0, k2 = 0;
	unsigned long long bytes;
	const char *r;
	int rc;

	rc = tide_port_stop(c->p);
	if (rc == 0)
		rc = tide_txq_setup(c->p, 0, 64, &conf);
	if (rc == 0)
		rc = tide_port_start(c->p);
	c->txq = tide_port_txq(c->p, 0);
	for (unsigned i = 0; i < 64; i++)
		m[i] = frame_alloc(c->pool, 60, 15, i);
	if (rc == 0) {
		k1 = tide_tx_burst(c->txq, m, 64);
		usleep(100000);
		tide_txq_done_cleanup(c->txq, 0);
		k2 = tide_tx_burst(c->txq, m + k1, (uint16_t)(64 - k1));
	}
	tide_mbuf_free_bulk(m + k1 + k2, 64 - k1 - k2);
	ctl_send("WAIT 15 64 5000");
	r = ctl_reply(8000);
	if (r == NULL || sscanf(r, "STAT %*u rx=%u bad=%u order=%u bytes=%llu", &rx, &bad, &order,
				&bytes) != 4)
		rx = 0;
	result("tx_ring_full", rc == 0 && k1 == 63 && k2 == 1 && rx == 64 && bad == 0 && order == 0,
	       "setup %d; a burst of 64 on 64 descriptors took %u, the next %u; the wire has %u",
	       rc, k1, k2, rx);
}

/* A Tx from a pool the device has not mapped is refused and counted, never sent. */
static void test_unmapped(struct ctx *c)
{
	struct tide_pool *other;
	struct tide_port_stats st0 = {.sz = sizeof(st0)}, st1 = {.sz = sizeof(st1)};
	struct tide_mbuf *m;
	unsigned rx = 1, bad = 1, order = 1;
	unsigned long long bytes;
	const char *r;
	uint16_t k;

	if (tide_pktpool_create("unmapped", 64, 0, 2048, NULL, &other) < 0) {
		result("tx_unmapped", false, "no pool");
		return;
	}
	tide_port_stats_get(c->p, &st0);
	m = frame_alloc(other, 60, 40, 0);
	k = tide_tx_burst(c->txq, &m, 1);
	tide_txq_done_cleanup(c->txq, 0);
	tide_port_stats_get(c->p, &st1);
	ctl_send("STAT 40");
	r = ctl_reply(5000);
	if (r == NULL || sscanf(r, "STAT %*u rx=%u bad=%u order=%u bytes=%llu", &rx, &bad, &order,
				&bytes) != 4)
		rx = 1;
	result("tx_unmapped", k == 1 && st1.oerrors == st0.oerrors + 1 &&
				      st1.opackets == st0.opackets && rx == 0 && pool_whole(other),
	       "taken %u, oerrors +%llu, opackets +%llu, the wire has %u", k,
	       (unsigned long long)(st1.oerrors - st0.oerrors),
	       (unsigned long long)(st1.opackets - st0.opackets), rx);
	/* Once mapped, the same pool goes out. */
	tide_pci_dma_map(c->p, other);
	m = frame_alloc(other, 60, 41, 0);
	k = tide_tx_burst(c->txq, &m, 1);
	tide_txq_done_cleanup(c->txq, 0);
	ctl_send("STAT 41");
	r = ctl_reply(5000);
	if (r == NULL || sscanf(r, "STAT %*u rx=%u bad=%u order=%u bytes=%llu", &rx, &bad, &order,
				&bytes) != 4)
		rx = 0;
	result("tx_mapped_later", k == 1 && rx == 1 && bad == 0, "the wire has %u", rx);
	c->other = other; /* the queue may hold its buffer until close */
}

static void test_intr(struct ctx *c)
{
	int fd = tide_rxq_intr_fd(c->p, 0);
	struct pollfd p = {.fd = fd, .events = POLLIN};
	struct tide_mbuf *m[4];
	int idle, woke;
	uint16_t k = 0;
	double t0, waited;

	if (fd < 0) {
		result("intr", false, "no fd: %d", fd);
		return;
	}
	tide_rxq_intr_enable(c->p, 0);
	k = tide_rx_burst(c->rxq, m, 4); /* the burst after enable, before sleeping */
	tide_mbuf_free_bulk(m, k);
	idle = poll(&p, 1, 500);
	ctl_send("RX 50 1 60");
	t0 = now();
	woke = poll(&p, 1, 5000);
	waited = now() - t0;
	tide_rxq_intr_disable(c->p, 0);
	k = 0;
	for (int i = 0; i < 100 && k == 0; i++)
		k = tide_rx_burst(c->rxq, m, 4);
	tide_mbuf_free_bulk(m, k);
	(void)ctl_reply(5000);
	result("intr", idle == 0 && k >= 1 && k == 1 && woke == 1 && waited < 4.0,
	       "idle poll %d (0: slept 500 ms), woke %d after %.3f s, then received %u", idle,
	       woke, waited, k);
}

static void test_link(struct ctx *c)
{
	int fd = tide_pci_link_fd(c->p), ev = tide_port_link_event_fd(c->p);
	struct pollfd p = {.fd = fd, .events = POLLIN};
	int irq_down, irq_up, intr_down, ev_down, ev_up;
	uint64_t changes0 = 0, changes1 = 0;
	bool down, up;

	tide_xstats_get_by_name(c->p, "e1000e_link_changes", &changes0);
	(void)link_event(ev); /* what came before */
	ctl_send("LINK off");
	(void)ctl_reply(5000);
	irq_down = poll(&p, 1, 3000);
	down = link_wait(c->p, 0, 3);
	ev_down = link_event(ev);
	intr_down = tide_rxq_intr_fd(c->p, 0); /* no Rx interrupt while the link is down */
	ctl_send("LINK on");
	(void)ctl_reply(5000);
	irq_up = poll(&p, 1, 5000);
	up = link_wait(c->p, 1, 5);
	ev_up = link_event(ev);
	tide_xstats_get_by_name(c->p, "e1000e_link_changes", &changes1);
	result("link", fd >= 0 && irq_down == 1 && down && intr_down == -ENOTCONN && irq_up == 1 &&
			       up && tide_rxq_intr_fd(c->p, 0) >= 0 && ev >= 0 && ev_down &&
			       ev_up && changes1 == changes0 + 2,
	       "fd %d; off: interrupt %d, down %d, Rx interrupt fd %d, link event %d; on: "
	       "interrupt %d, up %d, link event %d; link changes %llu -> %llu", fd, irq_down,
	       down, intr_down, ev_down, irq_up, up, ev_up, (unsigned long long)changes0,
	       (unsigned long long)changes1);
}

/* ---- stop/start/close while another thread polls ---- */

static void test_lifecycle(struct ctx *c)
{
	struct poller w = {0};
	unsigned n = count / 2;
	const char *r;
	bool whole, restarted;

	poller_start(&w, c);
	restarted = stop_start_cycles(c, n, &whole, &r);
	poller_stop(&w);
	/* Frames the device had written but nobody had read when a stop came are dropped
	 * with their buffers; every frame received is intact, and traffic flows after. */
	result("stop_start_polling", r != NULL && whole && restarted && w.bad == 0 && w.got > 0 &&
					     w.got <= n,
	       "pool whole at every stop %d, restarts %d, received %lu of %u while stopping "
	       "3 times, bad %lu", whole, restarted, w.got, n, w.bad);
	stop_pool_whole(c);
}

/* ---- configuration refused ---- */

static void test_bad_config(struct tide_pool *pool)
{
	struct tide_pool *tiny;
	struct tide_port *p;
	char spec[96];
	int rc1, rc2, rc3, rc4;

	snprintf(spec, sizeof(spec), "pci:%s,promisc=maybe", bdf);
	rc1 = tide_port_open(spec, &p);
	snprintf(spec, sizeof(spec), "e1000e:pci=%s,colour=blue", bdf);
	rc2 = tide_port_open(spec, &p);
	snprintf(spec, sizeof(spec), "pci:%s", bdf);
	rc3 = rc4 = -1;
	if (tide_port_open(spec, &p) == 0) {
		tide_port_configure(p, 1, 1);
		rc3 = tide_pktpool_create("tiny", 256, 0, 128, NULL, &tiny) == 0
			      ? tide_rxq_setup(p, 0, 1024, tiny, NULL)
			      : 0;
		rc4 = tide_port_configure(p, 2, 1);
		tide_port_close(p);
		tide_pool_free(tiny);
	}
	result("bad_config", rc1 == -EINVAL && rc2 == -EINVAL && rc3 == -EINVAL && rc4 == -EINVAL &&
				     pool_whole(pool),
	       "promisc=maybe %d, unknown key %d, 128-byte buffers %d, 2 Rx queues %d", rc1, rc2,
	       rc3, rc4);
}

/*
 * rx_chain=no: a frame longer than one buffer is dropped and counted (ierrors), the frames
 * that fit still arrive, and every buffer of the dropped chains is back.
 */
static void test_rx_no_chain(struct tide_pool *pool)
{
	struct ctx c = {.pool = pool};
	struct tide_mbuf *pkts[32];
	struct tide_port_stats st = {.sz = sizeof(st)};
	char spec[96];
	unsigned got_long = 0, got_short = 0;
	double end;
	int rc;

	snprintf(spec, sizeof(spec), "pci:%s,rx_chain=no", bdf);
	rc = port_up(&c, spec, 1024, 512);
	if (rc == 0 && !link_wait(c.p, 1, 5))
		rc = -ENOLINK;
	if (rc < 0) {
		result("rx_no_chain", false, "%s: %d", spec, rc);
		return;
	}
	ctl_send("RX 16 20 8996");
	(void)ctl_reply(10000);
	ctl_send("RX 17 20 1514");
	(void)ctl_reply(10000);
	end = now() + 5;
	while (got_short < 20 && now() < end) {
		uint16_t k = tide_rx_burst(c.rxq, pkts, 32);

		for (uint16_t i = 0; i < k; i++) {
			if (pkts[i]->pkt_len == 8996)
				got_long++;
			else if (pkts[i]->pkt_len == 1514)
				got_short++;
		}
		tide_mbuf_free_bulk(pkts, k);
	}
	tide_port_stats_get(c.p, &st);
	tide_port_close(c.p);
	result("rx_no_chain", got_long == 0 && got_short == 20 && st.ierrors == 20 &&
				      pool_whole(pool),
	       "8996-byte frames received %u (0 expected), 1514-byte %u of 20, ierrors %llu, "
	       "pool whole %d", got_long, got_short, (unsigned long long)st.ierrors,
	       pool_whole(pool));
}


/* ---- checksum offloads ---- */

/* How a checksum test frame is handed to the port. */
enum csum_mode {
	CM_OFFLOAD, /* every checksum it has zeroed and requested */
	CM_L4,      /* IPv4: the TCP/UDP checksum zeroed and requested, the header's right */
	CM_IP,      /* IPv4: the header checksum zeroed and requested, the TCP/UDP one right */
	CM_NONE,    /* no request, checksums right */
	CM_ZERO,    /* no request, checksums zeroed: what the wire must find wrong */
	CM_MODES
};

/*
 * Checksum test frame @seq of @tag (its kind follows from @seq: csum_frame.h), @len bytes,
 * as @mode says; @segs 2 cuts it into a chain after the headers.
 */
static struct tide_mbuf *csum_alloc(struct tide_pool *pool, uint32_t len, uint8_t tag,
				    uint32_t seq, enum csum_mode mode, unsigned segs)
{
	static uint8_t b[WIRE_MAX];
	enum csum_kind k = csum_kind(seq);
	int v6 = csum_kind_v6(k);
	uint32_t l3 = csum_l3_len(k), l4off = 14 + l3, cut = segs > 1 ? l4off + 24 : len;
	struct tide_mbuf *m = tide_mbuf_alloc(pool), *t = NULL;
	bool ip_req = !v6 && (mode == CM_OFFLOAD || mode == CM_IP || mode == CM_ZERO);
	bool l4_req = k != CSUM_V4_OTHER && (mode == CM_OFFLOAD || mode == CM_L4 || mode == CM_ZERO);

	if (m == NULL || (segs > 1 && (t = tide_mbuf_alloc(pool)) == NULL)) {
		tide_mbuf_free(m);
		return NULL;
	}
	csum_fill(b, len, tag, seq, wire_host_mac, wire_guest_mac, 0);
	if (ip_req)
		b[14 + 10] = b[14 + 11] = 0;
	if (l4_req)
		b[l4off + csum_l4_field(k)] = b[l4off + csum_l4_field(k) + 1] = 0;
	memcpy(tide_mbuf_append(m, (uint16_t)cut), b, cut);
	if (t != NULL) {
		memcpy(tide_mbuf_append(t, (uint16_t)(len - cut)), b + cut, len - cut);
		tide_mbuf_chain(m, t);
	}
	if (mode != CM_NONE && mode != CM_ZERO) {
		m->ol_flags = v6 ? TIDE_MBUF_F_TX_IPV6 : TIDE_MBUF_F_TX_IPV4;
		if (ip_req)
			m->ol_flags |= TIDE_MBUF_F_TX_IP_CKSUM;
		if (l4_req)
			m->ol_flags |= csum_kind_tcp(k) ? TIDE_MBUF_F_TX_TCP_CKSUM
							: TIDE_MBUF_F_TX_UDP_CKSUM;
		m->l2_len = 14;
		m->l3_len = (uint16_t)l3;
	}
	return m;
}

/* Send @n frames, all taken (the ring gives room as the device completes). */
static unsigned csum_send(struct ctx *c, struct tide_mbuf **m, unsigned n)
{
	unsigned sent = 0;
	double end = now() + 20;

	while (sent < n && now() < end) {
		sent += tide_tx_burst(c->txq, m + sent, (uint16_t)(n - sent));
		if (sent < n)
			tide_txq_done_cleanup(c->txq, 0);
	}
	tide_mbuf_free_bulk(m + sent, n - sent);
	return sent;
}

static bool cstat(unsigned tag, unsigned n, unsigned *rx, unsigned *badip, unsigned *badl4,
		  unsigned *badpay, unsigned *order)
{
	const char *r;

	ctl_send("CWAIT %u %u 10000", tag, n);
	r = ctl_reply(15000);
	return r != NULL && sscanf(r, "CSTAT %*u rx=%u badip=%u badl4=%u badpay=%u order=%u", rx,
				   badip, badl4, badpay, order) == 5;
}

/*
 * Tx: mixed bursts of frames with every checksum request (IPv4 header, TCP and UDP over
 * IPv4 and IPv6, each alone and together), without any, one-segment and chained, lengths
 * 128 to 1513; the wire recomputes every checksum. The context descriptors written must be
 * exactly the changes of context among the requesting frames (the queue keeps the last
 * one); requests that do not match their frame are refused and counted; frames sent with
 * zeroed checksums and no request arrive wrong (the wire's check can fail).
 */
static void test_offload_tx(struct ctx *c, unsigned n)
{
	struct tide_port_stats st0 = {.sz = sizeof(st0)}, st1 = {.sz = sizeof(st1)};
	struct tide_mbuf *m[32];
	uint64_t ctx0 = 0, ctx1 = 0, want_ctx = 0, seed = 7;
	unsigned sent = 0, rx = 0, badip = 1, badl4 = 1, badpay = 1, order = 1, key = ~0u;
	unsigned sent_zero, rx2 = 0, bip2 = 0, bl42 = 0, bp2 = 1, ord2 = 1, rx3 = 1, x;
	bool built = true;

	tide_port_stats_get(c->p, &st0);
	tide_xstats_get_by_name(c->p, "e1000e_tx_contexts", &ctx0);
	for (unsigned i = 0; i < n && built;) {
		unsigned k = 0;

		for (; k < 32 && i < n; k++, i++) {
			enum csum_kind kind = csum_kind(i);
			enum csum_mode mode;
			unsigned l4;
			bool ip_req;

			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			mode = (enum csum_mode)(seed >> 33) % CM_ZERO;
			if (csum_kind_v6(kind) && (mode == CM_L4 || mode == CM_IP))
				mode = CM_OFFLOAD;
			m[k] = csum_alloc(c->pool, 128 + (i * 37u) % 1386, 80, i, mode,
					  i % 13 == 0 ? 2 : 1);
			if (m[k] == NULL) {
				built = false;
				break;
			}
			/* The context a requesting frame needs: its IP version and TCP/UDP
			 * checksum; a change of it costs a context descriptor. */
			ip_req = !csum_kind_v6(kind) && (mode == CM_OFFLOAD || mode == CM_IP);
			l4 = kind == CSUM_V4_OTHER || (mode != CM_OFFLOAD && mode != CM_L4) ? 0
			     : csum_kind_tcp(kind)				       ? 1
										       : 2;
			if (!ip_req && l4 == 0)
				continue;
			if ((unsigned)(csum_kind_v6(kind) << 2 | l4) != key)
				want_ctx++;
			key = (unsigned)csum_kind_v6(kind) << 2 | l4;
		}
		sent += csum_send(c, m, k);
		if (sent % 256 < 32 || i == n) {
			tide_txq_done_cleanup(c->txq, 0);
			(void)cstat(80, sent - sent % 256, &rx, &badip, &badl4, &badpay, &order);
		}
	}
	tide_txq_done_cleanup(c->txq, 0);
	if (!cstat(80, n, &rx, &badip, &badl4, &badpay, &order))
		rx = 0;
	tide_port_stats_get(c->p, &st1);
	tide_xstats_get_by_name(c->p, "e1000e_tx_contexts", &ctx1);
	result("offload_tx_mixed", built && sent == n && rx == n && badip == 0 && badl4 == 0 &&
					   badpay == 0 && order == 0 && ctx1 - ctx0 == want_ctx &&
					   st1.opackets - st0.opackets == n && st1.oerrors == st0.oerrors,
	       "sent %u of %u; the wire has %u, wrong IPv4 checksum %u, TCP/UDP %u, payload %u, "
	       "out of order %u; context descriptors %llu (expected %llu); opackets +%llu "
	       "oerrors +%llu", sent, n, rx, badip, badl4, badpay, order,
	       (unsigned long long)(ctx1 - ctx0), (unsigned long long)want_ctx,
	       (unsigned long long)(st1.opackets - st0.opackets),
	       (unsigned long long)(st1.oerrors - st0.oerrors));

	/* The control: zeroed checksums without a request (one frame of each kind). */
	for (x = 0; x < CSUM_KINDS; x++)
		m[x] = csum_alloc(c->pool, 200, 81, x, CM_ZERO, 1);
	sent_zero = csum_send(c, m, CSUM_KINDS);
	tide_txq_done_cleanup(c->txq, 0);
	(void)cstat(81, CSUM_KINDS, &rx2, &bip2, &bl42, &bp2, &ord2);
	result("offload_tx_control", sent_zero == CSUM_KINDS && rx2 == CSUM_KINDS && bip2 == 3 &&
					     bl42 == 2,
	       "zeroed and not requested: sent %u, the wire has %u, wrong IPv4 checksum %u "
	       "(3 expected), TCP/UDP %u (2 expected)", sent_zero, rx2, bip2, bl42);

	/* Requests that do not fit their frame: TCP on a UDP frame, UDP on a TCP one, the IPv6
	 * flag on an IPv4 frame, a wrong l3_len, segmentation (not offered). */
	tide_port_stats_get(c->p, &st0);
	for (x = 0; x < 5; x++)
		m[x] = csum_alloc(c->pool, 300, 82, x == 1 ? CSUM_V4_TCP : CSUM_V4_UDP, CM_OFFLOAD, 1);
	m[0]->ol_flags ^= TIDE_MBUF_F_TX_UDP_CKSUM | TIDE_MBUF_F_TX_TCP_CKSUM;
	m[1]->ol_flags ^= TIDE_MBUF_F_TX_UDP_CKSUM | TIDE_MBUF_F_TX_TCP_CKSUM;
	m[2]->ol_flags ^= TIDE_MBUF_F_TX_IPV4 | TIDE_MBUF_F_TX_IPV6;
	m[3]->l3_len = 24;
	m[4]->ol_flags |= TIDE_MBUF_F_TX_TCP_SEG;
	m[4]->tso_segsz = 100;
	x = tide_tx_burst(c->txq, m, 5);
	tide_txq_done_cleanup(c->txq, 0);
	tide_port_stats_get(c->p, &st1);
	usleep(300000); /* what was sent has reached the wire */
	(void)cstat(82, 0, &rx3, &bip2, &bl42, &bp2, &ord2);
	result("offload_tx_refused", x == 5 && st1.oerrors - st0.oerrors == 5 &&
					     st1.opackets == st0.opackets && rx3 == 0,
	       "taken %u of 5, oerrors +%llu, opackets +%llu, the wire has %u", x,
	       (unsigned long long)(st1.oerrors - st0.oerrors),
	       (unsigned long long)(st1.opackets - st0.opackets), rx3);
}

/* The Rx checksum status a frame of @kind must carry (@bad as csum_fill's). */
static uint32_t csum_expect(enum csum_kind k, int bad)
{
	uint32_t ip = csum_kind_v6(k) ? TIDE_MBUF_F_RX_IP_CKSUM_UNKNOWN
		      : bad == 2      ? TIDE_MBUF_F_RX_IP_CKSUM_BAD
				      : TIDE_MBUF_F_RX_IP_CKSUM_GOOD;
	uint32_t l4 = k == CSUM_V4_OTHER ? TIDE_MBUF_F_RX_L4_CKSUM_UNKNOWN
		      : bad == 1	 ? TIDE_MBUF_F_RX_L4_CKSUM_BAD
					 : TIDE_MBUF_F_RX_L4_CKSUM_GOOD;

	return ip | l4;
}

/*
 * Receive the @n checksum test frames of @tag that the wire sends, 600 bytes, every third
 * @len2 (0: 600 too), with @bad as csum_fill's; those of @len2 are dropped by the port when
 * @dropped. Counts the frames whose checksum status is not @on ? csum_expect() : UNKNOWN.
 */
static void offload_rx(struct ctx *c, const char *name, uint8_t tag, unsigned n, int bad,
		       bool on, unsigned len2, bool dropped)
{
	static uint8_t buf[WIRE_MAX];
	struct tide_mbuf *pkts[32];
	unsigned got = 0, wrong = 0, want_n = dropped ? n - n / 3 : n;
	double end = now() + 30;
	const uint32_t mask = TIDE_MBUF_F_RX_IP_CKSUM_MASK | TIDE_MBUF_F_RX_L4_CKSUM_MASK;

	ctl_send("CRX %u %u %u %d %u", tag, n, 600, bad, len2);
	while (got < want_n && now() < end) {
		uint16_t k = tide_rx_burst(c->rxq, pkts, 32);

		for (uint16_t i = 0; i < k; i++) {
			uint32_t off = 0, seq, want, have = pkts[i]->ol_flags & mask;
			uint8_t t;
			int rc;

			for (const struct tide_mbuf *sg = pkts[i]; sg && off < sizeof(buf);
			     sg = sg->next) {
				uint32_t l = sg->data_len < sizeof(buf) - off ? sg->data_len
									 : (uint32_t)sizeof(buf) - off;

				memcpy(buf + off, tide_mbuf_mtod(sg, const uint8_t *), l);
				off += l;
			}
			rc = csum_check(buf, off, &t, &seq);
			if (rc == -1 || t != tag || (dropped && seq % 3 == 2)) {
				wrong++;
				continue;
			}
			want = on ? csum_expect(csum_kind(seq), bad) : 0;
			if (have != want && wrong++ < 3)
				printf(GUEST_NAME ": %s: frame %u (kind %d): ol_flags 0x%x, expected "
				       "0x%x\n", name, seq, csum_kind(seq), have, want);
			got++;
		}
		tide_mbuf_free_bulk(pkts, k);
	}
	(void)ctl_reply(10000);
	result(name, got == want_n && wrong == 0, "received %u of %u, wrong status %u", got, want_n,
	       wrong);
}

/* What the 82574 checks on Rx (no LRO). */
#define RX_CKSUMS (TIDE_OFFLOAD_RX_IPV4_CKSUM | TIDE_OFFLOAD_RX_TCP_CKSUM | TIDE_OFFLOAD_RX_UDP_CKSUM)

static void test_offload(struct tide_pool *pool, unsigned n)
{
	struct tide_rxq_conf rc = {.sz = sizeof(rc), .offloads = RX_CKSUMS};
	struct tide_txq_conf tc = {.sz = sizeof(tc),
				   .offloads = TIDE_OFFLOAD_TX_IPV4_CKSUM | TIDE_OFFLOAD_TX_TCP_CKSUM |
					       TIDE_OFFLOAD_TX_UDP_CKSUM};
	struct tide_port_info info = {.sz = sizeof(info)};
	struct tide_mbuf *pkts[8];
	struct ctx c = {.pool = pool};
	char spec[64];
	unsigned plain = 0, plain_wrong = 0, sent, ctx_before_stop, rx = 0, badip = 1, badl4 = 1,
		 badpay = 1, order = 1;
	uint64_t ctx0 = 0, ctx1 = 0;
	int r1, r2, r3, tso;
	bool ok;

	snprintf(spec, sizeof(spec), "pci:%s", bdf);
	r1 = tide_port_open(spec, &c.p);
	if (r1 < 0) {
		result("offload_open", false, "%s: %d", spec, r1);
		return;
	}
	tide_port_info_get(c.p, &info);
	tide_port_configure(c.p, 1, 1);
	tc.offloads |= TIDE_OFFLOAD_TX_TCP_TSO;
	tso = tide_txq_setup(c.p, 0, 512, &tc);
	tc.offloads &= ~TIDE_OFFLOAD_TX_TCP_TSO;
	r1 = tide_rxq_setup(c.p, 0, 1024, pool, &rc);
	r2 = tide_txq_setup(c.p, 0, 512, &tc);
	r3 = tide_port_start(c.p);
	c.rxq = tide_port_rxq(c.p, 0);
	c.txq = tide_port_txq(c.p, 0);
	result("offload_capa", info.rx_offload_capa == RX_CKSUMS &&
				       info.tx_offload_capa == tc.offloads && tso == -ENOTSUP &&
				       r1 == 0 && r2 == 0 && r3 == 0 && link_wait(c.p, 1, 5),
	       "rx 0x%llx tx 0x%llx; TSO asked: %d; setup %d %d, start %d",
	       (unsigned long long)info.rx_offload_capa, (unsigned long long)info.tx_offload_capa,
	       tso, r1, r2, r3);
	if (r1 || r2 || r3) {
		tide_port_close(c.p);
		return;
	}
	test_offload_tx(&c, n);
	/* Every third frame over two buffers: its status is on its last descriptor. */
	offload_rx(&c, "offload_rx_good", 83, n / 2, 0, true, 3000, false);
	offload_rx(&c, "offload_rx_bad_l4", 84, n / 4, 1, true, 0, false);
	offload_rx(&c, "offload_rx_bad_ip", 85, n / 4, 2, true, 0, false);
	/* Frames that are not IP: nothing checked. */
	ctl_send("RX 86 8 60");
	for (double end = now() + 5; plain < 8 && now() < end;) {
		uint16_t k = tide_rx_burst(c.rxq, pkts, 8);

		for (uint16_t i = 0; i < k; i++)
			plain_wrong += (pkts[i]->ol_flags & (TIDE_MBUF_F_RX_IP_CKSUM_MASK |
							     TIDE_MBUF_F_RX_L4_CKSUM_MASK)) != 0;
		plain += k;
		tide_mbuf_free_bulk(pkts, k);
	}
	(void)ctl_reply(5000);
	result("offload_rx_not_ip", plain == 8 && plain_wrong == 0,
	       "received %u of 8, with a checksum status %u", plain, plain_wrong);
	/* The context the device holds is not trusted after a restart: the same request
	 * before and after a stop costs a context descriptor each time. */
	ctx_before_stop = csum_send(&c, (struct tide_mbuf *[]){csum_alloc(pool, 300, 89, 0, CM_OFFLOAD, 1)}, 1);
	tide_txq_done_cleanup(c.txq, 0);
	tide_xstats_get_by_name(c.p, "e1000e_tx_contexts", &ctx0);
	/* A queue that did not ask: nothing checked, right or wrong. */
	rc.offloads = 0;
	r1 = tide_port_stop(c.p);
	r2 = tide_rxq_setup(c.p, 0, 1024, pool, &rc);
	r3 = tide_port_start(c.p);
	if (r1 || r2 || r3 || !link_wait(c.p, 1, 5))
		result("offload_rx_off", false, "stop %d, setup %d, start %d", r1, r2, r3);
	else {
		c.rxq = tide_port_rxq(c.p, 0);
		offload_rx(&c, "offload_rx_off", 87, 50, 0, false, 0, false);
		offload_rx(&c, "offload_rx_off_bad", 88, 50, 1, false, 0, false);
	}
	c.txq = tide_port_txq(c.p, 0);
	sent = csum_send(&c, (struct tide_mbuf *[]){csum_alloc(pool, 300, 89, 5, CM_OFFLOAD, 1)}, 1);
	tide_txq_done_cleanup(c.txq, 0);
	tide_xstats_get_by_name(c.p, "e1000e_tx_contexts", &ctx1);
	ok = cstat(89, 2, &rx, &badip, &badl4, &badpay, &order);
	result("offload_tx_restart", ok && ctx_before_stop == 1 && sent == 1 && ctx1 == ctx0 + 1 &&
					     rx == 2 && badip + badl4 + badpay == 0,
	       "context descriptors after the restart %llu (1 expected); the wire has %u, wrong %u",
	       (unsigned long long)(ctx1 - ctx0), rx, badip + badl4 + badpay);
	tide_port_close(c.p);

	/* rx_chain=no: frames over one buffer are dropped; the status of the others stays
	 * with their own packets. */
	snprintf(spec, sizeof(spec), "pci:%s,rx_chain=no", bdf);
	rc.offloads = RX_CKSUMS;
	r1 = tide_port_open(spec, &c.p);
	if (r1 == 0) {
		tide_port_configure(c.p, 1, 1);
		r1 = tide_rxq_setup(c.p, 0, 1024, pool, &rc);
		r2 = tide_txq_setup(c.p, 0, 512, NULL);
		r3 = tide_port_start(c.p);
		c.rxq = tide_port_rxq(c.p, 0);
		if (r1 || r2 || r3 || !link_wait(c.p, 1, 5))
			result("offload_rx_dropped", false, "setup %d %d start %d", r1, r2, r3);
		else
			offload_rx(&c, "offload_rx_dropped", 90, 300, 0, true, 3000, true);
		tide_port_close(c.p);
	} else {
		result("offload_rx_dropped", false, "%s: %d", spec, r1);
	}
	result("offload_pool_whole", pool_whole(pool), "avail %u of %u", tide_pool_avail(pool),
	       tide_pool_size(pool));
}

static void run_main(void)
{
	static const uint32_t sizes[] = {60, 1514, 8996};
	struct ctx c = {0};
	struct tide_port_stats st = {.sz = sizeof(st)};
	struct tide_port_info info = {.sz = sizeof(info)};
	char spec[64];
	int rc;

	if (tide_pktpool_create("guest", 4096, 256, 2048, NULL, &c.pool) < 0) {
		result("pool", false, "");
		return;
	}
	test_bad_config(c.pool);
	snprintf(spec, sizeof(spec), "pci:%s", bdf);
	rc = port_up(&c, spec, 1024, 512);
	result("open", rc == 0, "%s: %d", spec, rc);
	if (rc < 0)
		return;
	tide_port_info_get(c.p, &info);
	result("mac", memcmp(info.mac, wire_guest_mac, 6) == 0 && strcmp(info.driver, "e1000e") == 0,
	       "%02x:%02x:%02x:%02x:%02x:%02x driver %s", info.mac[0], info.mac[1], info.mac[2],
	       info.mac[3], info.mac[4], info.mac[5], info.driver);
	/* The 82574's largest jumbo; the MTU changes no register (LPE is always on): the
	 * 8996-byte frames below arrive at the default MTU, delivered whole. */
	result("mtu", info.max_frame == 9230 && info.max_mtu == 9212 && info.mtu == 1500 &&
			      tide_port_mtu_set(c.p, 9212) == 0 &&
			      tide_port_mtu_set(c.p, 9213) == -EINVAL &&
			      tide_port_mtu_set(c.p, 1500) == 0,
	       "max_frame %u max_mtu %u mtu %u", info.max_frame, info.max_mtu, info.mtu);
	result("link_up", link_wait(c.p, 1, 5), "");
	for (unsigned i = 0; i < 3; i++)
		test_rx(&c, (uint8_t)(1 + i), sizes[i], count);
	for (unsigned i = 0; i < 3; i++)
		test_tx(&c, (uint8_t)(11 + i), sizes[i], count);
	tide_port_stats_get(c.p, &st);
	result("stats", st.ipackets == 3ull * count && st.opackets == 3ull * count &&
				st.ierrors == 0 && st.rx_missed == 0 && st.oerrors == 0,
	       "ipackets %llu opackets %llu ierrors %llu rx_missed %llu oerrors %llu",
	       (unsigned long long)st.ipackets, (unsigned long long)st.opackets,
	       (unsigned long long)st.ierrors, (unsigned long long)st.rx_missed,
	       (unsigned long long)st.oerrors);
	{
		uint64_t gprc = 0, gptc = 0;

		tide_xstats_get_by_name(c.p, "e1000e_good_rx_packets", &gprc);
		tide_xstats_get_by_name(c.p, "e1000e_good_tx_packets", &gptc);
		result("xstats", gprc == st.ipackets && gptc == st.opackets,
		       "device counters: good rx %llu, good tx %llu", (unsigned long long)gprc,
		       (unsigned long long)gptc);
	}
	test_unmapped(&c);
	test_tx_ring_full(&c);
	test_intr(&c);
	test_link(&c);
	test_lifecycle(&c);
	rc = tide_port_start(c.p);
	tide_port_close(c.p);
	result("close_pool_whole", rc == 0 && pool_whole(c.pool) && c.other && pool_whole(c.other),
	       "avail %u of %u", tide_pool_avail(c.pool), tide_pool_size(c.pool));
	test_rx_no_chain(c.pool);
	test_offload(c.pool, count < 2000 ? count : 2000);
	tide_pool_free(c.pool);
	tide_pool_free(c.other);
}

/*
 * A Tx descriptor whose buffer the IOMMU does not map, written straight into the ring
 * (the driver would refuse it): the device's read must fault, nothing may be sent.
 */
static void run_badmap(void)
{
	struct ctx c = {0};
	char spec[64];
	struct e1000e_txq *q;
	static uint8_t stray[4096] __attribute__((aligned(4096)));
	unsigned rx = 1;
	const char *r;

	snprintf(spec, sizeof(spec), "pci:%s", bdf);
	if (tide_pktpool_create("badmap", 1024, 0, 2048, NULL, &c.pool) < 0 ||
	    port_up(&c, spec, 1024, 512) < 0) {
		result("badmap", false, "cannot open");
		return;
	}
	q = (struct e1000e_txq *)c.txq;
	wire_fill(stray, 60, 70, 0, wire_host_mac, wire_guest_mac);
	q->ring[0].addr = (uintptr_t)stray;
	q->ring[0].lower = 60 | E1000E_TXD_CMD_EOP | E1000E_TXD_CMD_IFCS | E1000E_TXD_CMD_RS;
	q->ring[0].upper = 0;
	/* What the IOMMU reported before this: the host counts QEMU's fault lines now. */
	ctl_send("FAULTS");
	r = ctl_reply(5000);
	printf("PCITEST iommu_quiet_before_badmap %s %s\n",
	       r && strcmp(r, "FAULTS 0") == 0 ? "ok" : "FAIL", r ? r : "no reply");
	printf("PCITEST badmap-begin\n");
	fflush(stdout);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	*q->tdt = 1;
	usleep(300000);
	ctl_send("STAT 70");
	r = ctl_reply(5000);
	if (r == NULL || sscanf(r, "STAT %*u rx=%u", &rx) != 1)
		rx = 1;
	ctl_send("FAULTS");
	r = ctl_reply(5000);
	result("badmap_fault_seen", r && strcmp(r, "FAULTS 0") != 0 && strncmp(r, "FAULTS ", 7) == 0,
	       "QEMU: %s", r ? r : "no reply");
	printf("PCITEST badmap-end\n");
	result("badmap_nothing_sent", rx == 0, "the wire has %u", rx);
	/* The engine never saw that slot: reset the doorbell view before closing. */
	q->ring[0].addr = 0;
	tide_port_close(c.p);
	result("badmap_pool_whole", pool_whole(c.pool), "");
	tide_pool_free(c.pool);
}

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: pci_guest BDF TTY COUNT main|badmap\n");
		return 2;
	}
	snprintf(bdf, sizeof(bdf), "%s", argv[1]);
	count = (unsigned)atoi(argv[3]);
	tty = tty_open(argv[2]);
	if (tty < 0) {
		printf("PCITEST tty FAIL %s: %s\n", argv[2], strerror(errno));
		return 1;
	}
	tide_log_set_level(TIDE_LOG_INFO);
	tide_thread_register();
	if (strcmp(argv[4], "badmap") == 0)
		run_badmap();
	else
		run_main();
	tide_thread_unregister();
	printf("PCITEST %s-done failures=%d\n", argv[4], failures);
	return failures ? 1 : 0;
}
