/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * simnic driver: the software half of the simulated NIC, its port and queue operations
 * (the bursts: simnic_rxtx.c). Descriptor handling only; ring bookkeeping goes through the
 * Tx completion engine (txc.h) and the Rx refill (rxr.h).
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
	rc = q->ring ? rxr_init(&q->rxr, &q->pub, nb_desc, pool, conf, simnic_rx_post_ool, q) : -ENOMEM;
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
	d.advance = q->wb_head ? simnic_tx_advance_head_ool : simnic_tx_advance_dd_ool;
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
		simnic_rx_fill(q);
		if (q->rxr.refill - q->rxr.next < q->size)
			TIDE_LOG_WARN_(p->name, "Rx queue %u: pool %s could fill only %u of %u descriptors",
				       i, tide_pool_name(q->rxr.pool), q->rxr.refill - q->rxr.next,
				       q->size);
		q->pub.burst = simnic_rx_fn(inl);
		__atomic_store_n(&q->hw.enabled, true, __ATOMIC_RELEASE);
	}
	for (unsigned i = 0; i < sp->nb_txq; i++) {
		struct simnic_txq *q = sp->txq[i];

		q->pub.burst = simnic_tx_fn(q->wb_head, inl, q->txc.track);
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
