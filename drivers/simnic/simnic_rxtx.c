/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * simnic driver: the data path. Tx writes descriptors (RS placed by the Tx completion
 * engine, txc.h) and rings the tail doorbell; completion by the DD bit or by the head the
 * device writes back. Rx takes the written-back descriptors in ring order and refills
 * through rxr.h. Each burst comes in variants chosen at port start (simnic.c): completion
 * kind, device model inline or on its thread, the fast-free contract checked or asserted.
 */
#include "inline.h"
#include "simnic.h"

/* ---- Tx ---- */

TIDE_ALWAYS_INLINE int tx_desc_done(void *ctx, uint32_t slot)
{
	struct simnic_txq *q = ctx;

	/* Pairs with the device's release store of DD. */
	return __atomic_load_n(&q->ring[slot].status, __ATOMIC_ACQUIRE) & SIMNIC_TXD_STAT_DD;
}

TIDE_ALWAYS_INLINE void tx_set_rs(void *ctx, uint32_t slot)
{
	struct simnic_txq *q = ctx;

	q->ring[slot].cmd |= SIMNIC_TXD_CMD_RS;
}

TIDE_ALWAYS_INLINE unsigned tx_advance_dd(struct txc *t)
{
	return txc_advance_dd(t, tx_desc_done, t->drv);
}

TIDE_ALWAYS_INLINE unsigned tx_advance_head(struct txc *t)
{
	struct simnic_txq *q = t->drv;
	/* Pairs with the device's release store of the head write-back. */
	uint32_t head = __atomic_load_n(&q->head_wb, __ATOMIC_ACQUIRE);
	unsigned n = head - t->done;

	txc_advance_count(t, n);
	return n;
}

unsigned simnic_tx_advance_dd_ool(struct txc *t)
{
	return tx_advance_dd(t);
}

unsigned simnic_tx_advance_head_ool(struct txc *t)
{
	return tx_advance_head(t);
}

/*
 * The rare packets of a Tx burst, out of the loop: a chain is linearized (one descriptor per
 * packet), or dropped if too big; with @track, a packet breaking the fast-free contract is
 * noted. Returns whether to send the packet.
 */
static bool tx_slow(struct tide_mbuf *m, struct txc_burst *b, bool track)
{
	if (m->nb_segs != 1 && tide_mbuf_linearize(m) < 0)
		return false;
	if (track)
		txc_burst_check(b, m);
	return true;
}

/*
 * Write descriptors for packets from @p on, into the run of consecutive slots from @slot
 * to the end of the ring, until the packets or the run end, or a packet is dropped (the
 * next run starts at the same slot: inside a run, packet k always takes slot + k). Returns
 * the packets taken; the slots used, the drops and the bytes are added to the counters.
 */
TIDE_ALWAYS_INLINE unsigned
tx_run(struct tide_mbuf *const *p, unsigned n, struct simnic_tx_desc *ring, uint32_t slot,
       uint32_t size, struct txc_burst *b, const bool track, uint32_t *used, uint64_t *bytes,
       uint64_t *dropped)
{
	struct simnic_tx_desc *d = &ring[slot];
	struct tide_mbuf **s = &b->sw[slot];
	size_t k, take = size - slot < n ? size - slot : n;
	uint64_t sum = 0;

	for (k = 0; k < take; k++) {
		struct tide_mbuf *m = p[k];
		uint16_t len;

		/* One check for the common packet: one segment and, when tracking, the fast-free
		 * contract (refcnt and nb_segs are one word, mbuf.h; same pool). */
		if (tide_unlikely(track ? !txc_burst_keeps(b, m) : m->nb_segs != 1) &&
		    !tx_slow(m, b, track)) {
			tide_mbuf_free(m);
			++*dropped;
			*used += (uint32_t)k; /* the dropped packet took no slot */
			*bytes += sum;
			return (unsigned)k + 1;
		}
		len = m->data_len;
		d[k].addr = (uint64_t)(uintptr_t)m->buf_addr + m->data_off;
		/* len, cmd EOP and a clear status in one store (wb=head never reads status). */
		simnic_txd_set(&d[k], len, SIMNIC_TXD_CMD_EOP);
		s[k] = m;
		sum += len;
	}
	*used += (uint32_t)k;
	*bytes += sum;
	return (unsigned)k;
}

