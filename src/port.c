/* SPDX-License-Identifier: BSD-3-Clause */
/* Port life cycle, checks common to every driver, the registry of open ports, stats.
 * Pairing and the recycle calls are the recycle link's (link.c). */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "driver.h"
#include "link.h"
#include "log.h"
#include "qs.h"
#include "rxr.h"
#include "txc.h"

/* Open ports, so that pairings pointing at a closing queue can be dropped. */
static struct tide_port *registry[TIDE_MAX_PORTS];

uint16_t tide_rx_burst_noop(struct tide_rxq *q, struct tide_mbuf **pkts, uint16_t n)
{
	(void)q;
	(void)pkts;
	(void)n;
	return 0;
}

uint16_t tide_tx_burst_noop(struct tide_txq *q, struct tide_mbuf **pkts, uint16_t n)
{
	(void)q;
	(void)pkts;
	(void)n;
	return 0;
}

static const char *const rs_names[] = {"bucket", "every", "burst", NULL};
static const char *const txfree_names[] = {"auto", "each", "bulk", "fast", "recycle", NULL};

static int parse_name(const char *const *names, const char *s, int *out)
{
	for (int i = 0; names[i]; i++)
		if (strcmp(names[i], s) == 0) {
			*out = i;
			return 0;
		}
	return -EINVAL;
}

const char *tide_rs_name(enum tide_rs rs)
{
	return (unsigned)rs < 3 ? rs_names[rs] : "?";
}

int tide_rs_parse(const char *s, enum tide_rs *out)
{
	int v, rc = parse_name(rs_names, s, &v);

	if (rc == 0)
		*out = (enum tide_rs)v;
	return rc;
}

const char *tide_txfree_name(enum tide_txfree f)
{
	return (unsigned)f < 5 ? txfree_names[f] : "?";
}

int tide_txfree_parse(const char *s, enum tide_txfree *out)
{
	int v, rc = parse_name(txfree_names, s, &v);

	if (rc == 0)
		*out = (enum tide_txfree)v;
	return rc;
}

int tide_port_alloc(const struct tide_driver *drv, const char *name, size_t priv_size,
		    struct tide_port **out)
{
	struct tide_port *p = calloc(1, sizeof(*p));

	if (p == NULL)
		return -ENOMEM;
	if (priv_size) {
		p->priv = calloc(1, priv_size);
		if (p->priv == NULL) {
			free(p);
			return -ENOMEM;
		}
	}
	p->drv = drv;
	p->id = -1;
	p->link_efd = -1;
	snprintf(p->name, sizeof(p->name), "%s", name);
	p->info.sz = sizeof(p->info);
	p->info.driver = drv->name;
	p->info.name = p->name;
	p->info.max_rxq = 1;
	p->info.max_txq = 1;
	p->info.min_desc = 64;
	p->info.max_desc = 4096;
	p->info.max_rs_gap = UINT16_MAX;
	p->info.needs_poll_ctl = drv->poll_ctl != NULL; /* a driver with a thread clears it */
	tide_port_frame_limit(p, TIDE_MAX_FRAME_DEFAULT);
	*out = p;
	return 0;
}

void tide_port_free_unregistered(struct tide_port *p)
{
	if (p->drv->close)
		p->drv->close(p);
	if (p->link_efd >= 0)
		close(p->link_efd); /* after the driver's close: no thread of it signals now */
	free(p->priv);
	free(p);
}

