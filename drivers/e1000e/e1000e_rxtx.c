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
#include "inline.h"
#include "e1000e.h"
#include "log.h"

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
		   struct txc_burst *b, uint64_t *bytes)
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
		uint32_t len = s->data_len, cmd = next ? 0 : E1000E_TXD_CMD_EOP;

		*bytes += len;
		s->next = NULL;
		s->nb_segs = 1;
		s->pkt_len = len;
		if (len != 0 && tx_crosses(q, a, len)) {
			uint32_t first = (uint32_t)(((a | (q->dma_page - 1)) + 1) - a);

			tide_mbuf_refcnt_update(s, 1);
			tx_write(&q->ring[(idx + k) & q->mask], a, first, 0);
			txc_burst_fill(b, idx + k, s);
			k++;
			a += first;
			len -= first;
		}
		tx_write(&q->ring[(idx + k) & q->mask], a, len, cmd);
		txc_burst_fill(b, idx + k, s);
		k++;
		s = next;
	}
	return (int)k;
refuse:
	tide_mbuf_free(m);
	return 0;
}

static uint16_t e1000e_tx_burst(struct tide_txq *pub, struct tide_mbuf **pkts, uint16_t n)
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
		k = tx_slow(q, m, first + used, room - used, &b, &bytes);
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

/* ---- Rx ---- */

TIDE_ALWAYS_INLINE void rx_post(void *ctx, uint32_t first, unsigned n)
{
	struct e1000e_rxq *q = ctx;
	/* A batch never wraps (it divides the ring). */
	const uint32_t idx = first & q->mask;
	struct e1000e_rx_desc *const d = &q->ring[idx];
	struct tide_mbuf *const *const sw = &q->rxr.sw[idx];
	/* A pool's buffer follows its header (mbuf.h). */
	const uintptr_t off = sizeof(struct tide_mbuf) + q->headroom;

	for (unsigned k = 0; k < n; k++) {
		d[k].addr = (uintptr_t)sw[k] + off;
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

static uint16_t e1000e_rx_burst(struct tide_rxq *pub, struct tide_mbuf **pkts, uint16_t n)
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

tide_rx_burst_fn e1000e_rx_burst_fn(void)
{
	return e1000e_rx_burst;
}

tide_tx_burst_fn e1000e_tx_burst_fn(void)
{
	return e1000e_tx_burst;
}
