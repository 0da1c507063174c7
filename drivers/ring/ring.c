/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ring driver: in-process port pairs that pass mbuf pointers through tide rings, for
 * pipelines and tests.
 *
 * Spec: ring:name=a[,peer=yes][,queues=N][,size=S]
 *   name    the pair (1..31 characters); the two ends open with the same name
 *   peer    no (default): end 0 of the pair; yes (or 1): end 1
 *   queues  queue pairs (1..16, default 1); set by the first end opened, and the second end
 *           must agree if it names it
 *   size    ring size in packets (a power of two, 64..65536); default 0: the larger of the
 *           two ends' descriptor counts for that queue. Same agreement rule as queues
 *
 *      end 0                                           end 1
 *    txq q  --enq-->  rings[0][q]  (SP/SC)  --deq-->  rxq q
 *    rxq q  <--deq--  rings[1][q]  (SP/SC)  <--enq--  txq q
 *
 * Tx hands ownership to the peer: a packet is complete once enqueued, so the Tx engine runs
 * in count mode with slots that never hold buffers (O(1) completion); packets that do not fit
 * are not taken. Packets sent to an end that is not started wait in the ring (up to its size).
 *
 * Buffers never stay behind: stopping an end frees what waits in its Rx rings, and also
 * what waits in its Tx rings when the peer is not started (nobody could take them); the
 * pair and its rings are freed when both ends are closed. Opening an end that is already
 * open is -EBUSY.
 *
 * The two ends may be polled by different threads. Open, start, stop and close of the two
 * ends are serialised by one lock here; queue setup of one end must not overlap the start
 * of the other (start reads the peer's descriptor counts).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tide/ring.h>

#include "driver.h"
#include "log.h"
#include "txc.h"

#define RING_MAX_QUEUES 16
#define RING_NAME_MAX 32

extern const struct tide_driver tide_driver_ring;

struct ring_pair {
	char name[RING_NAME_MAX];
	unsigned nq;
	unsigned size;  /* size= key, 0 = from the descriptor counts */
	struct {
		struct tide_port *port; /* NULL: this end is not open */
		bool started;
	} end[2];
	/* rings[d][q] carries what end d sends on queue q to end !d's Rx queue q. */
	struct tide_ring *rings[2][RING_MAX_QUEUES];
	struct ring_pair *next;
};

struct ring_port {
	struct ring_pair *pair;
	unsigned side;
};

struct ring_rxq {
	struct tide_rxq pub; /* first: the handle */
	struct tide_ring *ring;
	unsigned nb_desc;
};

struct ring_txq {
	struct tide_txq pub; /* first: the handle */
	struct txc txc;
	struct tide_ring *ring;
	unsigned nb_desc;
};

static pthread_mutex_t pairs_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ring_pair *pairs;

/* ---- bursts ---- */

static uint16_t rx_burst(struct tide_rxq *pub, struct tide_mbuf **pkts, uint16_t n)
{
	struct ring_rxq *q = (struct ring_rxq *)pub;
	const uint16_t port = (uint16_t)pub->port->id;
	unsigned k = tide_ring_dequeue_burst(q->ring, (void **)pkts, n, NULL);
	uint64_t bytes = 0;

	for (unsigned i = 0; i < k; i++) {
		pkts[i]->port = port;
		bytes += pkts[i]->pkt_len;
	}
	tide_stat_burst(&pub->stats, k, bytes);
	return (uint16_t)k;
}

static uint16_t tx_burst(struct tide_txq *pub, struct tide_mbuf **pkts, uint16_t n)
{
	struct ring_txq *q = (struct ring_txq *)pub;
	struct txc *t = &q->txc;
	unsigned room = txc_room_sync(t, n);
	uint64_t bytes = 0;
	unsigned k;

	if (n > room)
		n = (uint16_t)room;
	/* Lengths are read before the enqueue: afterwards the packets belong to the peer. */
	for (uint16_t i = 0; i < n; i++)
		bytes += pkts[i]->pkt_len;
	k = tide_ring_enqueue_burst(q->ring, (void *const *)pkts, n, NULL);
	if (tide_unlikely(k < n))
		for (unsigned i = k; i < n; i++)
			bytes -= pkts[i]->pkt_len; /* not taken: still the caller's */
	if (k) {
		txc_commit_done(t, k);
		txc_count_released(t, k); /* the peer's now */
		tide_stat_burst(&pub->stats, k, bytes);
	}
	return (uint16_t)k;
}

/* ---- pairs (pairs_lock held) ---- */

static struct ring_pair *pair_find(const char *name)
{
	for (struct ring_pair *rp = pairs; rp; rp = rp->next)
		if (strcmp(rp->name, name) == 0)
			return rp;
	return NULL;
}

static void ring_drain(struct tide_ring *r)
{
	struct tide_mbuf *m[64];
	unsigned k;

	if (r == NULL)
		return;
	while ((k = tide_ring_dequeue_burst(r, (void **)m, 64, NULL)) > 0)
		tide_mbuf_free_bulk(m, k);
}

static void pair_free(struct ring_pair *rp)
{
	struct ring_pair **pp = &pairs;

	while (*pp != rp)
		pp = &(*pp)->next;
	*pp = rp->next;
	for (unsigned d = 0; d < 2; d++)
		for (unsigned q = 0; q < RING_MAX_QUEUES; q++) {
			ring_drain(rp->rings[d][q]);
			tide_ring_free(rp->rings[d][q]);
		}
	free(rp);
}

/*
 * Make sure rings[d][q] exists with room for what the sender's Tx and the receiver's Rx
 * were set up with. A ring is only replaced while neither end is started (a started end
 * holds a pointer to it); it is empty then, since stopping drains it.
 */
static int pair_ring(struct ring_pair *rp, unsigned d, unsigned q)
{
	const struct tide_port *src = rp->end[d].port, *dst = rp->end[!d].port;
	const struct ring_txq *tq = src ? (const struct ring_txq *)src->txq[q] : NULL;
	const struct ring_rxq *rq = dst ? (const struct ring_rxq *)dst->rxq[q] : NULL;
	unsigned want = rp->size, tx = tq ? tq->nb_desc : 0, rx = rq ? rq->nb_desc : 0;
	struct tide_ring *r = rp->rings[d][q];
	char name[RING_NAME_MAX + 16];
	int rc;

	if (want == 0)
		want = tx > rx ? tx : rx;
	if (r != NULL && (tide_ring_capacity(r) >= want || rp->end[0].started ||
			  rp->end[1].started))
		return 0;
	snprintf(name, sizeof(name), "%s.%u>%u.%u", rp->name, d, !d, q);
	rc = tide_ring_create(name, want, TIDE_RING_SP_ENQ | TIDE_RING_SC_DEQ,
			      &rp->rings[d][q]);
	if (rc < 0) {
		rp->rings[d][q] = r;
		return rc;
	}
	ring_drain(r);
	tide_ring_free(r);
	return 0;
}

/* ---- control ---- */

static struct ring_port *rport(const struct tide_port *p)
{
	return p->priv;
}

static int ring_rxq_setup(struct tide_port *p, unsigned qid, unsigned nb_desc,
			  struct tide_pool *pool, const struct tide_rxq_conf *conf,
			  struct tide_rxq **out)
{
	struct ring_rxq *q = calloc(1, sizeof(*q));

	(void)p;
	(void)qid;
	(void)pool; /* buffers come from the peer's Tx */
	(void)conf;
	if (q == NULL)
		return -ENOMEM;
	q->nb_desc = nb_desc;
	*out = &q->pub;
	return 0;
}

static int ring_txq_setup(struct tide_port *p, unsigned qid, unsigned nb_desc,
			  const struct tide_txq_conf *conf, struct tide_txq **out)
{
	struct ring_txq *q = calloc(1, sizeof(*q));
	struct txc_drv d = {.slots_empty = true, .count_mode = true, .advance = txc_advance_none_ool};
	int rc;

	if (q == NULL)
		return -ENOMEM;
	d.drv = q;
	rc = txc_init(&q->txc, &q->pub, nb_desc, conf, &d);
	if (rc < 0) {
		free(q);
		return rc;
	}
	(void)p;
	(void)qid;
	q->nb_desc = nb_desc;
	*out = &q->pub;
	return 0;
}

static void ring_rxq_release(struct tide_rxq *pub)
{
	free(pub);
}

static int ring_start(struct tide_port *p)
{
	struct ring_port *rp = rport(p);
	struct ring_pair *pair = rp->pair;
	unsigned s = rp->side;
	int rc = 0;

	pthread_mutex_lock(&pairs_lock);
	for (unsigned i = 0; i < p->nb_txq && rc == 0; i++)
		rc = pair_ring(pair, s, i);
	for (unsigned i = 0; i < p->nb_rxq && rc == 0; i++)
		rc = pair_ring(pair, !s, i);
	if (rc == 0) {
		for (unsigned i = 0; i < p->nb_txq; i++) {
			struct ring_txq *q = (struct ring_txq *)p->txq[i];

			q->ring = pair->rings[s][i];
			q->pub.burst = tx_burst;
		}
		for (unsigned i = 0; i < p->nb_rxq; i++) {
			struct ring_rxq *q = (struct ring_rxq *)p->rxq[i];

			q->ring = pair->rings[!s][i];
			q->pub.burst = rx_burst;
		}
		pair->end[s].started = true;
	}
	pthread_mutex_unlock(&pairs_lock);
	return rc;
}

static void ring_stop(struct tide_port *p)
{
	struct ring_port *rp = rport(p);
	struct ring_pair *pair = rp->pair;
	unsigned s = rp->side;

	pthread_mutex_lock(&pairs_lock);
	pair->end[s].started = false;
	for (unsigned i = 0; i < RING_MAX_QUEUES; i++) {
		/* Our Rx rings: only we consume them, and we are stopped. */
		ring_drain(pair->rings[!s][i]);
		/* Our Tx rings: nobody consumes them while the peer is stopped. */
		if (!pair->end[!s].started)
			ring_drain(pair->rings[s][i]);
	}
	pthread_mutex_unlock(&pairs_lock);
	for (unsigned i = 0; i < p->nb_txq; i++)
		if (p->txq[i])
			txc_release_all(&((struct ring_txq *)p->txq[i])->txc);
}

static void ring_close(struct tide_port *p)
{
	struct ring_port *rp = rport(p);
	struct ring_pair *pair = rp ? rp->pair : NULL;

	if (pair == NULL)
		return;
	pthread_mutex_lock(&pairs_lock);
	pair->end[rp->side].port = NULL;
	if (pair->end[!rp->side].port == NULL)
		pair_free(pair);
	pthread_mutex_unlock(&pairs_lock);
}

static int ring_link_get(struct tide_port *p, struct tide_link *out)
{
	struct ring_port *rp = rport(p);

	pthread_mutex_lock(&pairs_lock);
	out->up = rp->pair->end[0].started && rp->pair->end[1].started;
	pthread_mutex_unlock(&pairs_lock);
	out->speed_mbps = 0;
	return 0;
}

/* Find or create the pair and claim end @side; pairs_lock held. */
static int pair_claim(const char *name, unsigned side, uint64_t nq, uint64_t size,
		      bool nq_given, bool size_given, struct ring_pair **out)
{
	struct ring_pair *rp = pair_find(name);

	if (rp == NULL) {
		rp = calloc(1, sizeof(*rp));
		if (rp == NULL)
			return -ENOMEM;
		snprintf(rp->name, sizeof(rp->name), "%s", name);
		rp->nq = (unsigned)nq;
		rp->size = (unsigned)size;
		rp->next = pairs;
		pairs = rp;
	} else if (rp->end[side].port != NULL) {
		TIDE_LOG_ERR_("ring", "name=%s,peer=%s: this end is already open", name,
			      side ? "yes" : "no");
		return -EBUSY;
	} else if ((nq_given && nq != rp->nq) || (size_given && size != rp->size)) {
		TIDE_LOG_ERR_("ring", "name=%s: queues=%u,size=%u given, but the pair has queues=%u,size=%u",
			      name, (unsigned)nq, (unsigned)size, rp->nq, rp->size);
		return -EINVAL;
	}
	*out = rp;
	return 0;
}

static int ring_open(struct tide_kvargs *kv, struct tide_port **ports, unsigned max)
{
	const char *name = tide_kvargs_get(kv, "name");
	bool nq_given = tide_kvargs_get(kv, "queues") != NULL;
	bool size_given = tide_kvargs_get(kv, "size") != NULL;
	struct ring_pair *pair;
	struct ring_port *rp;
	struct tide_port *p;
	char pname[RING_NAME_MAX + 16];
	uint64_t nq, size;
	bool peer;
	int rc;

	(void)max;
	if (tide_kvargs_uint(kv, "queues", 1, 1, RING_MAX_QUEUES, &nq) ||
	    tide_kvargs_uint(kv, "size", 0, 0, 65536, &size) ||
	    tide_kvargs_bool(kv, "peer", false, &peer))
		return -EINVAL;
	if (name == NULL || name[0] == '\0' || strlen(name) >= RING_NAME_MAX) {
		TIDE_LOG_ERR_("ring", "name=%s: a pair name of 1..%d characters is required",
			      name ? name : "(missing)", RING_NAME_MAX - 1);
		return -EINVAL;
	}
	if (size != 0 && (!tide_is_pow2((unsigned)size) || size < 64)) {
		TIDE_LOG_ERR_("ring", "size=%u: must be a power of two in 64..65536 (or 0)",
			      (unsigned)size);
		return -EINVAL;
	}
	snprintf(pname, sizeof(pname), "ring_%s.%u", name, peer);
	rc = tide_port_alloc(&tide_driver_ring, pname, sizeof(*rp), &p);
	if (rc < 0)
		return rc;
	pthread_mutex_lock(&pairs_lock);
	rc = pair_claim(name, peer, nq, size, nq_given, size_given, &pair);
	if (rc == 0) {
		pair->end[peer].port = p;
		rp = p->priv;
		rp->pair = pair;
		rp->side = peer;
	}
	pthread_mutex_unlock(&pairs_lock);
	if (rc < 0) {
		tide_port_free_unregistered(p);
		return rc;
	}
	p->info.max_rxq = pair->nq;
	p->info.max_txq = pair->nq;
	p->info.count_completion = 1;
	p->info.mac[0] = 0x02;
	p->info.mac[3] = 0x52; /* 'R' */
	p->info.mac[5] = (uint8_t)peer;
	ports[0] = p;
	return 1;
}

const struct tide_driver tide_driver_ring = {
	.name = "ring",
	.keys = "name, peer, queues, size",
	.open = ring_open,
	.rxq_setup = ring_rxq_setup,
	.txq_setup = ring_txq_setup,
	.rxq_release = ring_rxq_release,
	.txq_release = txc_txq_release,
	.start = ring_start,
	.stop = ring_stop,
	.close = ring_close,
	.mtu_set = tide_port_mtu_set_keep,
	.link_get = ring_link_get,
};