TIDE_ALWAYS_INLINE uint16_t
tx_burst(struct tide_txq *pub, struct tide_mbuf **pkts, uint16_t n, const bool wb_head,
	 const bool inline_hw, const bool track)
{
	struct simnic_txq *q = (struct simnic_txq *)pub;
	struct txc *t = &q->txc;
	unsigned room = txc_make_room(t, n, wb_head ? tx_advance_head : tx_advance_dd);
	/* Locals: the stores below go through pointers the compiler cannot tell apart from
	 * the queue (-fno-strict-aliasing), so fields read in the loop would be reloaded. */
	struct simnic_tx_desc *const ring = q->ring;
	const uint32_t mask = q->mask, size = q->size;
	uint32_t first = t->tail, used = 0;
	uint64_t bytes = 0, dropped = 0;
	struct txc_burst b;
	unsigned i = 0;

	if (n > room)
		n = (uint16_t)room;
	txc_burst_begin(t, &b);
	/* Runs of consecutive slots, no mask per packet: a run ends at the ring's end or
	 * after a drop, and the next one continues at the first slot not used. */
	while (i < n)
		i += tx_run(pkts + i, n - i, ring, (first + used) & mask, size, &b, track, &used,
			    &bytes, &dropped);
	txc_burst_end(t, &b);
	if (used) {
		txc_place_rs(t, first, used, tx_set_rs, q);
		txc_commit(t, used);
		/* Pairs with the device's acquire load of the doorbell. */
		__atomic_store_n(&q->tail, t->tail, __ATOMIC_RELEASE);
		tide_stat_burst(&pub->stats, used, bytes);
	}
	if (tide_unlikely(dropped)) {
		txc_count_released(t, (unsigned)dropped);
		tide_stat_add(&pub->stats.errors, dropped);
	}
	if (inline_hw)
		simnic_hw_tx_step(q, UINT32_MAX);
	return (uint16_t)i;
}

/* The burst functions, chosen at start: completion by DD or head write-back, device model
 * inline or on its thread, contract checked per packet (track) or asserted. */
#define SIMNIC_TX_BURST(name, wb_head, inline_hw, track)                                   \
	static uint16_t name(struct tide_txq *q, struct tide_mbuf **pkts, uint16_t n)      \
	{                                                                                  \
		return tx_burst(q, pkts, n, wb_head, inline_hw, track);                    \
	}
SIMNIC_TX_BURST(tx_dd_thread, false, false, false)
SIMNIC_TX_BURST(tx_dd_inline, false, true, false)
SIMNIC_TX_BURST(tx_head_thread, true, false, false)
SIMNIC_TX_BURST(tx_head_inline, true, true, false)
SIMNIC_TX_BURST(tx_dd_thread_track, false, false, true)
SIMNIC_TX_BURST(tx_dd_inline_track, false, true, true)
SIMNIC_TX_BURST(tx_head_thread_track, true, false, true)
SIMNIC_TX_BURST(tx_head_inline_track, true, true, true)

/* [wb_head][inline][track] */
static const tide_tx_burst_fn tx_bursts[2][2][2] = {
	{{tx_dd_thread, tx_dd_thread_track}, {tx_dd_inline, tx_dd_inline_track}},
	{{tx_head_thread, tx_head_thread_track}, {tx_head_inline, tx_head_inline_track}},
};

/* ---- Rx ---- */

TIDE_ALWAYS_INLINE void rx_post(void *ctx, uint32_t first, unsigned n)
{
	struct simnic_rxq *q = ctx;
	/* A batch never wraps (it divides the ring): one run of slots, no mask per slot. */
	const uint32_t idx = first & q->mask;
	struct simnic_rx_desc *const d = &q->ring[idx];
	struct tide_mbuf *const *const sw = &q->rxr.sw[idx];
	/* A pool's buffer follows its header (mbuf.h): no load of the header line. */
	const uint64_t off = sizeof(struct tide_mbuf) + q->headroom;

	/* Unrolled: a batch is usually 32 and the loop's own compare and branch were a third
	 * of its cost. */
#pragma GCC unroll 4
	for (unsigned k = 0; k < n; k++)
		simnic_rxd_post(&d[k], (uint64_t)(uintptr_t)sw[k] + off);
}

TIDE_ALWAYS_INLINE void rx_doorbell(void *ctx, uint32_t tail)
{
	struct simnic_rxq *q = ctx;

	/* Pairs with the device's acquire load of the tail. */
	__atomic_store_n(&q->tail, tail, __ATOMIC_RELEASE);
}

void simnic_rx_post_ool(struct rxr *r, uint32_t first, unsigned n, bool doorbell)
{
	rx_post(r->drv, first, n);
	if (doorbell)
		rx_doorbell(r->drv, first + n);
}

