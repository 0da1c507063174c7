/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * e1000e bursts: legacy descriptors. Tx: one descriptor per segment, EOP on the last, RS
 * where the completion engine places it, DD written back. Rx: one buffer per descriptor,
 * frames over one buffer arrive as several descriptors (EOP on the last) and are chained or
 * dropped.
 *
 * Memory the device touches goes through the IOMMU: a Tx segment whose data is not in a
 * region the PCI layer mapped is refused (freed and counted), never handed to the device.
 */
#include <tide/offload.h>

#include "inline.h"
#include "e1000e.h"
#include "log.h"
#include "offload_pkt.h"

/* ---- Tx ---- */

TIDE_ALWAYS_INLINE int tx_desc_done(void *ctx, uint32_t slot)
{
	struct e1000e_txq *q = ctx;

	/* Pairs with the device's write-back of the status (DMA, then the doorbell-ordered
	 * reads of this thread). */
	return __atomic_load_n(&q->ring[slot].upper, __ATOMIC_ACQUIRE) & E1000E_TXD_STAT_DD;
}

TIDE_ALWAYS_INLINE void tx_set_rs(void *ctx, uint32_t slot)
{
	struct e1000e_txq *q = ctx;

	q->ring[slot].lower |= E1000E_TXD_CMD_RS;
}

TIDE_ALWAYS_INLINE unsigned tx_advance(struct txc *t)
{
	return txc_advance_dd(t, tx_desc_done, t->drv);
}

unsigned e1000e_tx_advance_ool(struct txc *t)
{
	return tx_advance(t);
}

/*
 * Is [a, a + len) in device-visible memory? The region of the last hit first (one subtract
 * and two compares), then the PCI layer's table, which becomes the new last hit.
 */
TIDE_ALWAYS_INLINE bool tx_mapped(struct e1000e_txq *q, uintptr_t a,
				  uint32_t len)
{
	const struct pci_dma *r;

	if (tide_likely(a - q->dma_lo < q->dma_len && len <= q->dma_len - (a - q->dma_lo)))
		return true;
	r = pci_dma_find(q->ep->pci, (const void *)a, len);
	if (r == NULL)
		return false;
	q->dma_lo = r->base;
	q->dma_len = r->len;
	q->dma_page = r->page;
	return true;
}

/* Does [a, a + len) cross a page of the region it is in? */
TIDE_ALWAYS_INLINE bool tx_crosses(const struct e1000e_txq *q,
				   uintptr_t a, uint32_t len)
{
	return ((a ^ (a + len - 1)) & ~(q->dma_page - 1)) != 0;
}

static void tx_refuse_unmapped(struct e1000e_txq *q, const struct tide_mbuf *m)
{
	if (q->unmapped++ == 0)
		TIDE_LOG_ERR_(q->ep->port->name,
			      "Tx: a packet's memory (%p, pool %s) is not mapped for the device: "
			      "refused and counted in oerrors; use pools that an Rx queue of this "
			      "port was set up with, or tide_pci_dma_map()",
			      (const void *)m->buf_addr,
			      m->pool ? tide_pool_name(m->pool) : "none");
}

TIDE_ALWAYS_INLINE void
tx_write(struct e1000e_tx_desc *d, uintptr_t addr, uint32_t len, uint32_t cmd)
{
	d->addr = addr;
	d->lower = len | cmd | E1000E_TXD_CMD_IFCS;
	d->upper = 0;
}

/* What a packet's data descriptors carry besides the legacy fields: nothing, or the
 * extended data type and the checksums to insert (POPTS). */
struct tx_ext {
	uint32_t cmd;   /* DEXT | DTYP data, or 0 */
	uint32_t upper; /* POPTS << 8 */
};

/*
 * The rare packet: a chain, or a segment whose bytes cross a page of the memory it is in.
 * Every segment is checked (mapped; refcnt 1 in a chain), then gets one descriptor per
 * page it touches. A chain is split into independent buffers, one per slot, so completion
 * releases each the usual way; a segment on two descriptors sits in both slots with one
 * more reference, so that both releases together free it once (txfree=fast, which
 * releases without looking at references, refuses such a packet instead). A chain with a
 * shared segment is refused too (another holder still follows its links).
 * Returns the slots used; 0: refused (the packet freed, counted); -1: no room (the caller
 * keeps the packet).
 */
