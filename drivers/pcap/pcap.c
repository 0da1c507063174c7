/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pcap driver: Rx replays a capture file, Tx writes a capture file (libpcap).
 *
 * Spec: pcap:rx=in.pcap,tx=out.pcap,loop=1,pace=no
 *   rx    capture to read (any link type; the bytes are handed out as they are). Checked at
 *         open: a missing or unreadable file gets its errno, a file that is not a capture or
 *         is truncated gets -EINVAL, each with a log line naming the file and the reason
 *   tx    capture to write (Ethernet link type, microsecond timestamps, snap length 65535);
 *         created (truncated) at open, flushed on stop, closed on close
 *   loop  replay the capture this many times (default 1; 0 = without end)
 *   pace  yes: hand out each packet no earlier than its capture timestamp, relative to the
 *         first packet of the pass; no (default): as fast as possible
 * Either rx or tx may be absent, not both. At most one queue each way.
 *
 * Rx: each start replays from the beginning. A packet longer than the pool's data room is
 * skipped and counted as an Rx error (no chaining). When the replay is over, Rx returns 0
 * and the link reads down. A capture found truncated while replaying (the file changed
 * since open) ends the replay with a log line and one Rx error.
 *
 * Tx: every packet of the burst is written, with the clock's time read once per burst, and
 * the burst is then released as a whole through the Tx engine (count mode, completed at
 * once, reclaimed right after the write loop: seed 003), so the queue's txfree policy
 * applies and the queue never holds a buffer between bursts.
 */
#include <errno.h>
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "driver.h"
#include "log.h"
#include "txc.h"

#define PCAP_SNAPLEN 65535

extern const struct tide_driver tide_driver_pcap;

struct pcap_port {
	char *rx_path, *tx_path;
	uint64_t loops;         /* 0: without end */
	bool pace;
	uint64_t capture_pkts;  /* packets found in the rx file at open */
	pcap_t *tx_dead;        /* the handle the dumper writes through */
	pcap_dumper_t *dumper;
};

struct pcap_rxq {
	struct tide_rxq pub; /* first: the handle */
	struct tide_pool *pool;
	uint32_t room;          /* data room of the pool's mbufs */
	struct pcap_port *pp;
	pcap_t *h;              /* open while started */
	bool eof;               /* the replay is over (written by the Rx thread, relaxed) */
	uint64_t passes;        /* passes finished */
	uint64_t pass_pkts;     /* records read in this pass */
	/* A record read but not handed out yet (not due, or no mbuf); valid until the next
	 * pcap_next_ex() on h, which is not called while it is pending. */
	bool pending;
	struct pcap_pkthdr pend_hdr;
	const u_char *pend_data;
	bool t0_set;            /* pace: wall and capture time of the pass's first packet */
	uint64_t t0_wall, t0_cap;
};

struct pcap_txq {
	struct tide_txq pub; /* first: the handle */
	struct txc txc;
	pcap_dumper_t *dumper;
	uint8_t *bounce; /* chained packets are written from here */
};

/* ---- files ---- */

static int rx_file_open(const char *who, const char *path, pcap_t **out)
{
	char err[PCAP_ERRBUF_SIZE] = "";
	FILE *fp = fopen(path, "rb");
	int rc;

	if (fp == NULL) {
		rc = -errno;
		TIDE_LOG_ERR_(who, "rx=%s: %s", path, strerror(errno));
		return rc;
	}
	*out = pcap_fopen_offline_with_tstamp_precision(fp, PCAP_TSTAMP_PRECISION_NANO, err);
	if (*out == NULL) {
		fclose(fp);
		TIDE_LOG_ERR_(who, "rx=%s: not a readable capture: %s", path, err);
		return -EINVAL;
	}
	return 0;
}

/* Read the whole capture once so that a bad file is refused at open, not mid-run. */
static int rx_file_check(struct pcap_port *pp)
{
	struct pcap_pkthdr *h;
	const u_char *d;
	pcap_t *pc;
	int rc = rx_file_open("pcap", pp->rx_path, &pc);

	if (rc < 0)
		return rc;
	while ((rc = pcap_next_ex(pc, &h, &d)) == 1)
		pp->capture_pkts++;
	if (rc != PCAP_ERROR_BREAK) {
		TIDE_LOG_ERR_("pcap", "rx=%s: bad capture after %llu packets: %s", pp->rx_path,
			      (unsigned long long)pp->capture_pkts, pcap_geterr(pc));
		pcap_close(pc);
		return -EINVAL;
	}
	pcap_close(pc);
	return 0;
}

