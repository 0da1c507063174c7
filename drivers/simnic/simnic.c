/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * simnic driver: the software half of the simulated NIC. Descriptor handling only; ring
 * bookkeeping goes through the Tx completion engine (txc.h) and the Rx refill (rxr.h).
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inline.h"
#include "mem.h"
#include "log.h"
#include "simnic.h"

extern const struct tide_driver tide_driver_simnic;

static struct simnic_port *sport(const struct tide_port *p)
{
	return p->priv;
}

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

static unsigned tx_advance_dd_ool(struct txc *t)
{
	return tx_advance_dd(t);
}

static unsigned tx_advance_head_ool(struct txc *t)
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

static void rx_post_ool(struct rxr *r, uint32_t first, unsigned n, bool doorbell)
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

/* ---- control ---- */

static int simnic_rxq_setup(struct tide_port *p, unsigned qid, unsigned nb_desc,
			    struct tide_pool *pool, const struct tide_rxq_conf *conf,
			    struct tide_rxq **out)
{
	struct simnic_port *sp = sport(p);
	struct simnic_rxq *q = tide_zalloc_aligned(sizeof(*q));
	int rc;

	if (q == NULL)
		return -ENOMEM;
	q->ring = tide_zalloc_aligned(nb_desc * sizeof(*q->ring));
	rc = q->ring ? rxr_init(&q->rxr, &q->pub, nb_desc, pool, conf, rx_post_ool, q) : -ENOMEM;
	if (rc < 0) {
		free(q->ring);
		free(q);
		return rc;
	}
	q->size = nb_desc;
	q->mask = nb_desc - 1;
	q->headroom = (uint16_t)pool->mbuf_headroom;
	q->sp = sp;
	tide_mbuf__rx_tmpl_init(&q->tmpl, pool, (uint16_t)p->id, 0);
	q->tmpl.ol_flags = TIDE_MBUF_F_RX_RSS_HASH;
	*out = &q->pub;
	/* Publish to the device thread last (it only reads fully built queues). */
	__atomic_store_n(&sp->rxq[qid], q, __ATOMIC_RELEASE);
	return 0;
}

static int simnic_txq_setup(struct tide_port *p, unsigned qid, unsigned nb_desc,
			    const struct tide_txq_conf *conf, struct tide_txq **out)
{
	struct simnic_port *sp = sport(p);
	struct simnic_txq *q = tide_zalloc_aligned(sizeof(*q));
	struct txc_drv d = {0};
	int rc;

	if (q == NULL)
		return -ENOMEM;
	q->wb_head = sp->dev->wb_head;
	d.count_mode = q->wb_head;
	d.advance = q->wb_head ? tx_advance_head_ool : tx_advance_dd_ool;
	d.drv = q;
	q->ring = tide_zalloc_aligned(nb_desc * sizeof(*q->ring));
	rc = q->ring ? txc_init(&q->txc, &q->pub, nb_desc, conf, &d) : -ENOMEM;
	if (rc < 0) {
		free(q->ring);
		free(q);
		return rc;
	}
	q->size = nb_desc;
	q->mask = nb_desc - 1;
	q->sp = sp;
	*out = &q->pub;
	__atomic_store_n(&sp->txq[qid], q, __ATOMIC_RELEASE);
	return 0;
}

static void simnic_rxq_release(struct tide_rxq *pub)
{
	struct simnic_rxq *q = (struct simnic_rxq *)pub;
	struct simnic_port *sp = q->sp;

	/* Unpublish (unless a new setup of the same queue replaced it already), then wait
	 * until the device cannot be looking at it. */
	__atomic_compare_exchange_n(&sp->rxq[pub->qid], &q, NULL, false, __ATOMIC_RELEASE,
				    __ATOMIC_RELAXED);
	q = (struct simnic_rxq *)pub;
	simnic_hw_quiesce(sp->dev);
	rxr_fini(&q->rxr);
	free(q->ring);
	free(q);
}

static void simnic_txq_release(struct tide_txq *pub)
{
	struct simnic_txq *q = (struct simnic_txq *)pub;
	struct simnic_port *sp = q->sp;

	__atomic_compare_exchange_n(&sp->txq[pub->qid], &q, NULL, false, __ATOMIC_RELEASE,
				    __ATOMIC_RELAXED);
	q = (struct simnic_txq *)pub;
	simnic_hw_quiesce(sp->dev);
	txc_fini(&q->txc);
	free(q->ring);
	free(q);
}

static int simnic_configure(struct tide_port *p, unsigned nb_rxq, unsigned nb_txq)
{
	struct simnic_port *sp = sport(p);

	/* Read by other ports' inline Tx steps (deliver): relaxed atomic. */
	__atomic_store_n(&sp->nb_rxq, nb_rxq, __ATOMIC_RELAXED);
	sp->nb_txq = nb_txq;
	return 0;
}