static int tx_slow(struct e1000e_txq *q, struct tide_mbuf *m, uint32_t idx, unsigned room,
		   struct txc_burst *b, uint64_t *bytes, struct tx_ext ext)
{
	struct tide_mbuf *s;
	unsigned need = 0, k = 0;

	for (s = m; s != NULL; s = s->next) {
		uintptr_t a = (uintptr_t)s->buf_addr + s->data_off;

		if (!tx_mapped(q, a, s->data_len)) {
			tx_refuse_unmapped(q, s);
			goto refuse;
		}
		if (m->nb_segs > 1 && tide_mbuf_refcnt_read(s) != 1) {
			if (q->refused++ == 0)
				TIDE_LOG_ERR_(q->ep->port->name, "Tx: a chain with a shared segment "
					      "is refused (counted in oerrors)");
			goto refuse;
		}
		if (s->data_len != 0 && tx_crosses(q, a, s->data_len)) {
			if (q->fast_asserted) {
				if (q->refused++ == 0)
					TIDE_LOG_ERR_(q->ep->port->name,
						      "Tx: txfree=fast and a buffer across a page "
						      "boundary of its memory: refused (counted in "
						      "oerrors)");
				goto refuse;
			}
			need += 2;
		} else {
			need += 1;
		}
	}
	if (need > room)
		return -1;
	for (s = m; s != NULL;) {
		struct tide_mbuf *next = s->next;
		uintptr_t a = (uintptr_t)s->buf_addr + s->data_off;
		uint32_t len = s->data_len, cmd = (next ? 0 : E1000E_TXD_CMD_EOP) | ext.cmd;

		*bytes += len;
		s->next = NULL;
		s->nb_segs = 1;
		s->pkt_len = len;
		if (len != 0 && tx_crosses(q, a, len)) {
			uint32_t first = (uint32_t)(((a | (q->dma_page - 1)) + 1) - a);

			tide_mbuf_refcnt_update(s, 1);
			tx_write(&q->ring[(idx + k) & q->mask], a, first, ext.cmd);
			q->ring[(idx + k) & q->mask].upper = ext.upper;
			txc_burst_fill(b, idx + k, s);
			k++;
			a += first;
			len -= first;
		}
		tx_write(&q->ring[(idx + k) & q->mask], a, len, cmd);
		q->ring[(idx + k) & q->mask].upper = ext.upper;
		txc_burst_fill(b, idx + k, s);
		k++;
		s = next;
	}
	return (int)k;
refuse:
	tide_mbuf_free(m);
	return 0;
}

/* The requests the offload burst looks at: anything else is an ordinary packet. */
#define TX_OL_REQ                                                                     \
	(TIDE_MBUF_F_TX_IP_CKSUM | TIDE_MBUF_F_TX_L4_MASK | TIDE_MBUF_F_TX_TCP_SEG | \
	 TIDE_MBUF_F_TX_UDP_SEG)

static void tx_refuse_request(struct e1000e_txq *q, const struct tide_mbuf *m, const char *why)
{
	if (q->refused++ == 0)
		TIDE_LOG_ERR_(q->ep->port->name, "Tx: a packet's offload request (ol_flags 0x%x, "
			      "l2_len %u, l3_len %u) %s: refused (counted in oerrors)",
			      m->ol_flags, m->l2_len, m->l3_len, why);
}

/*
 * A packet with checksum requests (offload burst only). The request is checked against the
 * packet as tide_offload_cksum_fill() checks it (the driver writes into the headers, and
 * the device sums where the context says); the IPv4 checksum field is zeroed and the
 * TCP/UDP field given the pseudo-header's sum, which the device does not add. A context
 * descriptor goes first when the queue's last one differs (it takes a slot without a
 * buffer: txc_burst_hole). Headers beyond the context's 8-bit offsets are filled in
 * software. Returns the slots used, 0 (refused: freed and counted) or -1 (no room).
 */