static int tx_file_open(struct pcap_port *pp)
{
	pp->tx_dead = pcap_open_dead_with_tstamp_precision(DLT_EN10MB, PCAP_SNAPLEN,
							   PCAP_TSTAMP_PRECISION_MICRO);
	if (pp->tx_dead == NULL)
		return -ENOMEM;
	errno = 0;
	pp->dumper = pcap_dump_open(pp->tx_dead, pp->tx_path);
	if (pp->dumper == NULL) {
		int rc = errno ? -errno : -EIO;

		TIDE_LOG_ERR_("pcap", "tx=%s: cannot create: %s", pp->tx_path,
			      pcap_geterr(pp->tx_dead));
		return rc;
	}
	return 0;
}

/* ---- Rx ---- */

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void rx_set_eof(struct pcap_rxq *q)
{
	__atomic_store_n(&q->eof, true, __ATOMIC_RELAXED);
}

/*
 * pcap_next_ex() returned @rc (not a record): end of pass or a read error. Start the next
 * pass when the loop count allows. Returns true when reading may go on. Out of line: once
 * per pass.
 */
static bool rx_next_pass(struct pcap_rxq *q, int rc)
{
	struct tide_port *p = q->pub.port;

	if (rc != PCAP_ERROR_BREAK) {
		TIDE_LOG_ERR_(p->name, "rx=%s: read error, replay ends: %s", q->pp->rx_path,
			      pcap_geterr(q->h));
		tide_stat_add(&q->pub.stats.errors, 1);
		rx_set_eof(q);
		return false;
	}
	q->passes++;
	if (q->pass_pkts == 0 || (q->pp->loops != 0 && q->passes >= q->pp->loops)) {
		rx_set_eof(q);
		return false;
	}
	pcap_close(q->h);
	q->h = NULL;
	if (rx_file_open(p->name, q->pp->rx_path, &q->h) < 0) {
		tide_stat_add(&q->pub.stats.errors, 1);
		rx_set_eof(q);
		return false;
	}
	q->pass_pkts = 0;
	q->t0_set = false;
	return true;
}

static inline __attribute__((always_inline)) uint16_t
rx_burst(struct tide_rxq *pub, struct tide_mbuf **pkts, uint16_t n, const bool pace)
{
	struct pcap_rxq *q = (struct pcap_rxq *)pub;
	const uint16_t port = (uint16_t)pub->port->id;
	uint64_t bytes = 0, skipped = 0, now = pace ? mono_ns() : 0;
	uint16_t i = 0;

	if (q->eof)
		return 0;
	while (i < n) {
		struct pcap_pkthdr *h;
		const u_char *d;
		struct tide_mbuf *m;
		int rc;

		if (q->pending) {
			h = &q->pend_hdr;
			d = q->pend_data;
		} else if ((rc = pcap_next_ex(q->h, &h, &d)) == 1) {
			q->pass_pkts++;
		} else if (rx_next_pass(q, rc)) {
			continue;
		} else {
			break;
		}
		if (pace) {
			/* Nanosecond precision was asked for at open: tv_usec holds ns. */
			uint64_t ts = (uint64_t)h->ts.tv_sec * 1000000000u +
				      (uint64_t)h->ts.tv_usec;

			if (!q->t0_set) {
				q->t0_set = true;
				q->t0_cap = ts;
				q->t0_wall = now;
			}
			/* Signed: a timestamp earlier than the first one is due at once. */
			if ((int64_t)(ts - q->t0_cap) > (int64_t)(now - q->t0_wall))
				goto keep;
		}
		if (tide_unlikely(h->caplen > q->room)) {
			q->pending = false;
			skipped++;
			continue;
		}
		m = tide_mbuf_alloc(q->pool);
		if (tide_unlikely(m == NULL)) {
			tide_stat_add(&pub->stats.nombuf, 1);
			goto keep;
		}
		q->pending = false;
		memcpy(tide_mbuf_mtod(m, void *), d, h->caplen);
		m->data_len = (uint16_t)h->caplen;
		m->pkt_len = h->caplen;
		m->port = port;
		bytes += h->caplen;
		pkts[i++] = m;
		continue;
keep:
		if (!q->pending) {
			q->pend_hdr = *h;
			q->pend_data = d;
			q->pending = true;
		}
		break;
	}
	tide_stat_burst(&pub->stats, i, bytes);
	if (tide_unlikely(skipped))
		tide_stat_add(&pub->stats.errors, skipped);
	return i;
}

