/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * null driver: no device at all, so what a burst costs here is the cost of the burst API,
 * the pool and the Tx release path alone (the counterpart of DPDK's net_null).
 *
 * Spec: null:size=64,queues=1,fill=no,tx=free
 *   size    bytes per received packet (0..65535; 0 = empty packets); checked against the
 *           pool's data room at Rx queue setup
 *   queues  Rx and Tx queues the port offers (1..16)
 *   fill    yes: write an Ethernet/IPv4/UDP frame (cut or zero-padded to size) into every
 *           received packet; no (default): lengths only, the data is left as it is
 *   tx      free (default): Tx releases each burst at once through the queue's txfree
 *           policy, as DPDK's net_null frees what it is given; ring: Tx puts the packets in
 *           the engine's slots and reports them completed at once (count mode), and the next
 *           burst that runs short of slots releases them, exactly as a device completion
 *           would (exercises the engine: rs buckets, done_cleanup, 1024 buffers held)
 *
 * Rx hands out freshly allocated mbufs: one bulk get per burst, all or nothing (an empty
 * pool is one nombuf and a burst of 0). Tx never refuses a packet (tx=ring: the ring always
 * has at least free_thresh slots after reclaim).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inline.h"
#include "driver.h"
#include "log.h"
#include "txc.h"

#define NULL_MAX_QUEUES 16
#define NULL_HDR_LEN 42 /* Ethernet + IPv4 + UDP */

extern const struct tide_driver tide_driver_null;

struct null_port {
	unsigned size;
	bool fill;
	bool tx_ring; /* tx=ring */
	uint8_t *frame; /* fill=yes: the size-byte frame copied into every packet */
};

struct null_rxq {
	struct tide_rxq pub; /* first: the handle */
	struct tide_pool *pool;
	struct tide_mbuf__rx_tmpl tmpl; /* every packet's header, second half */
	uint16_t size;
	const uint8_t *frame;
};

struct null_txq {
	struct tide_txq pub; /* first: the handle */
	struct txc txc;
};

/* ---- Rx ---- */

TIDE_ALWAYS_INLINE uint16_t
rx_burst(struct tide_rxq *pub, struct tide_mbuf **pkts, uint16_t n, const bool fill)
{
	struct null_rxq *q = (struct null_rxq *)pub;
	/* In registers: the stores below could alias q under -fno-strict-aliasing. */
	const struct tide_mbuf__rx_regs tmpl = tide_mbuf__rx_tmpl_load(&q->tmpl);

	if (n == 0)
		return 0;
	if (tide_pool_get_bulk(q->pool, (void **)pkts, n) < 0) {
		tide_stat_add(&pub->stats.nombuf, 1);
		return 0;
	}
	for (uint16_t i = 0; i < n; i++) {
		struct tide_mbuf *m = pkts[i];

		/* The first half (buf_addr, iova, pool, next == NULL) is the pool state. */
		tide_mbuf__rx_tmpl_write(m, tmpl);
		if (fill)
			memcpy(tide_mbuf_mtod(m, void *), q->frame, q->size);
	}
	tide_stat_burst(&pub->stats, n, (uint64_t)n * q->size);
	return n;
}

static uint16_t rx_plain(struct tide_rxq *q, struct tide_mbuf **pkts, uint16_t n)
{
	return rx_burst(q, pkts, n, false);
}

static uint16_t rx_fill(struct tide_rxq *q, struct tide_mbuf **pkts, uint16_t n)
{
	return rx_burst(q, pkts, n, true);
}

/* ---- Tx ---- */

/* tx=free: count the burst and release it now (a copy-mode driver's way, txc.h). */
static uint16_t tx_free(struct tide_txq *pub, struct tide_mbuf **pkts, uint16_t n)
{
	struct null_txq *q = (struct null_txq *)pub;
	uint64_t bytes = 0;
	uint16_t i = 0;

	for (; i + 4 <= n; i += 4) /* four at a time: one loop test per four packets */
		bytes += (uint64_t)pkts[i]->pkt_len + pkts[i + 1]->pkt_len + pkts[i + 2]->pkt_len +
			 pkts[i + 3]->pkt_len;
	for (; i < n; i++) /* the last n % 4 */
		bytes += pkts[i]->pkt_len;
	tide_stat_burst(&pub->stats, n, bytes);
	txc_release_burst(&q->txc, pkts, n);
	return n;
}

/* tx=ring: through the engine's slots, completed at once, released later. */
static uint16_t tx_burst(struct tide_txq *pub, struct tide_mbuf **pkts, uint16_t n)
{
	struct null_txq *q = (struct null_txq *)pub;
	struct txc *t = &q->txc;
	unsigned room = txc_room_sync(t, n);
	uint32_t first = t->tail;
	uint64_t bytes = 0;
	struct txc_burst b;

	if (n > room)
		n = (uint16_t)room;
	txc_burst_begin(t, &b);
	for (uint16_t i = 0; i < n; i++) {
		txc_burst_fill(&b, first + i, pkts[i]);
		bytes += pkts[i]->pkt_len;
	}
	txc_burst_end(t, &b);
	txc_commit_done(t, n);
	tide_stat_burst(&pub->stats, n, bytes);
	return n;
}

/* ---- control ---- */

static int null_rxq_setup(struct tide_port *p, unsigned qid, unsigned nb_desc,
			  struct tide_pool *pool, const struct tide_rxq_conf *conf,
			  struct tide_rxq **out)
{
	struct null_port *np = p->priv;
	struct null_rxq *q;

	(void)nb_desc;
	(void)conf;
	if (np->size > tide_pktpool_data_room(pool)) {
		TIDE_LOG_ERR_(p->name, "Rx queue %u: size=%u exceeds the data room %u of pool %s",
			      qid, np->size, tide_pktpool_data_room(pool), tide_pool_name(pool));
		return -EINVAL;
	}
	q = calloc(1, sizeof(*q));
	if (q == NULL)
		return -ENOMEM;
	q->pool = pool;
	tide_mbuf__rx_tmpl_init(&q->tmpl, pool, (uint16_t)p->id, (uint16_t)np->size);
	q->size = (uint16_t)np->size;
	q->frame = np->frame;
	/* No refill ring: buffers come straight from the pool, so nothing to recycle into. */
	q->pub.refill = NULL;
	*out = &q->pub;
	return 0;
}

static int null_txq_setup(struct tide_port *p, unsigned qid, unsigned nb_desc,
			  const struct tide_txq_conf *conf, struct tide_txq **out)
{
	struct null_txq *q = calloc(1, sizeof(*q));
	struct txc_drv d = {.count_mode = true, .advance = txc_advance_none_ool};
	int rc;

	(void)p;
	(void)qid;
	if (q == NULL)
		return -ENOMEM;
	d.drv = q;
	rc = txc_init(&q->txc, &q->pub, nb_desc, conf, &d);
	if (rc < 0) {
		free(q);
		return rc;
	}
	*out = &q->pub;
	return 0;
}

static void null_rxq_release(struct tide_rxq *q)
{
	free(q);
}

static int null_start(struct tide_port *p)
{
	struct null_port *np = p->priv;

	for (unsigned i = 0; i < p->nb_rxq; i++)
		p->rxq[i]->burst = np->fill ? rx_fill : rx_plain;
	for (unsigned i = 0; i < p->nb_txq; i++)
		p->txq[i]->burst = np->tx_ring ? tx_burst : tx_free;
	return 0;
}

static void null_stop(struct tide_port *p)
{
	/* Rx holds nothing; Tx slots may still hold completed, unreleased buffers. */
	for (unsigned i = 0; i < p->nb_txq; i++)
		if (p->txq[i])
			txc_release_all(&((struct null_txq *)p->txq[i])->txc);
}

static void null_close(struct tide_port *p)
{
	struct null_port *np = p->priv;

	if (np)
		free(np->frame);
}

static uint16_t csum16(const uint8_t *b, unsigned len)
{
	uint32_t s = 0;

	for (unsigned i = 0; i + 1 < len; i += 2)
		s += (uint32_t)b[i] << 8 | b[i + 1];
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

/* The fill=yes frame: UDP 10.0.0.1:9 -> 10.0.0.2:9 from the port's MAC, zero payload. */
static int build_frame(struct null_port *np, const uint8_t mac[6])
{
	uint8_t h[NULL_HDR_LEN] = {0x02, 0, 0, 0, 0, 0x01};
	unsigned l3 = np->size > 14 ? np->size - 14 : 0;
	unsigned l4 = np->size > 34 ? np->size - 34 : 0;
	uint16_t c;

	np->frame = calloc(1, np->size ? np->size : 1);
	if (np->frame == NULL)
		return -ENOMEM;
	memcpy(h + 6, mac, 6);
	h[12] = 0x08;				/* IPv4 */
	h[14] = 0x45;
	h[16] = (uint8_t)(l3 >> 8);
	h[17] = (uint8_t)l3;
	h[22] = 64;				/* TTL */
	h[23] = 17;				/* UDP */
	memcpy(h + 26, (const uint8_t[8]){10, 0, 0, 1, 10, 0, 0, 2}, 8);
	c = csum16(h + 14, 20);
	h[24] = (uint8_t)(c >> 8);
	h[25] = (uint8_t)c;
	h[35] = 9;				/* UDP ports 9 -> 9 */
	h[37] = 9;
	h[38] = (uint8_t)(l4 >> 8);
	h[39] = (uint8_t)l4;
	memcpy(np->frame, h, np->size < NULL_HDR_LEN ? np->size : NULL_HDR_LEN);
	return 0;
}

static int null_open(struct tide_kvargs *kv, struct tide_port **ports, unsigned max)
{
	static unsigned seq;
	static const char *const tx_modes[] = {"free", "ring", NULL};
	uint64_t size, nq;
	unsigned tx;
	bool fill;
	struct tide_port *p;
	struct null_port *np;
	char name[32];
	int rc;

	(void)max;
	if (tide_kvargs_uint(kv, "size", 64, 0, UINT16_MAX, &size) ||
	    tide_kvargs_uint(kv, "queues", 1, 1, NULL_MAX_QUEUES, &nq) ||
	    tide_kvargs_bool(kv, "fill", false, &fill) ||
	    tide_kvargs_choice(kv, "tx", tx_modes, 0, &tx))
		return -EINVAL;
	snprintf(name, sizeof(name), "null%u", seq);
	rc = tide_port_alloc(&tide_driver_null, name, sizeof(*np), &p);
	if (rc < 0)
		return rc;
	np = p->priv;
	np->size = (unsigned)size;
	np->fill = fill;
	np->tx_ring = tx == 1;
	p->info.max_rxq = (unsigned)nq;
	p->info.max_txq = (unsigned)nq;
	p->info.count_completion = 1;
	p->info.mac[0] = 0x02;
	p->info.mac[3] = 0x4e; /* 'N' */
	p->info.mac[5] = (uint8_t)seq;
	if (fill && (rc = build_frame(np, p->info.mac)) < 0) {
		tide_port_free_unregistered(p);
		return rc;
	}
	seq++;
	ports[0] = p;
	return 1;
}

static int null_link_get(struct tide_port *p, struct tide_link *out)
{
	out->up = p->started;
	out->speed_mbps = 100000;
	return 0;
}

const struct tide_driver tide_driver_null = {
	.name = "null",
	.keys = "size, queues, fill, tx",
	.open = null_open,
	.rxq_setup = null_rxq_setup,
	.txq_setup = null_txq_setup,
	.rxq_release = null_rxq_release,
	.txq_release = txc_txq_release,
	.start = null_start,
	.stop = null_stop,
	.close = null_close,
	.mtu_set = tide_port_mtu_set_keep,
	.link_get = null_link_get,
};