static int tx_offload(struct e1000e_txq *q, struct tide_mbuf *m, uint32_t idx, unsigned room,
		      struct txc_burst *b, uint64_t *bytes)
{
	const uint32_t f = m->ol_flags, l4 = f & TIDE_MBUF_F_TX_L4_MASK;
	const int v6 = (f & TIDE_MBUF_F_TX_IPV6) != 0;
	const uint32_t l2 = m->l2_len, l3 = m->l3_len, l4off = l2 + l3;
	struct tx_ext ext = {E1000E_TXD_CMD_DEXT | E1000E_TXD_DTYP_DATA, 0};
	uint32_t field = 0, l4len = 0, cmd = E1000E_TXD_CMD_DEXT;
	uint64_t setup = 0;
	uint8_t proto = 0, *ip;
	unsigned ctx;
	int k;

	if (f & (TIDE_MBUF_F_TX_TCP_SEG | TIDE_MBUF_F_TX_UDP_SEG)) {
		tx_refuse_request(q, m, "asks for segmentation, which this port does not offer "
				  "(tide_offload_segment() does it in software)");
		goto refuse;
	}
	if (((f & TIDE_MBUF_F_TX_IPV4) != 0) + v6 != 1 || ((f & TIDE_MBUF_F_TX_IP_CKSUM) && v6) ||
	    offload_l3_check(m, v6, &proto, &l4len) < 0) {
		tx_refuse_request(q, m, "does not match the packet's headers");
		goto refuse;
	}
	/* Both L4 bits (no such request) leave field 0 too. */
	if (l4 == TIDE_MBUF_F_TX_TCP_CKSUM)
		field = proto == OFFLOAD_IPPROTO_TCP && l4len >= 20 ? 16 : 0;
	else if (l4 == TIDE_MBUF_F_TX_UDP_CKSUM)
		field = proto == OFFLOAD_IPPROTO_UDP && l4len >= 8 ? 6 : 0;
	if (l4 && (field == 0 || l4off + field + 2 > m->data_len)) {
		tx_refuse_request(q, m, "does not match the packet's headers");
		goto refuse;
	}
	if (l4off + field + 2 > 255) {
		/* The context's offsets are bytes: this packet's checksums are filled here. */
		if (tide_offload_cksum_fill(m) < 0) {
			tx_refuse_request(q, m, "cannot be filled in software");
			goto refuse;
		}
		ext.cmd = 0;
		return tx_slow(q, m, idx, room, b, bytes, ext);
	}
	ip = tide_mbuf_mtod_offset(m, uint8_t *, l2);
	if (!v6) {
		/* IPCSS, IPCSO, IPCSE (inclusive); the IPv4 bit of TUCMD. */
		setup = l2 | (l2 + 10) << 8 | (l4off - 1) << 16;
		cmd |= E1000E_TXD_TUCMD_IP;
	}
	if (f & TIDE_MBUF_F_TX_IP_CKSUM)
		ext.upper |= E1000E_TXD_POPTS_IXSM;
	if (l4) {
		/* TUCSS, TUCSO; TUCSE 0: to the end of the packet. */
		setup |= (uint64_t)(l4off | (l4off + field) << 8) << 32;
		cmd |= l4 == TIDE_MBUF_F_TX_TCP_CKSUM ? E1000E_TXD_TUCMD_TCP : 0;
		ext.upper |= E1000E_TXD_POPTS_TXSM;
	}
	/* TUCMD follows from the setup (IPv4: IP fields set; TCP: TUCSO 16 past TUCSS). */
	ctx = !q->ctx_valid || q->ctx_setup != setup;
	if (room < ctx + 1u)
		return -1;
	/* The headers change only once the packet is sure to go (or refused by tx_slow,
	 * which frees it). */
	k = tx_slow(q, m, idx + ctx, room - ctx, b, bytes, ext);
	if (k <= 0)
		return k;
	if (f & TIDE_MBUF_F_TX_IP_CKSUM)
		ip[10] = ip[11] = 0;
	if (l4) {
		uint16_t seed = (uint16_t)offload_pseudo_sum(ip, v6, l4len, proto);

		memcpy(ip + l3 + field, &seed, 2);
	}
	if (ctx) {
		struct e1000e_tx_desc *d = &q->ring[idx & q->mask];

		d->addr = setup;
		d->lower = cmd;
		d->upper = 0;
		txc_burst_hole(b, idx);
		q->ctx_setup = setup;
		q->ctx_valid = true;
		q->contexts++;
	}
	return k + (int)ctx;
refuse:
	tide_mbuf_free(m);
	return 0;
}