static uint16_t rx_fast(struct tide_rxq *q, struct tide_mbuf **pkts, uint16_t n)
{
	return rx_burst(q, pkts, n, false);
}

static uint16_t rx_paced(struct tide_rxq *q, struct tide_mbuf **pkts, uint16_t n)
{
	return rx_burst(q, pkts, n, true);
}

/* ---- Tx ---- */

static uint16_t tx_burst(struct tide_txq *pub, struct tide_mbuf **pkts, uint16_t n)
{
	struct pcap_txq *q = (struct pcap_txq *)pub;
	struct txc *t = &q->txc;
	unsigned room = txc_room_sync(t, n);
	uint32_t first = t->tail;
	struct pcap_pkthdr hdr;
	struct timespec now;
	struct txc_burst b;
	uint64_t bytes = 0;

	if (n > room)
		n = (uint16_t)room;
	if (n == 0)
		return 0;
	clock_gettime(CLOCK_REALTIME, &now);
	hdr.ts.tv_sec = now.tv_sec;
	hdr.ts.tv_usec = now.tv_nsec / 1000;
	txc_burst_begin(t, &b);
	for (uint16_t i = 0; i < n; i++) {
		struct tide_mbuf *m = pkts[i];
		const u_char *data = tide_mbuf_mtod(m, const u_char *);

		hdr.len = m->pkt_len;
		hdr.caplen = m->pkt_len < PCAP_SNAPLEN ? m->pkt_len : PCAP_SNAPLEN;
		if (tide_unlikely(m->nb_segs != 1)) {
			tide_mbuf_read(m, 0, hdr.caplen, q->bounce);
			data = q->bounce;
		}
		pcap_dump((u_char *)q->dumper, &hdr, data);
		bytes += m->pkt_len;
		txc_burst_fill(&b, first + i, m);
	}
	txc_burst_end(t, &b);
	/* Written: the whole burst is complete and goes back in bulk, after the loop. */
	txc_commit_done(t, n);
	txc_reclaim(t, n);
	tide_stat_burst(&pub->stats, n, bytes);
	return n;
}

/* ---- control ---- */

static int pcapd_rxq_setup(struct tide_port *p, unsigned qid, unsigned nb_desc,
			   struct tide_pool *pool, const struct tide_rxq_conf *conf,
			   struct tide_rxq **out)
{
	struct pcap_rxq *q = calloc(1, sizeof(*q));

	(void)qid;
	(void)nb_desc;
	(void)conf;
	if (q == NULL)
		return -ENOMEM;
	q->pool = pool;
	q->room = tide_pktpool_data_room(pool);
	q->pp = p->priv;
	*out = &q->pub;
	return 0;
}

static int pcapd_txq_setup(struct tide_port *p, unsigned qid, unsigned nb_desc,
			   const struct tide_txq_conf *conf, struct tide_txq **out)
{
	struct pcap_port *pp = p->priv;
	struct pcap_txq *q = calloc(1, sizeof(*q));
	struct txc_drv d = {.count_mode = true, .advance = txc_advance_none_ool};
	int rc;

	(void)qid;
	if (q == NULL)
		return -ENOMEM;
	q->bounce = malloc(PCAP_SNAPLEN);
	d.drv = q;
	rc = q->bounce ? txc_init(&q->txc, &q->pub, nb_desc, conf, &d) : -ENOMEM;
	if (rc < 0) {
		free(q->bounce);
		free(q);
		return rc;
	}
	q->dumper = pp->dumper;
	*out = &q->pub;
	return 0;
}

static void pcapd_rxq_release(struct tide_rxq *q)
{
	free(q);
}

static void pcapd_txq_release(struct tide_txq *pub)
{
	struct pcap_txq *q = (struct pcap_txq *)pub;

	txc_fini(&q->txc);
	free(q->bounce);
	free(q);
}

static int pcapd_start(struct tide_port *p)
{
	struct pcap_port *pp = p->priv;

	if (p->nb_rxq) {
		struct pcap_rxq *q = (struct pcap_rxq *)p->rxq[0];
		int rc = rx_file_open(p->name, pp->rx_path, &q->h);

		if (rc < 0)
			return rc;
		q->eof = pp->capture_pkts == 0;
		q->passes = 0;
		q->pass_pkts = 0;
		q->pending = false;
		q->t0_set = false;
		q->pub.burst = pp->pace ? rx_paced : rx_fast;
	}
	if (p->nb_txq)
		p->txq[0]->burst = tx_burst;
	return 0;
}