/*
 * How many of the @n posted descriptors from @next the device has written back. Write-back
 * is in ring order (simnic_desc.h): when the last one is done, all are, and one acquire
 * load covers the burst; otherwise scan for the first one not done.
 */
TIDE_ALWAYS_INLINE unsigned
rx_done(const struct simnic_rx_desc *ring, uint32_t mask, uint32_t next, unsigned n)
{
	unsigned i;

	if (n == 0)
		return 0;
	/* Pairs with the device's release store of the status: it was stored after every
	 * earlier descriptor's write-back, so their lengths and hashes are visible too. */
	if (__atomic_load_n(&ring[(next + n - 1) & mask].status, __ATOMIC_ACQUIRE) &
	    SIMNIC_RXD_STAT_DD)
		return n;
	for (i = 0; i < n - 1; i++)
		if (!(__atomic_load_n(&ring[(next + i) & mask].status, __ATOMIC_ACQUIRE) &
		      SIMNIC_RXD_STAT_DD))
			break;
	return i;
}

/* Hand out @n written-back descriptors of one run of slots (no wrap inside). Returns the
 * bytes received. */
TIDE_ALWAYS_INLINE uint64_t
rx_run(const struct simnic_rx_desc *d, struct tide_mbuf *const *sw, struct tide_mbuf **pkts,
       unsigned n, struct tide_mbuf__rx_regs tmpl)
{
	uint64_t bytes = 0;

#pragma GCC unroll 4
	for (unsigned k = 0; k < n; k++) {
		struct tide_mbuf *m = sw[k];
		uint16_t len = d[k].len;

		simnic_mbuf_rx(m, tmpl, len, d[k].rss);
		bytes += len;
		pkts[k] = m;
	}
	return bytes;
}

TIDE_ALWAYS_INLINE uint16_t
rx_burst(struct tide_rxq *pub, struct tide_mbuf **pkts, uint16_t n, const bool inline_hw)
{
	struct simnic_rxq *q = (struct simnic_rxq *)pub;
	struct rxr *r = &q->rxr;
	uint32_t next = r->next, idx, mask;
	unsigned first;
	uint64_t bytes;
	struct tide_mbuf__rx_regs tmpl;
	const struct simnic_rx_desc *ring;
	struct tide_mbuf *const *sw;

	/* Refill first: the slots received by the previous burst get buffers now, so that
	 * a Tx queue fed from them has had a burst's time to complete its buffers, which
	 * this refill can then take back directly (recycling). */
	if (rxr_empty_slots(r) >= r->batch)
		rxr_refill(r, rx_post, rx_doorbell, q);
	if (inline_hw)
		simnic_hw_rx_step(q, n);
	if (n > r->refill - next)
		n = (uint16_t)(r->refill - next);
	/* Locals: the mbuf stores below go through pointers the compiler cannot tell apart
	 * from the queue (-fno-strict-aliasing), so fields read in the loop would be
	 * reloaded. The Rx ring and the refill's slot array have the same size, so one mask
	 * serves both. */
	ring = q->ring;
	sw = r->sw;
	mask = q->mask;
	tmpl = tide_mbuf__rx_tmpl_load(&q->tmpl);
	n = (uint16_t)rx_done(ring, mask, next, n);
	/* At most two runs of consecutive slots: the ring may wrap once. */
	idx = next & mask;
	first = q->size - idx < n ? q->size - idx : n;
	bytes = rx_run(&ring[idx], &sw[idx], pkts, first, tmpl);
	if (n > first)
		bytes += rx_run(ring, sw, pkts + first, n - first, tmpl);
	r->next = next + n;
	tide_stat_burst(&pub->stats, n, bytes);
	return n;
}

static uint16_t rx_thread(struct tide_rxq *q, struct tide_mbuf **pkts, uint16_t n)
{
	return rx_burst(q, pkts, n, false);
}

static uint16_t rx_inline(struct tide_rxq *q, struct tide_mbuf **pkts, uint16_t n)
{
	return rx_burst(q, pkts, n, true);
}

tide_tx_burst_fn simnic_tx_fn(bool wb_head, bool inline_hw, bool track)
{
	return tx_bursts[wb_head][inline_hw][track];
}

tide_rx_burst_fn simnic_rx_fn(bool inline_hw)
{
	return inline_hw ? rx_inline : rx_thread;
}

void simnic_rx_fill(struct simnic_rxq *q)
{
	rxr_refill(&q->rxr, rx_post, rx_doorbell, q);
}
