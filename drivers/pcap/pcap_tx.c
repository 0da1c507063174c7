/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pcap driver: the Tx burst. The burst's records are gathered in one buffer and written
 * with write(2), one call per burst (or per PCAP_TX_BUF bytes), then the burst goes back
 * through the Tx engine at once (pcap.c says how). A failed write cuts the file back to
 * its last whole record; every packet not written is counted as an error, never as sent.
 */
#include <errno.h>
#include <time.h>
#include <unistd.h>

#include "inline.h"
#include "log.h"
#include "pcap_drv.h"

/*
 * Write @len bytes of whole records from q->buf. Returns how many of them are in the file
 * afterwards; on an error, the file is cut back to the last whole record that got in and
 * the error is remembered (logged the first time).
 */
static unsigned tx_write(struct pcap_txq *q, size_t len, unsigned nrec, uint64_t *bytes)
{
	struct pcap_port *pp = q->pp;
	size_t off = 0, good = 0;
	unsigned k = 0;
	int err = 0;

	while (off < len) {
		ssize_t w = write(pp->tx_fd, q->buf + off, len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			err = w < 0 ? errno : ENOSPC;
			break;
		}
		off += (size_t)w;
	}
	if (off == len) {
		pp->tx_off += len;
		for (unsigned i = 0; i < nrec; i++)
			*bytes += q->rec_bytes[i];
		return nrec;
	}
	/* Whole records among the bytes that got in. */
	while (good + PCAP_REC_HDR <= off &&
	       good + PCAP_REC_HDR + pcap_rd32(q->buf + good + 8) <= off) {
		good += PCAP_REC_HDR + pcap_rd32(q->buf + good + 8);
		*bytes += q->rec_bytes[k++];
	}
	pp->tx_off += good;
	if (pp->tx_regular && (ftruncate(pp->tx_fd, (off_t)pp->tx_off) < 0 ||
			       lseek(pp->tx_fd, (off_t)pp->tx_off, SEEK_SET) < 0))
		TIDE_LOG_ERR_(q->pub.port->name, "tx=%s: cannot cut back a partial record: %s",
			      pp->tx_path, strerror(errno));
	if (q->first_err == 0) {
		q->first_err = err;
		TIDE_LOG_ERR_(q->pub.port->name,
			      "tx=%s: write error: %s (packets not written are counted as Tx "
			      "errors)", pp->tx_path, strerror(err));
	}
	return k;
}

/* Out of line: a record of another link type than the file's. */
static void tx_log_mixed(struct pcap_txq *q, unsigned linktype)
{
	q->mixed_logged = true;
	TIDE_LOG_ERR_(q->pub.port->name,
		      "tx=%s: a packet of link type %u cannot go into a capture of link type %u: "
		      "not written (Tx error)", q->pp->tx_path, linktype, q->pp->tx_linktype);
}

uint16_t pcap_tx_burst(struct tide_txq *pub, struct tide_mbuf **pkts, uint16_t n)
{
	struct pcap_txq *q = (struct pcap_txq *)pub;
	struct pcap_port *pp = q->pp;
	struct txc *t = &q->txc;
	unsigned room = txc_room_sync(t, n), written = 0, nrec = 0;
	uint32_t first = t->tail;
	struct timespec now;
	struct txc_burst b;
	uint64_t bytes = 0, now_ns;
	size_t len = 0;
	bool failed = false;

	if (n > room)
		n = (uint16_t)room;
	if (n == 0)
		return 0;
	clock_gettime(CLOCK_REALTIME, &now);
	now_ns = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
	txc_burst_begin(t, &b);
	for (uint16_t i = 0; i < n; i++) {
		struct tide_mbuf *m = pkts[i];
		struct pcap_meta *md = m->buf_addr;
		uint32_t caplen = m->pkt_len < PCAP_SNAPLEN ? m->pkt_len : PCAP_SNAPLEN;
		uint32_t orig = m->pkt_len;
		uint64_t ts = now_ns;
		uint8_t *r;

		txc_burst_fill(&b, first + i, m);
		if (failed)
			continue;
		if (m->data_off >= sizeof(*md) && md->tag == PCAP_META_TAG && md->port == m->port &&
		    md->caplen == m->pkt_len) {
			md->tag = 0;
			ts = md->ts_ns;
			/* A capture may claim a wire length below what it holds: never write
			 * such a record, whatever the input said. */
			orig = md->orig_len > m->pkt_len ? md->orig_len : m->pkt_len;
			if (tide_unlikely(md->linktype != pp->tx_linktype)) {
				/* Settled once a record is in the file or in this burst. */
				if (pp->tx_off != PCAP_FILE_HDR || nrec != 0 ||
				    pwrite(pp->tx_fd, &(uint32_t){md->linktype}, 4,
					   PCAP_OFF_LINK) != 4) {
					if (!q->mixed_logged)
						tx_log_mixed(q, md->linktype);
					continue;
				}
				pp->tx_linktype = md->linktype;
			}
		}
		if (len + PCAP_REC_HDR + caplen > PCAP_TX_BUF) {
			unsigned k = tx_write(q, len, nrec, &bytes);

			written += k;
			failed = k < nrec;
			len = 0;
			nrec = 0;
			if (failed)
				continue;
		}
		r = q->buf + len;
		pcap_wr32(r, (uint32_t)(ts / 1000000000u));
		pcap_wr32(r + 4, (uint32_t)(ts % 1000000000u));
		pcap_wr32(r + 8, caplen);
		pcap_wr32(r + 12, orig);
		if (tide_likely(m->nb_segs == 1))
			memcpy(r + PCAP_REC_HDR, tide_mbuf_mtod(m, const void *), caplen);
		else
			tide_mbuf_read(m, 0, caplen, r + PCAP_REC_HDR);
		len += PCAP_REC_HDR + caplen;
		q->rec_bytes[nrec++] = m->pkt_len;
	}
	if (len != 0)
		written += tx_write(q, len, nrec, &bytes);
	txc_burst_end(t, &b);
	/* Written: the whole burst is complete and goes back in bulk, after the loop. */
	txc_commit_done(t, n);
	txc_reclaim(t, n);
	if (tide_unlikely(written != n)) {
		__atomic_store_n(&q->unwritten, q->unwritten + n - written, __ATOMIC_RELAXED);
		tide_stat_add(&pub->stats.errors, n - written);
	}
	tide_stat_burst(&pub->stats, written, bytes);
	return n;
}