/*
 * The Tx burst, specialised at start: @offload (a Tx checksum offload enabled) reads each
 * packet's requests; without it no packet's flags are looked at, and the loop is the one
 * of a queue that never heard of offloads.
 */
TIDE_ALWAYS_INLINE uint16_t tx_burst(struct tide_txq *pub, struct tide_mbuf **pkts, uint16_t n,
				     const bool offload)
{
	struct e1000e_txq *q = (struct e1000e_txq *)pub;
	struct txc *t = &q->txc;
	/* One slot stays free: a full ring would put the tail on the head, which the device
	 * reads as empty. */
	unsigned room = txc_make_room(t, n + 1u, tx_advance);
	struct e1000e_tx_desc *const ring = q->ring;
	const uint32_t mask = q->mask, first = t->tail;
	uint32_t used = 0, npkts = 0;
	uint64_t bytes = 0, dropped = 0;
	struct txc_burst b;
	unsigned i;

	room = room ? room - 1 : 0;
	txc_burst_begin(t, &b);
	for (i = 0; i < n; i++) {
		struct tide_mbuf *m = pkts[i];
		uintptr_t a = (uintptr_t)m->buf_addr + m->data_off;
		int k;

		if (used == room)
			break;
		if (offload && tide_unlikely(m->ol_flags & TX_OL_REQ)) {
			k = tx_offload(q, m, first + used, room - used, &b, &bytes);
			goto slow_done;
		}
		/* One segment in device memory, within one page: one descriptor. */
		if (tide_likely(m->nb_segs == 1 && a - q->dma_lo < q->dma_len &&
				m->data_len <= q->dma_len - (a - q->dma_lo) &&
				!tx_crosses(q, a, m->data_len))) {
			tx_write(&ring[(first + used) & mask], a, m->data_len, E1000E_TXD_CMD_EOP);
			txc_burst_fill(&b, first + used, m);
			bytes += m->data_len;
			used++;
			npkts++;
			continue;
		}
		k = tx_slow(q, m, first + used, room - used, &b, &bytes, (struct tx_ext){0, 0});
slow_done:
		if (k < 0)
			break;
		used += (uint32_t)k;
		npkts += k != 0;
		dropped += k == 0;
	}
	txc_burst_end(t, &b);
	if (used) {
		txc_place_rs(t, first, used, tx_set_rs, q);
		txc_commit(t, used);
		/* The descriptors are in memory before the device learns of them. */
		__atomic_thread_fence(__ATOMIC_RELEASE);
		*q->tdt = t->tail & mask;
		tide_stat_burst(&pub->stats, npkts, bytes);
	}
	if (tide_unlikely(dropped))
		tide_stat_add(&pub->stats.errors, dropped);
	return (uint16_t)i;
}

static uint16_t e1000e_tx_burst(struct tide_txq *pub, struct tide_mbuf **pkts, uint16_t n)
{
	return tx_burst(pub, pkts, n, false);
}

static uint16_t e1000e_tx_burst_offload(struct tide_txq *pub, struct tide_mbuf **pkts,
					uint16_t n)
{
	return tx_burst(pub, pkts, n, true);
}

/* ---- Rx ---- */