int tide_ports_open(const char *spec, struct tide_port **ports, unsigned max)
{
	struct tide_kvargs kv;
	const struct tide_driver *drv;
	int n, rc;
	unsigned free_slots = 0;

	if (spec == NULL || ports == NULL || max == 0)
		return -EINVAL;
	rc = tide_kvargs_parse(spec, &kv);
	if (rc < 0)
		return rc;
	drv = tide_driver_find(kv.driver);
	if (drv == NULL) {
		TIDE_LOG_ERR_("port", "spec '%s': unknown driver '%s' (built in: %s)", spec,
			      kv.driver, tide_driver_names());
		tide_kvargs_free(&kv);
		return -EINVAL;
	}
	n = drv->open(&kv, ports, max);
	if (n >= 0) {
		rc = tide_kvargs_check_unused(&kv, drv->keys);
		for (unsigned i = 0; i < TIDE_MAX_PORTS; i++)
			free_slots += registry[i] == NULL;
		if (rc == 0 && (unsigned)n > free_slots) {
			TIDE_LOG_ERR_("port", "spec '%s': more than %d ports open", spec,
				      TIDE_MAX_PORTS);
			rc = -ENOSPC;
		}
		if (rc < 0) {
			for (int i = n - 1; i >= 0; i--)
				tide_port_free_unregistered(ports[i]);
			n = rc;
		}
	}
	tide_kvargs_free(&kv);
	for (int i = 0; i < n; i++)
		for (int s = 0; s < TIDE_MAX_PORTS; s++)
			if (registry[s] == NULL) {
				registry[s] = ports[i];
				ports[i]->id = s;
				break;
			}
	return n;
}

int tide_port_open(const char *spec, struct tide_port **out)
{
	struct tide_port *ports[TIDE_MAX_PORTS];
	int n = tide_ports_open(spec, ports, TIDE_MAX_PORTS);

	if (n < 0)
		return n;
	if (n != 1) {
		TIDE_LOG_ERR_("port", "spec '%s' describes %d ports; use tide_ports_open()", spec,
			      n);
		for (int i = 0; i < n; i++)
			tide_port_close(ports[i]);
		return -EINVAL;
	}
	*out = ports[0];
	return 0;
}

int tide_port_id(const struct tide_port *p)
{
	return p->id;
}

struct tide_port *tide_port_by_id(unsigned id)
{
	return id < TIDE_MAX_PORTS ? registry[id] : NULL;
}

struct tide_port *tide_port_by_name(const char *name)
{
	for (unsigned i = 0; name != NULL && i < TIDE_MAX_PORTS; i++)
		if (registry[i] != NULL && strcmp(registry[i]->name, name) == 0)
			return registry[i];
	return NULL;
}

struct tide_port *tide_port_next(const struct tide_port *prev)
{
	for (unsigned i = prev != NULL ? (unsigned)prev->id + 1 : 0; i < TIDE_MAX_PORTS; i++)
		if (registry[i] != NULL)
			return registry[i];
	return NULL;
}

static int check_stopped(const struct tide_port *p, const char *what)
{
	if (p->started) {
		TIDE_LOG_ERR_(p->name, "%s: port is started; stop it first", what);
		return -EBUSY;
	}
	return 0;
}

void tide_port_foreach_rxq(void (*fn)(struct tide_rxq *q, void *arg), void *arg)
{
	for (unsigned i = 0; i < TIDE_MAX_PORTS; i++) {
		struct tide_port *p = registry[i];

		if (p == NULL)
			continue;
		for (unsigned q = 0; q < TIDE_MAX_QUEUES; q++)
			if (p->rxq[q])
				fn(p->rxq[q], arg);
	}
}

/* Queue sets for release_queues(): bit q is queue q. */
static_assert(TIDE_MAX_QUEUES <= 32, "queue masks are 32 bits");
#define QMASK_ALL UINT32_MAX
#define QMASK_FROM(q) ((q) >= 32 ? 0u : UINT32_MAX << (q))
#define QMASK_ONE(q) (1u << (q))

/*
 * Queue teardown: release the Rx queues in @rx and the Tx queues in @tx (bit masks) under
 * one grace period, however many there are. The port is stopped, so no burst of it runs
 * and no refill recycles from its Tx engines (tide_port_stop ran a grace period after the
 * engines became STOPPED). A Tx queue: every pairing that names it is cleared first, so
 * that after the grace period no refill still holds the pointer it read (a stopped
 * queue's own Tx burst, which could pair it again, is a no-op by now). An Rx queue: hints
 * naming it are stale once the grace period ran (link.h).
 */