static int simnic_start(struct tide_port *p)
{
	struct simnic_port *sp = sport(p);
	struct simnic_dev *d = sp->dev;
	bool inl = d->mode == SIMNIC_MODE_INLINE;

	sp->hw.gen_budget = d->count ? d->count : UINT64_MAX;
	for (unsigned i = 0; i < sp->nb_rxq; i++) {
		struct simnic_rxq *q = sp->rxq[i];

		q->hw.next_ns = 0;
		rxr_refill(&q->rxr, rx_post, rx_doorbell, q);
		if (q->rxr.refill - q->rxr.next < q->size)
			TIDE_LOG_WARN_(p->name, "Rx queue %u: pool %s could fill only %u of %u descriptors",
				       i, tide_pool_name(q->rxr.pool), q->rxr.refill - q->rxr.next,
				       q->size);
		q->pub.burst = inl ? rx_inline : rx_thread;
		__atomic_store_n(&q->hw.enabled, true, __ATOMIC_RELEASE);
	}
	for (unsigned i = 0; i < sp->nb_txq; i++) {
		struct simnic_txq *q = sp->txq[i];

		q->pub.burst = tx_bursts[q->wb_head][inl][q->txc.track];
		__atomic_store_n(&q->hw.enabled, true, __ATOMIC_RELEASE);
	}
	sp->started = true;
	if (d->mode == SIMNIC_MODE_THREAD && d->started_ports++ == 0) {
		int rc = simnic_hw_thread_start(d);

		if (rc < 0) {
			d->started_ports--;
			sp->started = false;
			tide_driver_simnic.stop(p);
			return rc;
		}
	}
	return 0;
}

static void simnic_stop(struct tide_port *p)
{
	struct simnic_port *sp = sport(p);
	struct simnic_dev *d = sp->dev;

	for (unsigned i = 0; i < sp->nb_rxq; i++)
		if (sp->rxq[i])
			__atomic_store_n(&sp->rxq[i]->hw.enabled, false, __ATOMIC_RELEASE);
	for (unsigned i = 0; i < sp->nb_txq; i++)
		if (sp->txq[i])
			__atomic_store_n(&sp->txq[i]->hw.enabled, false, __ATOMIC_RELEASE);
	simnic_hw_quiesce(d);
	if (sp->started && d->mode == SIMNIC_MODE_THREAD && --d->started_ports == 0)
		simnic_hw_thread_stop(d);
	sp->started = false;
	/* The device is quiet: give back every buffer and reset rings and registers. */
	for (unsigned i = 0; i < sp->nb_rxq; i++) {
		struct simnic_rxq *q = sp->rxq[i];

		if (q == NULL)
			continue;
		rxr_release_all(&q->rxr);
		memset(q->ring, 0, q->size * sizeof(*q->ring));
		q->tail = 0;
		q->hw.head = 0;
	}
	for (unsigned i = 0; i < sp->nb_txq; i++) {
		struct simnic_txq *q = sp->txq[i];

		if (q == NULL)
			continue;
		txc_release_all(&q->txc);
		memset(q->ring, 0, q->size * sizeof(*q->ring));
		q->tail = 0;
		q->head_wb = 0;
		q->hw.head = 0;
		q->hw.gap = 0;
		q->hw.hung = false;
	}
}

static void simnic_close(struct tide_port *p)
{
	struct simnic_port *sp = sport(p);
	struct simnic_dev *d;

	if (sp == NULL || sp->dev == NULL)
		return;
	d = sp->dev;
	/* Unpublish, and let the device thread (still serving other ports) finish any step
	 * that might be looking at this port before its memory goes. */
	__atomic_store_n(&d->ports[sp->idx], NULL, __ATOMIC_RELEASE);
	simnic_hw_quiesce(d);
	if (--d->open_ports == 0)
		free(d);
}

static int simnic_link_get(struct tide_port *p, struct tide_link *out)
{
	out->up = p->started;
	out->speed_mbps = 100000;
	return 0;
}

static void simnic_stats_add(const struct tide_port *p, struct tide_port_stats *st)
{
	const struct simnic_port *sp = sport(p);

	for (unsigned i = 0; i < SIMNIC_MAX_QUEUES; i++) {
		if (sp->rxq[i])
			st->rx_missed += __atomic_load_n(&sp->rxq[i]->hw.missed, __ATOMIC_RELAXED);
		if (sp->txq[i])
			st->tx_hangs += __atomic_load_n(&sp->txq[i]->hw.hangs, __ATOMIC_RELAXED);
	}
	st->oerrors += st->tx_hangs;
}

