/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The simnic device model: what the hardware would do, kept apart from the driver.
 *
 * Tx: fetch descriptors from head up to the doorbell, "DMA-read" each packet (deliver it to
 * the wire), write DD back on RS descriptors (or the head index in wb=head mode). A run of
 * `ondie` descriptors without RS overflows the on-die descriptor window: the queue hangs,
 * and the model counts it instead of stalling silently.
 * Rx: fill posted descriptors with packets from the wire ("DMA-write"), write back length,
 * hash and DD|EOP.
 *
 * It runs either on its own thread (mode=thread) or stepped from the driver's burst calls
 * (mode=inline).
 */
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "osutil.h"
#include "qs.h"
#include "simnic.h"

/* ---- packets ---- */

#define ETH_HLEN 14
#define IP_HLEN 20
#define UDP_HLEN 8
#define SEQ_OFF (ETH_HLEN + IP_HLEN + UDP_HLEN)

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static uint16_t ip_csum(const uint8_t *h)
{
	uint32_t sum = 0;

	for (unsigned i = 0; i < IP_HLEN; i += 2)
		sum += (uint32_t)(h[i] << 8 | h[i + 1]);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

uint32_t simnic_flow_hash(const uint8_t *pkt, unsigned len)
{
	uint64_t x;
	uint32_t a, b, ports = 0;

	if (len < ETH_HLEN + IP_HLEN || pkt[12] != 0x08 || pkt[13] != 0x00)
		return 0;
	memcpy(&a, pkt + ETH_HLEN + 12, 4);
	memcpy(&b, pkt + ETH_HLEN + 16, 4);
	if (len >= ETH_HLEN + IP_HLEN + 4 && (pkt[ETH_HLEN + 9] == 17 || pkt[ETH_HLEN + 9] == 6))
		memcpy(&ports, pkt + ETH_HLEN + IP_HLEN, 4);
	x = ((uint64_t)a << 32 | b) ^ ((uint64_t)ports * 0x9e3779b97f4a7c15ull);
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return (uint32_t)x;
}

unsigned simnic_gen_builtin(const struct simnic_dev *d, unsigned p, unsigned qid, uint64_t seq,
			    uint8_t *buf, unsigned room, uint32_t *rss)
{
	unsigned len = d->pkt_size < room ? d->pkt_size : room;
	uint32_t flow = (uint32_t)((seq * d->nqueues + qid) % d->flows);
	unsigned dst_port = (p + 1) % d->nports;
	uint8_t *ip = buf + ETH_HLEN, *udp = ip + IP_HLEN;

	memset(buf, 0, len);
	/* Ethernet: to this port's MAC, from a MAC of the wire. */
	buf[0] = 0x02;
	buf[5] = (uint8_t)p;
	buf[6] = 0x02;
	buf[10] = 0x01;
	buf[11] = (uint8_t)p;
	buf[12] = 0x08;
	/* IPv4, UDP, TTL 64: 192.168.<p>.<flow hi> -> 10.<next port>.<flow>. */
	ip[0] = 0x45;
	put16(ip + 2, (uint16_t)(len - ETH_HLEN));
	ip[8] = 64;
	ip[9] = 17;
	ip[12] = 192;
	ip[13] = 168;
	ip[14] = (uint8_t)p;
	ip[15] = (uint8_t)(flow >> 16);
	ip[16] = 10;
	ip[17] = (uint8_t)dst_port;
	ip[18] = (uint8_t)(flow >> 8);
	ip[19] = (uint8_t)flow;
	put16(ip + 10, ip_csum(ip));
	put16(udp, (uint16_t)(1024 + (flow >> 16)));
	put16(udp + 2, (uint16_t)(5000 + qid));
	put16(udp + 4, (uint16_t)(len - ETH_HLEN - IP_HLEN));
	if (len >= SEQ_OFF + 8)
		memcpy(buf + SEQ_OFF, &seq, 8);
	*rss = simnic_flow_hash(buf, len);
	return len;
}

/* ---- Rx side ---- */

/* Store one packet in the next posted descriptor of @q. Returns 0, or -1 when dropped.
 * Inline mode: the caller holds the queue's device lock. */
static int rx_store_locked(struct simnic_rxq *q, const uint8_t *data, unsigned len,
			   uint32_t rss)
{
	struct simnic_rx_desc *d;
	unsigned room;

	/* Pairs with the driver's release store of the tail: the posted addresses are visible. */
	if (!__atomic_load_n(&q->hw.enabled, __ATOMIC_ACQUIRE) ||
	    q->hw.head == __atomic_load_n(&q->tail, __ATOMIC_ACQUIRE)) {
		__atomic_store_n(&q->hw.missed, q->hw.missed + 1, __ATOMIC_RELAXED);
		return -1;
	}
	d = &q->ring[q->hw.head & q->mask];
	room = q->rxr.pool->elt_size - (unsigned)sizeof(struct tide_mbuf) - q->headroom;
	if (len > room) {
		__atomic_store_n(&q->hw.missed, q->hw.missed + 1, __ATOMIC_RELAXED);
		return -1;
	}
	memcpy((void *)(uintptr_t)d->addr, data, len);
	d->len = (uint16_t)len;
	d->rss = rss;
	/* Pairs with the driver's acquire load of status: data and length first. */
	__atomic_store_n(&d->status, SIMNIC_RXD_STAT_DD | SIMNIC_RXD_STAT_EOP, __ATOMIC_RELEASE);
	q->hw.head++;
	return 0;
}

static unsigned rate_allow(struct simnic_dev *d, struct simnic_rxq *q, unsigned budget)
{
	uint64_t now, interval = 1000000000ull / d->rate, n;

	if (interval == 0)
		return budget;
	now = os_now_ns();
	if (now < q->hw.next_ns)
		return 0;
	if (q->hw.next_ns + 1000000ull < now)
		q->hw.next_ns = now - 1000000ull; /* do not bank more than 1 ms of credit */
	n = (now - q->hw.next_ns) / interval + 1;
	if (n > budget)
		n = budget;
	q->hw.next_ns += n * interval;
	return (unsigned)n;
}

/*
 * Take up to @want packets from the port's count= budget. Atomic: in inline mode the queues
 * of one port may be stepped from several threads.
 */
static unsigned gen_reserve(struct simnic_port *sp, unsigned want)
{
	uint64_t left = __atomic_load_n(&sp->hw.gen_budget, __ATOMIC_RELAXED);

	do {
		if (left == UINT64_MAX)
			return want; /* no limit */
		if (want > left)
			want = (unsigned)left;
	} while (want != 0 &&
		 !__atomic_compare_exchange_n(&sp->hw.gen_budget, &left, left - want, 0,
					      __ATOMIC_RELAXED, __ATOMIC_RELAXED));
	return want;
}

unsigned simnic_hw_rx_step(struct simnic_rxq *q, unsigned budget)
{
	struct simnic_port *sp = q->sp;
	struct simnic_dev *d = sp->dev;
	uint32_t tail;

	if (d->wire != SIMNIC_WIRE_GEN || !__atomic_load_n(&q->hw.enabled, __ATOMIC_ACQUIRE))
		return 0;
	if (d->rate)
		budget = rate_allow(d, q, budget);
	/* Pairs with the driver's release store of the tail. */
	tail = __atomic_load_n(&q->tail, __ATOMIC_ACQUIRE);
	if (budget > tail - q->hw.head)
		budget = tail - q->hw.head;
	budget = gen_reserve(sp, budget);
	for (unsigned i = 0; i < budget; i++) {
		struct simnic_rx_desc *desc = &q->ring[q->hw.head & q->mask];
		uint8_t *buf = (uint8_t *)(uintptr_t)desc->addr;
		unsigned room = q->rxr.pool->elt_size - (unsigned)sizeof(struct tide_mbuf) - q->headroom;
		uint32_t rss;
		unsigned len;

		if (sp->gen) {
			len = sp->gen(sp->gen_arg, sp->idx, q->pub.qid, q->hw.seq, buf, room);
			rss = simnic_flow_hash(buf, len);
		} else {
			len = simnic_gen_builtin(d, sp->idx, q->pub.qid, q->hw.seq, buf, room, &rss);
		}
		q->hw.seq++;
		desc->len = (uint16_t)len;
		desc->rss = rss;
		__atomic_store_n(&desc->status, SIMNIC_RXD_STAT_DD | SIMNIC_RXD_STAT_EOP,
				 __ATOMIC_RELEASE);
		q->hw.head++;
	}
	__atomic_fetch_add(&sp->hw.gen_packets, budget, __ATOMIC_RELAXED);
	return budget;
}

/*
 * A real NIC serialises the DMA writes into one Rx ring; in inline mode the Tx steps of
 * several threads (one per Tx queue feeding this Rx queue) play that part, so they take
 * turns. The device thread (mode=thread) is alone and takes no lock.
 */
static int rx_store(struct simnic_rxq *q, const uint8_t *data, unsigned len, uint32_t rss)
{
	bool inl = q->sp->dev->mode == SIMNIC_MODE_INLINE;
	int rc;

	/* Acquire: pairs with the release below of the previous holder (its descriptor writes
	 * and head move are visible). */
	if (inl)
		while (__atomic_exchange_n(&q->hw.lock, 1, __ATOMIC_ACQUIRE) != 0)
			while (__atomic_load_n(&q->hw.lock, __ATOMIC_RELAXED) != 0)
				tide_pause();
	rc = rx_store_locked(q, data, len, rss);
	if (inl)
		__atomic_store_n(&q->hw.lock, 0, __ATOMIC_RELEASE);
	return rc;
}

/* ---- Tx side ---- */

static void deliver(struct simnic_txq *q, const uint8_t *data, unsigned len)
{
	struct simnic_port *sp = q->sp, *dst;
	struct simnic_dev *d = sp->dev;
	struct simnic_rxq *rq;
	uint32_t rss;
	unsigned nrx;

	switch (d->wire) {
	case SIMNIC_WIRE_GEN:
		/* The sink reads the packet, as a NIC's DMA would. */
		if (sp->verify && sp->verify(sp->verify_arg, sp->idx, data, len) != 0)
			__atomic_fetch_add(&sp->hw.verify_failed, 1, __ATOMIC_RELAXED);
		else
			(void)*(const volatile uint8_t *)data;
		return; /* counted by the caller, once per step */
	case SIMNIC_WIRE_LOOP:
		dst = sp;
		break;
	case SIMNIC_WIRE_CROSS:
	default:
		dst = (sp->idx ^ 1u) < d->nports
			      ? __atomic_load_n(&d->ports[sp->idx ^ 1u], __ATOMIC_ACQUIRE)
			      : NULL;
		break;
	}
	/* nb_rxq: the control thread may reconfigure the peer port while this one sends. */
	nrx = dst ? __atomic_load_n(&dst->nb_rxq, __ATOMIC_RELAXED) : 0;
	if (nrx == 0)
		return;
	rss = simnic_flow_hash(data, len);
	rq = __atomic_load_n(&dst->rxq[rss % nrx], __ATOMIC_ACQUIRE);
	if (rq != NULL)
		rx_store(rq, data, len, rss);
}

unsigned simnic_hw_tx_step(struct simnic_txq *q, unsigned budget)
{
	uint32_t head, start, tail, wb = 0;
	uint64_t bytes = 0;
	bool wrote = false;
	unsigned ondie = q->sp->dev->ondie;

	/* Device state is only read once the queue is enabled: stop resets it while the
	 * queue is disabled and the thread quiet. */
	if (!__atomic_load_n(&q->hw.enabled, __ATOMIC_ACQUIRE) || q->hw.hung)
		return 0;
	head = start = q->hw.head;
	/* Pairs with the driver's release store of the doorbell: descriptors are visible. */
	tail = __atomic_load_n(&q->tail, __ATOMIC_ACQUIRE);
	while (head != tail && budget-- > 0) {
		struct simnic_tx_desc *d = &q->ring[head & q->mask];
		uint16_t cmd = d->cmd;

		deliver(q, (const uint8_t *)(uintptr_t)d->addr, d->len);
		bytes += d->len;
		head++;
		if (cmd & SIMNIC_TXD_CMD_RS) {
			q->hw.gap = 0;
			if (q->wb_head) {
				wb = head;
				wrote = true;
			} else {
				/* Pairs with the driver's acquire load in its desc_done hook. */
				__atomic_store_n(&d->status, SIMNIC_TXD_STAT_DD, __ATOMIC_RELEASE);
			}
		} else if (++q->hw.gap >= ondie) {
			q->hw.hung = true;
			__atomic_store_n(&q->hw.hangs, q->hw.hangs + 1, __ATOMIC_RELAXED);
			TIDE_LOG_ERR_("simnic",
				      "port %u txq %u: hang: %u descriptors without RS overflow the on-die window of %u",
				      q->sp->idx, q->pub.qid, q->hw.gap, ondie);
			break;
		}
	}
	q->hw.head = head;
	if (wrote)
		__atomic_store_n(&q->head_wb, wb, __ATOMIC_RELEASE);
	if (q->sp->dev->wire == SIMNIC_WIRE_GEN && head != start) {
		/* Atomic: in inline mode several threads may transmit on one port's queues. */
		__atomic_fetch_add(&q->sp->hw.sink_packets, head - start, __ATOMIC_RELAXED);
		__atomic_fetch_add(&q->sp->hw.sink_bytes, bytes, __ATOMIC_RELAXED);
	}
	return head - start;
}

/* ---- the device thread ---- */

static bool dev_step(struct simnic_dev *d)
{
	bool busy = false;

	for (unsigned p = 0; p < d->nports; p++) {
		struct simnic_port *sp = __atomic_load_n(&d->ports[p], __ATOMIC_ACQUIRE);

		if (sp == NULL)
			continue;
		for (unsigned q = 0; q < SIMNIC_MAX_QUEUES; q++) {
			struct simnic_txq *tq = __atomic_load_n(&sp->txq[q], __ATOMIC_ACQUIRE);
			struct simnic_rxq *rq = __atomic_load_n(&sp->rxq[q], __ATOMIC_ACQUIRE);

			if (tq != NULL)
				busy |= simnic_hw_tx_step(tq, SIMNIC_BUDGET) != 0;
			if (rq != NULL)
				busy |= simnic_hw_rx_step(rq, SIMNIC_BUDGET) != 0;
		}
	}
	return busy;
}

static void *dev_main(void *arg)
{
	struct simnic_dev *d = arg;

	while (__atomic_load_n(&d->running, __ATOMIC_ACQUIRE)) {
		/* Pairs with simnic_hw_quiesce(): a new epoch means the last step finished. */
		__atomic_store_n(&d->epoch, d->epoch + 1, __ATOMIC_RELEASE);
		__atomic_store_n(&d->polls, d->polls + 1, __ATOMIC_RELAXED);
		if (!dev_step(d)) {
			__atomic_store_n(&d->idle, d->idle + 1, __ATOMIC_RELAXED);
			tide_pause();
		}
	}
	__atomic_store_n(&d->epoch, d->epoch + 1, __ATOMIC_RELEASE);
	return NULL;
}

int simnic_hw_thread_start(struct simnic_dev *d)
{
	pthread_attr_t attr;
	cpu_set_t set;
	int rc;

	__atomic_store_n(&d->running, true, __ATOMIC_RELEASE);
	pthread_attr_init(&attr);
	if (d->cpu >= 0) {
		CPU_ZERO(&set);
		CPU_SET(d->cpu, &set);
		pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
	}
	rc = pthread_create(&d->thread, &attr, dev_main, d);
	pthread_attr_destroy(&attr);
	if (rc != 0) {
		d->running = false;
		TIDE_LOG_ERR_("simnic", "cannot start the device thread: %s", strerror(rc));
		return -rc;
	}
	return 0;
}

void simnic_hw_thread_stop(struct simnic_dev *d)
{
	__atomic_store_n(&d->running, false, __ATOMIC_RELEASE);
	pthread_join(d->thread, NULL);
}

void simnic_hw_quiesce(struct simnic_dev *d)
{
	uint64_t e;

	if (d->mode == SIMNIC_MODE_INLINE) {
		qs_synchronize();
		return;
	}
	if (!__atomic_load_n(&d->running, __ATOMIC_ACQUIRE))
		return;
	e = __atomic_load_n(&d->epoch, __ATOMIC_ACQUIRE);
	while (__atomic_load_n(&d->epoch, __ATOMIC_ACQUIRE) < e + 2)
		sched_yield();
}