static void release_queues(struct tide_port *p, uint32_t rx, uint32_t tx)
{
	for (unsigned q = 0; q < TIDE_MAX_QUEUES; q++) {
		if (!(rx & QMASK_ONE(q)) || p->rxq[q] == NULL)
			rx &= ~QMASK_ONE(q);
		if (!(tx & QMASK_ONE(q)) || p->txq[q] == NULL)
			tx &= ~QMASK_ONE(q);
		else if (p->txq[q]->txc)
			link_unpair((uintptr_t)p->txq[q]->txc);
	}
	if ((rx | tx) == 0)
		return;
	qs_synchronize(); /* queue release: no refill holds an engine, no hint names a queue */
	for (unsigned q = 0; q < TIDE_MAX_QUEUES; q++) {
		if (rx & QMASK_ONE(q)) {
			p->drv->rxq_release(p->rxq[q]);
			p->rxq[q] = NULL;
		}
		if (tx & QMASK_ONE(q)) {
			p->drv->txq_release(p->txq[q]);
			p->txq[q] = NULL;
		}
	}
}

int tide_port_configure(struct tide_port *p, unsigned nb_rxq, unsigned nb_txq)
{
	int rc = check_stopped(p, "configure");

	if (rc < 0)
		return rc;
	if (nb_rxq > p->info.max_rxq || nb_txq > p->info.max_txq || nb_rxq + nb_txq == 0) {
		TIDE_LOG_ERR_(p->name, "configure: %u Rx / %u Tx queues; this port allows 0..%u / 0..%u (not both 0)",
			      nb_rxq, nb_txq, p->info.max_rxq, p->info.max_txq);
		return -EINVAL;
	}
	if (p->drv->configure) {
		rc = p->drv->configure(p, nb_rxq, nb_txq);
		if (rc < 0)
			return rc;
	}
	release_queues(p, QMASK_FROM(nb_rxq), QMASK_FROM(nb_txq));
	p->nb_rxq = p->info.nb_rxq = nb_rxq;
	p->nb_txq = p->info.nb_txq = nb_txq;
	return 0;
}

static int check_desc(const struct tide_port *p, const char *what, unsigned qid, unsigned nq,
		      unsigned nb_desc)
{
	if (qid >= nq) {
		TIDE_LOG_ERR_(p->name, "%s queue %u: only %u configured", what, qid, nq);
		return -EINVAL;
	}
	if (!tide_is_pow2(nb_desc) || nb_desc < p->info.min_desc || nb_desc > p->info.max_desc) {
		TIDE_LOG_ERR_(p->name, "%s queue %u: %u descriptors; need a power of two in %u..%u",
			      what, qid, nb_desc, p->info.min_desc, p->info.max_desc);
		return -EINVAL;
	}
	return 0;
}

/* Offloads a queue asks for must all be in the driver's capabilities. */
static int check_offloads(const struct tide_port *p, const char *what, unsigned qid,
			  uint64_t want, uint64_t capa)
{
	if (want & ~capa) {
		TIDE_LOG_ERR_(p->name, "%s queue %u: offloads 0x%llx not supported by driver %s "
			      "(it offers 0x%llx); use the software fallback (tide/offload.h)",
			      what, qid, (unsigned long long)(want & ~capa), p->drv->name,
			      (unsigned long long)capa);
		return -ENOTSUP;
	}
	return 0;
}