static void simnic_stats_reset(struct tide_port *p)
{
	struct simnic_port *sp = sport(p);

	/* The device may be counting (other ports of the device, or this one running). */
	for (unsigned i = 0; i < SIMNIC_MAX_QUEUES; i++) {
		if (sp->rxq[i])
			tide_stat_zero(&sp->rxq[i]->hw.missed, 1);
		if (sp->txq[i])
			tide_stat_zero(&sp->txq[i]->hw.hangs, 1);
	}
	tide_stat_zero(&sp->hw.gen_packets,
		       offsetof(typeof(sp->hw), gen_budget) / sizeof(uint64_t));
}

static const char *const modes[] = {"inline", "thread", NULL};
static const char *const wires[] = {"gen", "loop", "cross", NULL};
static const char *const wbs[] = {"dd", "head", NULL};

/*
 * cpu= of the device thread: by default the last CPU this process may run on (under
 * "taskset -c 1" that is CPU 1, not CPU count - 1); a CPU given must be one of those.
 */
static int device_cpu(struct tide_kvargs *kv, bool thread, uint64_t *cpu)
{
	int last = 0, rc;
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set) != 0)
		CPU_ZERO(&set);
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &set))
			last = c;
	rc = tide_kvargs_uint(kv, "cpu", (uint64_t)last, 0, CPU_SETSIZE - 1, cpu);
	if (rc == 0 && thread && CPU_COUNT(&set) != 0 && !CPU_ISSET((int)*cpu, &set)) {
		TIDE_LOG_ERR_("simnic", "cpu=%llu: this process may not run on CPU %llu (it may "
			      "run on %d CPUs, the last one is %d)",
			      (unsigned long long)*cpu, (unsigned long long)*cpu, CPU_COUNT(&set),
			      last);
		return -EINVAL;
	}
	return rc;
}

static int simnic_open(struct tide_kvargs *kv, struct tide_port **ports, unsigned max)
{
	static unsigned dev_seq;
	struct simnic_dev *d;
	uint64_t nports, nq, size, flows, ondie, cpu, count, rate;
	unsigned mode, wire, wb;
	int rc = 0;
	unsigned opened = 0;

	if (tide_kvargs_uint(kv, "ports", 1, 1, SIMNIC_MAX_PORTS, &nports) ||
	    tide_kvargs_uint(kv, "queues", 1, 1, SIMNIC_MAX_QUEUES, &nq) ||
	    tide_kvargs_uint(kv, "size", 64, 60, 2048, &size) ||
	    tide_kvargs_uint(kv, "flows", 1024, 1, 1u << 24, &flows) ||
	    tide_kvargs_uint(kv, "ondie", 40, 2, 4096, &ondie) ||
	    tide_kvargs_uint(kv, "count", 0, 0, UINT64_MAX, &count) ||
	    tide_kvargs_uint(kv, "rate", 0, 0, 1000000000ull, &rate) ||
	    tide_kvargs_choice(kv, "mode", modes, 0, &mode) ||
	    device_cpu(kv, mode == 1, &cpu) ||
	    tide_kvargs_choice(kv, "wire", wires, 0, &wire) ||
	    tide_kvargs_choice(kv, "wb", wbs, 0, &wb))
		return -EINVAL;
	if (nports > max) {
		TIDE_LOG_ERR_("simnic", "ports=%u: room for only %u", (unsigned)nports, max);
		return -ENOSPC;
	}
	d = calloc(1, sizeof(*d));
	if (d == NULL)
		return -ENOMEM;
	d->mode = (enum simnic_mode)mode;
	d->wire = (enum simnic_wire)wire;
	d->nports = (unsigned)nports;
	d->nqueues = (unsigned)nq;
	d->pkt_size = (unsigned)size;
	d->flows = (unsigned)flows;
	d->ondie = (unsigned)ondie;
	d->cpu = (int)cpu;
	d->count = count;
	d->rate = rate;
	d->wb_head = wb == 1;
	dev_seq++;
	for (unsigned i = 0; i < d->nports; i++) {
		char name[48];
		struct tide_port *p;
		struct simnic_port *sp;

		snprintf(name, sizeof(name), "simnic%u.%u", dev_seq, i);
		rc = tide_port_alloc(&tide_driver_simnic, name, sizeof(*sp), &p);
		if (rc < 0)
			break;
		sp = p->priv;
		sp->port = p;
		sp->dev = d;
		sp->idx = i;
		d->ports[i] = sp;
		d->open_ports++;
		p->info.max_rxq = d->nqueues;
		p->info.max_txq = d->nqueues;
		p->info.min_desc = 64;
		p->info.max_desc = 4096;
		p->info.max_rs_gap = d->ondie;
		tide_port_frame_limit(p, UINT16_MAX); /* one descriptor, a 16-bit length */
		p->info.count_completion = d->wb_head;
		p->info.mac[0] = 0x02;
		p->info.mac[5] = (uint8_t)i;
		ports[opened++] = p;
	}
	if (rc < 0) {
		for (unsigned i = opened; i-- > 0;)
			tide_port_free_unregistered(ports[i]);
		if (opened == 0)
			free(d);
		return rc;
	}
	return (int)opened;
}