static void pcapd_stop(struct tide_port *p)
{
	struct pcap_port *pp = p->priv;

	if (p->nb_rxq && p->rxq[0]) {
		struct pcap_rxq *q = (struct pcap_rxq *)p->rxq[0];

		if (q->h)
			pcap_close(q->h);
		q->h = NULL;
		q->pending = false;
	}
	if (p->nb_txq && p->txq[0])
		txc_release_all(&((struct pcap_txq *)p->txq[0])->txc);
	if (pp->dumper && pcap_dump_flush(pp->dumper) < 0)
		TIDE_LOG_ERR_(p->name, "tx=%s: write error: %s", pp->tx_path, strerror(errno));
}

static void pcapd_close(struct tide_port *p)
{
	struct pcap_port *pp = p->priv;

	if (pp == NULL)
		return;
	if (pp->dumper) {
		if (pcap_dump_flush(pp->dumper) < 0)
			TIDE_LOG_ERR_(p->name, "tx=%s: write error: %s", pp->tx_path,
				      strerror(errno));
		pcap_dump_close(pp->dumper);
	}
	if (pp->tx_dead)
		pcap_close(pp->tx_dead);
	free(pp->rx_path);
	free(pp->tx_path);
}

static int pcapd_link_get(struct tide_port *p, struct tide_link *out)
{
	bool eof = false;

	if (p->nb_rxq && p->rxq[0])
		eof = __atomic_load_n(&((struct pcap_rxq *)p->rxq[0])->eof, __ATOMIC_RELAXED);
	out->up = p->started && !eof;
	out->speed_mbps = 0;
	return 0;
}

static int pcapd_open(struct tide_kvargs *kv, struct tide_port **ports, unsigned max)
{
	static unsigned seq;
	const char *rx = tide_kvargs_get(kv, "rx"), *tx = tide_kvargs_get(kv, "tx");
	struct tide_port *p;
	struct pcap_port *pp;
	uint64_t loops;
	bool pace;
	char name[32];
	int rc;

	(void)max;
	if (tide_kvargs_uint(kv, "loop", 1, 0, UINT64_MAX, &loops) ||
	    tide_kvargs_bool(kv, "pace", false, &pace))
		return -EINVAL;
	if ((rx && rx[0] == '\0') || (tx && tx[0] == '\0')) {
		TIDE_LOG_ERR_("pcap", "%s=: empty file name", rx && rx[0] == '\0' ? "rx" : "tx");
		return -EINVAL;
	}
	if (rx == NULL && tx == NULL) {
		TIDE_LOG_ERR_("pcap", "neither rx=<file> nor tx=<file> given");
		return -EINVAL;
	}
	snprintf(name, sizeof(name), "pcap%u", seq++);
	rc = tide_port_alloc(&tide_driver_pcap, name, sizeof(*pp), &p);
	if (rc < 0)
		return rc;
	pp = p->priv;
	pp->loops = loops;
	pp->pace = pace;
	pp->rx_path = rx ? strdup(rx) : NULL;
	pp->tx_path = tx ? strdup(tx) : NULL;
	if ((rx && pp->rx_path == NULL) || (tx && pp->tx_path == NULL))
		rc = -ENOMEM;
	if (rc == 0 && rx)
		rc = rx_file_check(pp);
	if (rc == 0 && tx)
		rc = tx_file_open(pp);
	if (rc < 0) {
		tide_port_free_unregistered(p);
		return rc;
	}
	p->info.max_rxq = rx ? 1 : 0;
	p->info.max_txq = tx ? 1 : 0;
	p->info.count_completion = 1;
	p->info.mac[0] = 0x02;
	p->info.mac[3] = 0x50; /* 'P' */
	p->info.mac[5] = (uint8_t)seq;
	ports[0] = p;
	return 1;
}

const struct tide_driver tide_driver_pcap = {
	.name = "pcap",
	.keys = "rx, tx, loop, pace",
	.open = pcapd_open,
	.rxq_setup = pcapd_rxq_setup,
	.txq_setup = pcapd_txq_setup,
	.rxq_release = pcapd_rxq_release,
	.txq_release = pcapd_txq_release,
	.start = pcapd_start,
	.stop = pcapd_stop,
	.close = pcapd_close,
	.link_get = pcapd_link_get,
};