int tide_rxq_setup(struct tide_port *p, unsigned qid, unsigned nb_desc, struct tide_pool *pool,
		   const struct tide_rxq_conf *conf)
{
	struct tide_rxq_conf c = {.sz = sizeof(c)};
	struct tide_rxq *q;
	int rc = check_stopped(p, "rxq setup");

	if (rc == 0)
		rc = check_desc(p, "Rx", qid, p->nb_rxq, nb_desc);
	if (rc < 0)
		return rc;
	if (pool == NULL) {
		TIDE_LOG_ERR_(p->name, "Rx queue %u: no pool given", qid);
		return -EINVAL;
	}
	if (conf) {
		if (conf->sz == 0 || conf->sz > sizeof(c)) {
			TIDE_LOG_ERR_(p->name, "Rx queue %u: conf.sz %zu unknown", qid, conf->sz);
			return -EINVAL;
		}
		memcpy(&c, conf, conf->sz);
	}
	rc = check_offloads(p, "Rx", qid, c.offloads, p->info.rx_offload_capa);
	if (rc == 0)
		rc = rxr_conf_check(p->name, nb_desc, &c);
	if (rc < 0)
		return rc;
	rc = p->drv->rxq_setup(p, qid, nb_desc, pool, &c, &q);
	if (rc < 0)
		return rc;
	release_queues(p, QMASK_ONE(qid), 0);
	q->call = q->burst = tide_rx_burst_noop;
	q->port = p;
	q->qid = (uint16_t)qid;
	p->rxq[qid] = q;
	return 0;
}

int tide_txq_setup(struct tide_port *p, unsigned qid, unsigned nb_desc,
		   const struct tide_txq_conf *conf)
{
	struct tide_txq_conf c = {.sz = sizeof(c)};
	struct tide_txq *q;
	char who[80];
	int rc = check_stopped(p, "txq setup");

	if (rc == 0)
		rc = check_desc(p, "Tx", qid, p->nb_txq, nb_desc);
	if (rc < 0)
		return rc;
	if (conf) {
		if (conf->sz == 0 || conf->sz > sizeof(c)) {
			TIDE_LOG_ERR_(p->name, "Tx queue %u: conf.sz %zu unknown", qid, conf->sz);
			return -EINVAL;
		}
		memcpy(&c, conf, conf->sz);
	}
	snprintf(who, sizeof(who), "%s txq %u", p->name, qid);
	rc = check_offloads(p, "Tx", qid, c.offloads, p->info.tx_offload_capa);
	if (rc == 0)
		rc = txc_conf_check(who, nb_desc, p->info.max_rs_gap, p->info.tx_reclaim_eager,
				    &c);
	if (rc < 0)
		return rc;
	rc = p->drv->txq_setup(p, qid, nb_desc, &c, &q);
	if (rc < 0)
		return rc;
	release_queues(p, 0, QMASK_ONE(qid));
	q->call = q->burst = tide_tx_burst_noop;
	q->port = p;
	q->qid = (uint16_t)qid;
	p->txq[qid] = q;
	return 0;
}

int tide_port_start(struct tide_port *p)
{
	int rc;

	if (p->started)
		return 0;
	for (unsigned q = 0; q < p->nb_rxq; q++)
		if (p->rxq[q] == NULL) {
			TIDE_LOG_ERR_(p->name, "start: Rx queue %u is not set up", q);
			return -EINVAL;
		}
	for (unsigned q = 0; q < p->nb_txq; q++)
		if (p->txq[q] == NULL) {
			TIDE_LOG_ERR_(p->name, "start: Tx queue %u is not set up", q);
			return -EINVAL;
		}
	if (p->nb_rxq + p->nb_txq == 0) {
		TIDE_LOG_ERR_(p->name, "start: port is not configured");
		return -EINVAL;
	}
	rc = p->drv->start(p);
	if (rc < 0)
		return rc;
	p->started = true;
	link_hint_ = NULL; /* the driver's first refill ran here: it is not a burst */
	/* The Tx engines may be taken again, by the first thread that polls each. */
	for (unsigned q = 0; q < p->nb_txq; q++) {
		struct txc *t = p->txq[q]->txc;

		if (t)
			link_tx_start(&t->link);
	}
	/* Release: pairs with the acquire load in the burst calls; the queues are ready. Only
	 * where the call is still the stopped no-op: a driver whose control thread runs from
	 * its start (vhost) may already have published a queue's burst (its choice is stored
	 * in burst before call, so one read here cannot bring back an older one). */
	for (unsigned q = 0; q < p->nb_rxq; q++) {
		tide_rx_burst_fn want = tide_rx_burst_noop;

		__atomic_compare_exchange_n(&p->rxq[q]->call, &want,
					    __atomic_load_n(&p->rxq[q]->burst, __ATOMIC_RELAXED),
					    false, __ATOMIC_RELEASE, __ATOMIC_RELAXED);
	}
	for (unsigned q = 0; q < p->nb_txq; q++) {
		tide_tx_burst_fn want = tide_tx_burst_noop;

		__atomic_compare_exchange_n(&p->txq[q]->call, &want,
					    __atomic_load_n(&p->txq[q]->burst, __ATOMIC_RELAXED),
					    false, __ATOMIC_RELEASE, __ATOMIC_RELAXED);
	}
	return 0;
}

