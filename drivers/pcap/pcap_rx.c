/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pcap driver: the Rx burst. Replays the rx= capture (pcap.c says how): buffers allocated
 * in bulk, one burst at a time; a packet longer than the data room skipped and counted; with
 * pace=yes a packet is handed out no earlier than its capture time relative to the pass's
 * first packet; each packet's capture metadata left in its headroom for a pcap Tx.
 */
#include <stdio.h>

#include "inline.h"
#include "log.h"
#include "osutil.h"
#include "pcap_drv.h"

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
	__atomic_store_n(&q->passes, q->passes + 1, __ATOMIC_RELAXED); /* xstats read it */
	if (q->pass_pkts == 0 || (q->pp->loops != 0 && q->passes >= q->pp->loops)) {
		rx_set_eof(q);
		return false;
	}
	pcap_close(q->h);
	q->h = NULL;
	if (pcap_rx_file_open(p->name, q->pp->rx_path, &q->h) < 0) {
		tide_stat_add(&q->pub.stats.errors, 1);
		rx_set_eof(q);
		return false;
	}
	q->pass_pkts = 0;
	q->t0_set = false;
	return true;
}

/* Out of line: the first packet too long for the data room, once per start. */
static void rx_log_big(struct pcap_rxq *q, const struct pcap_pkthdr *h, uint64_t nr)
{
	q->big_logged = true;
	TIDE_LOG_ERR_(q->pub.port->name,
		      "rx=%s: record %llu is %u bytes, more than the %u-byte data room of the "
		      "pool: dropped (this and every such record is counted as an Rx error)",
		      q->pp->rx_path, (unsigned long long)nr, h->caplen, q->room);
}

TIDE_ALWAYS_INLINE uint16_t
rx_burst(struct tide_rxq *pub, struct tide_mbuf **pkts, uint16_t n, const bool pace)
{
	struct pcap_rxq *q = (struct pcap_rxq *)pub;
	const uint16_t port = (uint16_t)pub->port->id;
	uint64_t bytes = 0, skipped = 0, read = 0, now = pace ? os_now_ns() : 0;
	uint16_t i = 0, have = 0;

	if (q->eof || n == 0)
		return 0;
	/* One bulk get for the burst (paced: one at a time, most polls hand out nothing). */
	if (!pace && tide_mbuf_alloc_bulk(q->pool, pkts, n) == 0)
		have = n;
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
			read++;
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
			if (!q->big_logged)
				rx_log_big(q, h, q->records + read);
			q->pending = false;
			skipped++;
			continue;
		}
		if (i < have) {
			m = pkts[i];
		} else {
			m = tide_mbuf_alloc(q->pool);
			if (tide_unlikely(m == NULL)) {
				tide_stat_add(&pub->stats.nombuf, 1);
				goto keep;
			}
			have++;
		}
		q->pending = false;
		memcpy(tide_mbuf_mtod(m, void *), d, h->caplen);
		m->data_len = (uint16_t)h->caplen;
		m->pkt_len = h->caplen;
		m->port = port;
		if (q->meta) {
			struct pcap_meta *md = m->buf_addr;

			md->ts_ns = (uint64_t)h->ts.tv_sec * 1000000000u + (uint64_t)h->ts.tv_usec;
			md->orig_len = h->len;
			md->caplen = h->caplen;
			md->linktype = (uint16_t)q->pp->rx_linktype;
			md->port = port;
			md->tag = PCAP_META_TAG;
		}
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
	if (tide_unlikely(have > i))
		tide_mbuf_free_bulk(pkts + i, (unsigned)(have - i));
	if (read != 0)
		__atomic_store_n(&q->records, q->records + read, __ATOMIC_RELAXED);
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

tide_rx_burst_fn pcap_rx_fn(bool pace)
{
	return pace ? rx_paced : rx_fast;
}