TIDE_ALWAYS_INLINE void rx_post(void *ctx, uint32_t first, unsigned n)
{
	struct e1000e_rxq *q = ctx;
	/* A batch never wraps (it divides the ring). */
	const uint32_t idx = first & q->mask;
	struct e1000e_rx_desc *const d = &q->ring[idx];
	struct tide_mbuf *const *const sw = &q->rxr.sw[idx];
	const uintptr_t off = q->headroom;

	for (unsigned k = 0; k < n; k++) {
		/* Fresh mbufs: their addresses, not their (cold) headers (mbuf.h). */
		d[k].addr = (uintptr_t)tide_mbuf__buf_of(sw[k]) + off;
		memset((char *)&d[k] + 8, 0, 8); /* length, status: written back */
	}
}

TIDE_ALWAYS_INLINE void rx_doorbell(void *ctx, uint32_t tail)
{
	struct e1000e_rxq *q = ctx;

	/* The device owns the descriptors from its head up to, not including, the tail, and
	 * head == tail means none: so it is given every posted one but the last, which it
	 * gets with the next refill (the ring's whole size would read as empty). */
	__atomic_thread_fence(__ATOMIC_RELEASE);
	*q->rdt = (tail - 1) & q->mask;
}

void e1000e_rx_post_ool(struct rxr *r, uint32_t first, unsigned n, bool doorbell)
{
	rx_post(r->drv, first, n);
	if (doorbell)
		rx_doorbell(r->drv, first + n);
}

void e1000e_rx_refill(struct e1000e_rxq *q)
{
	rxr_refill(&q->rxr, rx_post, rx_doorbell, q);
}

/*
 * Every descriptor that is not a whole good frame in one buffer: part of a longer frame,
 * or flagged with an error. Builds the chain; at the frame's last descriptor hands it out
 * (returns 1) or drops it (counted). Returns 0 while the frame goes on.
 */
static unsigned rx_slow(struct e1000e_rxq *q, struct tide_mbuf *m, uint8_t status,
			uint8_t errors, struct tide_mbuf **out)
{
	struct tide_mbuf *h = q->pkt_first;

	if (errors & E1000E_RXD_ERR_FRAME)
		q->pkt_bad = true;
	if (h == NULL) {
		q->pkt_first = q->pkt_last = h = m;
	} else {
		q->pkt_last->next = m;
		q->pkt_last = m;
		h->nb_segs++;
		h->pkt_len += m->data_len;
		m->pkt_len = m->data_len;
		if (!q->chain && !q->pkt_bad) {
			q->pkt_bad = true;
			q->dropped_long++;
		}
	}
	if (!(status & E1000E_RXD_STAT_EOP))
		return 0;
	q->pkt_first = q->pkt_last = NULL;
	if (q->pkt_bad) {
		q->pkt_bad = false;
		if (errors & E1000E_RXD_ERR_FRAME || h->nb_segs == 1 || q->chain)
			q->dropped_err++;
		tide_mbuf_free(h);
		tide_stat_add(&q->pub.stats.errors, 1);
		return 0;
	}
	*out = h;
	return 1;
}

static __attribute__((noinline)) uint16_t e1000e_rx_burst(struct tide_rxq *pub,
							 struct tide_mbuf **pkts, uint16_t n)
{
	struct e1000e_rxq *q = (struct e1000e_rxq *)pub;
	struct rxr *r = &q->rxr;
	struct e1000e_rx_desc *const ring = q->ring;
	struct tide_mbuf *const *const sw = r->sw;
	const uint32_t mask = q->mask;
	struct tide_mbuf__rx_regs tmpl;
	uint32_t next = r->next;
	uint64_t bytes = 0;
	unsigned k = 0;