int tide_port_stop(struct tide_port *p)
{
	if (!p->started)
		return 0;
	/* Bursts become no-ops (the driver's own choice is kept for the next start, which
	 * sets it again) and the Tx engines are STOPPED: no refill recycles from them and no
	 * thread can take them (a Tx burst that loaded its call before this, tide_recycle(),
	 * tide_txq_done_cleanup() all find the owner word changed). After the grace period no
	 * entry that saw the queue running is still in it, and the driver may take its
	 * buffers back; the engines stay the driver's until the next start. */
	for (unsigned q = 0; q < p->nb_rxq; q++)
		__atomic_store_n(&p->rxq[q]->call, tide_rx_burst_noop, __ATOMIC_RELAXED);
	for (unsigned q = 0; q < p->nb_txq; q++) {
		struct txc *t = p->txq[q]->txc;

		__atomic_store_n(&p->txq[q]->call, tide_tx_burst_noop, __ATOMIC_RELAXED);
		if (t)
			link_tx_stop(&t->link);
	}
	qs_synchronize(); /* stop: no burst of this port runs past this point */
	p->drv->stop(p);
	p->started = false;
	return 0;
}

void tide_port_close(struct tide_port *p)
{
	if (p == NULL)
		return;
	/* Two grace periods at most: stop's (bursts that saw the port running) and the queue
	 * release's (refills that read a pairing naming one of its Tx engines; a Tx burst
	 * inside stop's grace period may have written one after any earlier clearing). */
	tide_port_stop(p);
	release_queues(p, QMASK_ALL, QMASK_ALL);
	if (p->id >= 0)
		registry[p->id] = NULL;
	tide_port_free_unregistered(p);
}

struct tide_rxq *tide_port_rxq(struct tide_port *p, unsigned qid)
{
	return qid < TIDE_MAX_QUEUES ? p->rxq[qid] : NULL;
}

struct tide_txq *tide_port_txq(struct tide_port *p, unsigned qid)
{
	return qid < TIDE_MAX_QUEUES ? p->txq[qid] : NULL;
}

int tide_port_info_get(const struct tide_port *p, struct tide_port_info *out)
{
	struct tide_port_info full = {.sz = sizeof(full)};
	unsigned mtu;

	if (p == NULL ||
	    tide_sized_check(out, TIDE_SIZE_UPTO(struct tide_port_info, tx_offload_capa)) < 0)
		return -EINVAL;
	full = p->info;
	full.sz = sizeof(full);
	if (tide_port_mtu_get(p, &mtu) == 0)
		full.mtu = mtu;
	return tide_sized_put(out, &full, sizeof(full));
}

const char *tide_port_name(const struct tide_port *p)
{
	return p->name;
}

int tide_port_link_get(struct tide_port *p, struct tide_link *out)
{
	if (p->drv->link_get)
		return p->drv->link_get(p, out);
	out->up = p->started;
	out->speed_mbps = 0;
	return 0;
}

int tide_port_poll_ctl(struct tide_port *p)
{
	return p->drv->poll_ctl ? p->drv->poll_ctl(p) : 0;
}

/* Rx interrupts: checked here, implemented by the drivers that have them. */
static int rxq_intr_check(struct tide_port *p, unsigned qid)
{
	if (p == NULL || qid >= p->nb_rxq || p->rxq[qid] == NULL)
		return -EINVAL;
	return p->drv->rxq_intr_fd ? 0 : -ENOTSUP;
}