static unsigned simnic_xstats(struct tide_port *p, const char **names, uint64_t *values,
			      unsigned max);

const struct tide_driver tide_driver_simnic = {
	.name = "simnic",
	.keys = "ports, queues, mode, cpu, wire, size, flows, count, rate, ondie, wb",
	.open = simnic_open,
	.configure = simnic_configure,
	.rxq_setup = simnic_rxq_setup,
	.txq_setup = simnic_txq_setup,
	.rxq_release = simnic_rxq_release,
	.txq_release = simnic_txq_release,
	.start = simnic_start,
	.stop = simnic_stop,
	.close = simnic_close,
	.mtu_set = tide_port_mtu_set_keep,
	.link_get = simnic_link_get,
	.stats_add = simnic_stats_add,
	.stats_reset = simnic_stats_reset,
	.xstats = simnic_xstats,
};

/* ---- public extras (tide/simnic.h) ---- */

static struct simnic_port *as_simnic(const struct tide_port *p)
{
	return p != NULL && p->drv == &tide_driver_simnic ? p->priv : NULL;
}

int tide_simnic_set_verify(struct tide_port *p, tide_simnic_verify_fn fn, void *arg)
{
	struct simnic_port *sp = as_simnic(p);

	if (sp == NULL || p->started)
		return sp == NULL ? -EINVAL : -EBUSY;
	sp->verify = fn;
	sp->verify_arg = arg;
	return 0;
}

int tide_simnic_set_gen(struct tide_port *p, tide_simnic_gen_fn fn, void *arg)
{
	struct simnic_port *sp = as_simnic(p);

	if (sp == NULL || p->started)
		return sp == NULL ? -EINVAL : -EBUSY;
	sp->gen = fn;
	sp->gen_arg = arg;
	return 0;
}

int tide_simnic_stats_get(const struct tide_port *p, struct tide_simnic_stats *out)
{
	const struct simnic_port *sp = as_simnic(p);
	struct tide_simnic_stats *dst = out, full;
	struct tide_port_stats st = {.sz = sizeof(st)};

	if (sp == NULL ||
	    tide_sized_check(dst, TIDE_SIZE_UPTO(struct tide_simnic_stats, device_idle)) < 0)
		return -EINVAL;
	out = &full; /* filled whole, then handed out as far as the caller's sz goes */
	memset(out, 0, sizeof(*out));
	out->gen_packets = __atomic_load_n(&sp->hw.gen_packets, __ATOMIC_RELAXED);
	out->sink_packets = __atomic_load_n(&sp->hw.sink_packets, __ATOMIC_RELAXED);
	out->sink_bytes = __atomic_load_n(&sp->hw.sink_bytes, __ATOMIC_RELAXED);
	out->verify_failed = __atomic_load_n(&sp->hw.verify_failed, __ATOMIC_RELAXED);
	memset(&st, 0, sizeof(st));
	simnic_stats_add(p, &st);
	out->rx_missed = st.rx_missed;
	out->tx_hangs = st.tx_hangs;
	out->device_polls = __atomic_load_n(&sp->dev->polls, __ATOMIC_RELAXED);
	out->device_idle = __atomic_load_n(&sp->dev->idle, __ATOMIC_RELAXED);
	return tide_sized_put(dst, &full, sizeof(full));
}

/* The device model's own counters for tide_xstats_*() (those of tide_simnic_stats_get()). */
static unsigned simnic_xstats(struct tide_port *p, const char **names, uint64_t *values,
			      unsigned max)
{
	static const char *const n[] = {"gen_packets",   "sink_packets", "sink_bytes",
					"verify_failed", "device_polls", "device_idle"};
	struct tide_simnic_stats ss = {.sz = sizeof(ss)};
	uint64_t v[6];

	tide_simnic_stats_get(p, &ss);
	v[0] = ss.gen_packets;
	v[1] = ss.sink_packets;
	v[2] = ss.sink_bytes;
	v[3] = ss.verify_failed;
	v[4] = ss.device_polls;
	v[5] = ss.device_idle;
	return tide_xstats_put(n, v, 6, names, values, max);
}

int tide_simnic_port_index(const struct tide_port *p)
{
	const struct simnic_port *sp = as_simnic(p);

	return sp ? (int)sp->idx : -EINVAL;
}