	if (rxr_empty_slots(r) >= r->batch)
		rxr_refill(r, rx_post, rx_doorbell, q);
	tmpl = tide_mbuf__rx_tmpl_load(&q->tmpl);
	while (k < n && next != r->refill) {
		struct e1000e_rx_desc *d = &ring[next & mask];
		/* Pairs with the device's write-back: length and errors are valid once DD is. */
		uint8_t status = __atomic_load_n(&d->status, __ATOMIC_ACQUIRE);
		struct tide_mbuf *m;
		uint16_t len;

		if (!(status & E1000E_RXD_STAT_DD))
			break;
		m = sw[next & mask];
		len = d->len;
		next++;
		tide_mbuf__rx_tmpl_write(m, tmpl);
		m->pkt_len = len;
		m->data_len = len;
		if (tide_likely(q->pkt_first == NULL && (status & E1000E_RXD_STAT_EOP) &&
				!(d->errors & E1000E_RXD_ERR_FRAME))) {
			pkts[k++] = m;
			bytes += len;
			continue;
		}
		if (rx_slow(q, m, status, d->errors, &pkts[k])) {
			bytes += pkts[k]->pkt_len;
			k++;
		}
	}
	r->next = next;
	tide_stat_burst(&pub->stats, k, bytes);
	return (uint16_t)k;
}

void e1000e_rx_csum_init(struct e1000e_rxq *q)
{
	const bool ip = q->offloads & TIDE_OFFLOAD_RX_IPV4_CKSUM,
		   l4 = q->offloads & (TIDE_OFFLOAD_RX_TCP_CKSUM | TIDE_OFFLOAD_RX_UDP_CKSUM);

	for (unsigned st = 0; st < 256; st++) {
		for (unsigned err = 0; err < 256; err++) {
			uint32_t fl = 0;

			/* IXSM: the device says to ignore the checksum bits. */
			if (!(st & E1000E_RXD_STAT_IXSM) && ip && (st & E1000E_RXD_STAT_IPCS))
				fl |= err & E1000E_RXD_ERR_IPE ? TIDE_MBUF_F_RX_IP_CKSUM_BAD
							       : TIDE_MBUF_F_RX_IP_CKSUM_GOOD;
			if (!(st & E1000E_RXD_STAT_IXSM) && l4 &&
			    (st & (E1000E_RXD_STAT_TCPCS | E1000E_RXD_STAT_UDPCS)))
				fl |= err & E1000E_RXD_ERR_TCPE ? TIDE_MBUF_F_RX_L4_CKSUM_BAD
								: TIDE_MBUF_F_RX_L4_CKSUM_GOOD;
			q->csum_flags[e1000e_rx_csum_index((uint8_t)st, (uint8_t)err)] = (uint8_t)fl;
		}
	}
}

/*
 * The Rx burst of a queue with a checksum offload enabled: the plain burst (left exactly
 * as it is for the queues without), then the status and error bits of each delivered
 * frame's last descriptor, which are still in the ring (a slot is posted again only at the
 * next burst's refill). A frame is matched to its packet by its first buffer: a frame
 * dropped in the burst has no packet, and one begun in an earlier burst starts with the
 * buffer the queue was assembling.
 */
static uint16_t e1000e_rx_burst_csum(struct tide_rxq *pub, struct tide_mbuf **pkts, uint16_t n)
{
	struct e1000e_rxq *q = (struct e1000e_rxq *)pub;
	struct tide_mbuf *const *const sw = q->rxr.sw;
	struct tide_mbuf *first = q->pkt_first;
	uint32_t idx = q->rxr.next;
	const uint16_t k = e1000e_rx_burst(pub, pkts, n);

	/* Every packet's last descriptor lies before the burst's end. */
	for (uint16_t j = 0; j < k; idx++) {
		const struct e1000e_rx_desc *d = &q->ring[idx & q->mask];

		if (first == NULL)
			first = sw[idx & q->mask];
		if (!(d->status & E1000E_RXD_STAT_EOP))
			continue;
		if (pkts[j] == first)
			pkts[j++]->ol_flags |= q->csum_flags[e1000e_rx_csum_index(d->status, d->errors)];
		first = NULL;
	}
	return k;
}

tide_rx_burst_fn e1000e_rx_burst_fn(bool csum)
{
	return csum ? e1000e_rx_burst_csum : e1000e_rx_burst;
}

tide_tx_burst_fn e1000e_tx_burst_fn(bool offload)
{
	return offload ? e1000e_tx_burst_offload : e1000e_tx_burst;
}