int tide_rxq_intr_fd(struct tide_port *p, unsigned qid)
{
	int rc = rxq_intr_check(p, qid);

	return rc < 0 ? rc : p->drv->rxq_intr_fd(p, qid);
}

int tide_rxq_intr_enable(struct tide_port *p, unsigned qid)
{
	int rc = rxq_intr_check(p, qid);

	return rc < 0 ? rc : p->drv->rxq_intr_set(p, qid, 1);
}

int tide_rxq_intr_disable(struct tide_port *p, unsigned qid)
{
	int rc = rxq_intr_check(p, qid);

	return rc < 0 ? rc : p->drv->rxq_intr_set(p, qid, 0);
}

static uint64_t stat_read(const uint64_t *c)
{
	return __atomic_load_n(c, __ATOMIC_RELAXED);
}

static void queue_stats_read(const struct tide_queue_stats *s, struct tide_queue_stats *out)
{
	out->packets = stat_read(&s->packets);
	out->bytes = stat_read(&s->bytes);
	out->errors = stat_read(&s->errors);
	out->nombuf = stat_read(&s->nombuf);
	out->polls = stat_read(&s->polls);
	out->idle_polls = stat_read(&s->idle_polls);
}

int tide_port_stats_get(const struct tide_port *p, struct tide_port_stats *out)
{
	struct tide_port_stats full, *st = &full;

	if (p == NULL || tide_sized_check(out, TIDE_SIZE_UPTO(struct tide_port_stats, txq)) < 0)
		return -EINVAL;
	memset(st, 0, sizeof(*st));
	for (unsigned q = 0; q < p->nb_rxq; q++) {
		struct tide_queue_stats *s = &st->rxq[q];

		if (p->rxq[q] == NULL)
			continue;
		queue_stats_read(&p->rxq[q]->stats, s);
		st->ipackets += s->packets;
		st->ibytes += s->bytes;
		st->ierrors += s->errors;
		st->rx_nombuf += s->nombuf;
		st->rx_polls += s->polls;
		st->rx_idle_polls += s->idle_polls;
	}
	for (unsigned q = 0; q < p->nb_txq; q++) {
		struct tide_queue_stats *s = &st->txq[q];
		struct txc *t;

		if (p->txq[q] == NULL)
			continue;
		queue_stats_read(&p->txq[q]->stats, s);
		st->opackets += s->packets;
		st->obytes += s->bytes;
		st->oerrors += s->errors;
		st->tx_polls += s->polls;
		st->tx_idle_polls += s->idle_polls;
		t = p->txq[q]->txc;
		if (t) {
			st->tx_released += stat_read(&t->released);
			st->tx_recycled += stat_read(&t->recycled);
		}
	}
	if (p->drv->stats_add)
		p->drv->stats_add(p, st);
	return tide_sized_put(out, st, sizeof(*st));
}

/* Zero counters that a polling thread may be updating (relaxed stores: no tearing; a count
 * made at the same moment may be lost). */
void tide_stat_zero(uint64_t *c, size_t n)
{
	for (size_t i = 0; i < n; i++)
		__atomic_store_n(&c[i], 0, __ATOMIC_RELAXED);
}

#define ZERO_STATS(s) tide_stat_zero((uint64_t *)(void *)(s), sizeof(*(s)) / sizeof(uint64_t))

void tide_port_stats_reset(struct tide_port *p)
{
	for (unsigned q = 0; q < p->nb_rxq; q++)
		if (p->rxq[q])
			ZERO_STATS(&p->rxq[q]->stats);
	for (unsigned q = 0; q < p->nb_txq; q++) {
		struct txc *t = p->txq[q] ? p->txq[q]->txc : NULL;

		if (p->txq[q] == NULL)
			continue;
		ZERO_STATS(&p->txq[q]->stats);
		if (t) {
			tide_stat_zero(&t->released, 1);
			tide_stat_zero(&t->recycled, 1);
		}
	}
	if (p->drv->stats_reset)
		p->drv->stats_reset(p);
}
