/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pcap driver: Rx replays a capture file (libpcap), Tx writes a capture file.
 *
 * Spec: pcap:rx=in.pcap,tx=out.pcap,loop=1,pace=no
 *   rx    capture to read (any link type; the bytes are handed out as they are). Checked at
 *         open: a missing or unreadable file gets its errno, a file that is not a capture or
 *         is truncated gets -EINVAL, each with a log line naming the file and the reason
 *   tx    capture to write (pcap, nanosecond timestamps, snap length 65535), created or
 *         truncated at open. Refused (-EINVAL, before anything is truncated) when it is the
 *         same file as the rx= capture of this or another open pcap port, or the tx= file of
 *         another one (compared by device and inode: links and other spellings count)
 *   loop  replay the capture this many times (default 1; 0 = without end)
 *   pace  yes: hand out each packet no earlier than its capture timestamp, relative to the
 *         first packet of the pass; no (default): as fast as possible
 * Either rx or tx may be absent, not both. At most one queue each way.
 *
 * Rx: each start replays from the beginning; buffers are allocated in bulk, one burst at a
 * time. A packet longer than the pool's data room is skipped and counted as an Rx error (no
 * chaining; the first one of a run is logged, naming the sizes). When the replay is over, Rx
 * returns 0, the link reads down and tide_pcap_replay_get() says ended. A capture found
 * truncated while replaying (the file changed since open) ends the replay with a log line
 * and one Rx error. Each packet's capture timestamp, original length and link type travel
 * with it in the first bytes of its mbuf's headroom (struct pcap_meta), so that a pcap Tx
 * writes them back unchanged.
 *
 * Tx: the burst's records are written with write(2), one call per burst (or per 256 KiB),
 * and the burst is then released as a whole through the Tx engine (count mode, completed at
 * once, reclaimed right after the write loop: seed 003), so the queue's txfree policy
 * applies and the queue never holds a buffer between bursts. A packet that came from a pcap
 * Rx keeps its timestamp, original length and link type (the file's link type is the first
 * such packet's; a packet of another link type cannot go into the same file and is an
 * error); any other packet gets the time of its burst and its own length. The file is
 * always a valid capture of whole records: on a write error (full disk, file size limit)
 * the file is cut back to the last whole record, the error is logged (the first of each
 * start, and a count at stop), and every packet not written is counted as a Tx error
 * (oerrors), never as sent.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tide/pcap.h>

#include "log.h"
#include "pcap_drv.h"

extern const struct tide_driver tide_driver_pcap;

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
	q->meta = tide_pktpool_headroom(pool) >= sizeof(struct pcap_meta);
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
	q->buf = malloc(PCAP_TX_BUF);
	q->rec_bytes = calloc(nb_desc ? nb_desc : 1, sizeof(*q->rec_bytes));
	d.drv = q;
	rc = q->buf && q->rec_bytes ? txc_init(&q->txc, &q->pub, nb_desc, conf, &d) : -ENOMEM;
	if (rc < 0) {
		free(q->rec_bytes);
		free(q->buf);
		free(q);
		return rc;
	}
	q->pp = pp;
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
	free(q->rec_bytes);
	free(q->buf);
	free(q);
}

static int pcapd_start(struct tide_port *p)
{
	struct pcap_port *pp = p->priv;

	if (p->nb_rxq) {
		struct pcap_rxq *q = (struct pcap_rxq *)p->rxq[0];
		int rc = pcap_rx_file_open(p->name, pp->rx_path, &q->h);

		if (rc < 0)
			return rc;
		q->eof = pp->capture_pkts == 0;
		q->records = 0;
		q->passes = 0;
		q->pass_pkts = 0;
		q->pending = false;
		q->t0_set = false;
		q->big_logged = false;
		q->pub.burst = pcap_rx_fn(pp->pace);
	}
	if (p->nb_txq) {
		struct pcap_txq *q = (struct pcap_txq *)p->txq[0];

		q->unwritten = 0;
		q->first_err = 0;
		q->mixed_logged = false;
		q->pub.burst = pcap_tx_burst;
	}
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
	if (p->nb_txq && p->txq[0]) {
		struct pcap_txq *q = (struct pcap_txq *)p->txq[0];

		txc_release_all(&q->txc);
		if (q->unwritten != 0)
			TIDE_LOG_ERR_(p->name, "tx=%s: %llu packets were not written (%s)",
				      pp->tx_path, (unsigned long long)q->unwritten,
				      q->first_err ? strerror(q->first_err) : "link type");
	}
}

static void pcapd_close(struct tide_port *p)
{
	struct pcap_port *pp = p->priv;

	if (pp == NULL)
		return;
	pcap_port_unregister(pp);
	if (pp->tx_fd >= 0 && close(pp->tx_fd) < 0)
		TIDE_LOG_ERR_(p->name, "tx=%s: write error at close: %s", pp->tx_path,
			      strerror(errno));
	pp->tx_fd = -1;
	free(pp->rx_path);
	free(pp->tx_path);
	pp->rx_path = pp->tx_path = NULL;
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

int tide_pcap_replay_get(const struct tide_port *p, struct tide_pcap_replay *out)
{
	struct tide_pcap_replay *dst = out, full;
	const struct pcap_port *pp;

	if (p == NULL || p->drv != &tide_driver_pcap ||
	    tide_sized_check(dst, TIDE_SIZE_UPTO(struct tide_pcap_replay, ended)) < 0)
		return -EINVAL;
	pp = p->priv;
	if (pp->rx_path == NULL)
		return -EINVAL;
	out = &full; /* filled whole, then handed out as far as the caller's sz goes */
	memset(out, 0, sizeof(*out));
	out->total = pp->capture_pkts * pp->loops;
	if (pp->capture_pkts == 0)
		out->ended = true; /* an empty capture: nothing to replay, at any loop count */
	if (p->started && p->nb_rxq && p->rxq[0]) {
		const struct pcap_rxq *q = (const struct pcap_rxq *)p->rxq[0];

		out->records = __atomic_load_n(&q->records, __ATOMIC_RELAXED);
		out->ended = __atomic_load_n(&q->eof, __ATOMIC_RELAXED);
	}
	return tide_sized_put(dst, &full, sizeof(full));
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
	pp->port = p;
	tide_port_frame_limit(p, PCAP_SNAPLEN); /* the snap length of the files it writes */
	pp->tx_fd = -1;
	pp->loops = loops;
	pp->pace = pace;
	pp->rx_path = rx ? strdup(rx) : NULL;
	pp->tx_path = tx ? strdup(tx) : NULL;
	if ((rx && pp->rx_path == NULL) || (tx && pp->tx_path == NULL))
		rc = -ENOMEM;
	if (rc == 0 && rx)
		rc = pcap_rx_file_check(pp);
	if (rc == 0 && loops != 0 && pp->capture_pkts > UINT64_MAX / loops) {
		TIDE_LOG_ERR_("pcap", "loop=%llu: too many passes of %llu packets",
			      (unsigned long long)loops, (unsigned long long)pp->capture_pkts);
		rc = -EINVAL;
	}
	if (rc == 0)
		rc = pcap_port_register(pp); /* the same-file checks, the tx= file created */
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

/*
 * The replay's and the writer's own counters for tide_xstats_*(), since the last start:
 * records read, passes over the capture finished, packets that could not be written.
 */
static unsigned pcapd_xstats(struct tide_port *p, const char **names, uint64_t *values,
			     unsigned max)
{
	const struct pcap_rxq *rq = (const struct pcap_rxq *)p->rxq[0];
	const struct pcap_txq *tq = (const struct pcap_txq *)p->txq[0];
	uint64_t v[3] = {
	    rq ? __atomic_load_n(&rq->records, __ATOMIC_RELAXED) : 0,
	    rq ? __atomic_load_n(&rq->passes, __ATOMIC_RELAXED) : 0,
	    tq ? __atomic_load_n(&tq->unwritten, __ATOMIC_RELAXED) : 0,
	};
	static const char *const n[3] = {"rx_records", "rx_passes", "tx_unwritten"};

	return tide_xstats_put(n, v, 3, names, values, max);
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
	.mtu_set = tide_port_mtu_set_keep,
	.link_get = pcapd_link_get,
	.xstats = pcapd_xstats,
};
