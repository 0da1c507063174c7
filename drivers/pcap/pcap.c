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
#include <fcntl.h>
#include <pcap/pcap.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <tide/pcap.h>

#include "inline.h"
#include "driver.h"
#include "log.h"
#include "txc.h"

#define PCAP_SNAPLEN	 65535
#define PCAP_MAGIC_NS	 0xa1b23c4du
#define PCAP_FILE_HDR	 24
#define PCAP_REC_HDR	 16
#define PCAP_OFF_LINK	 20	      /* link type field of the file header */
#define PCAP_TX_BUF	 (256u << 10) /* bytes of records gathered per write(2) */
#define PCAP_META_TAG	 0x70634d74u  /* "pcMt" */

extern const struct tide_driver tide_driver_pcap;

/*
 * What a pcap Rx leaves at the start of an mbuf's headroom for a pcap Tx: valid while the
 * tag is set, the port is still the Rx port and the packet still has the length it was
 * received with (an application that resized or rebuilt it gets its own length and the
 * time of sending). The Tx clears the tag after writing.
 */
struct pcap_meta {
	uint64_t ts_ns;
	uint32_t orig_len;
	uint32_t caplen;
	uint16_t linktype;
	uint16_t port;
	uint32_t tag;
};

_Static_assert(sizeof(struct pcap_meta) == 24, "pcap_meta layout");

struct pcap_port {
	char *rx_path, *tx_path;
	uint64_t loops;         /* 0: without end */
	bool pace;
	uint64_t capture_pkts;  /* packets found in the rx file at open */
	int rx_linktype;
	dev_t rx_dev;
	ino_t rx_ino;
	/* Tx file: written only by the Tx queue's thread while started. */
	int tx_fd;              /* -1: none */
	bool tx_regular;        /* a regular file: can be cut back after a failed write */
	dev_t tx_dev;
	ino_t tx_ino;
	uint64_t tx_off;        /* bytes of whole records (and the header) in the file */
	uint32_t tx_linktype;   /* rewritten by the first replayed packet, before any record */
	struct tide_port *port;
	struct pcap_port *next; /* open pcap ports (same-file checks) */
};

/* Every open pcap port, for the same-file checks at open. */
static pthread_mutex_t ports_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pcap_port *ports_open;

struct pcap_rxq {
	struct tide_rxq pub; /* first: the handle */
	struct tide_pool *pool;
	uint32_t room;          /* data room of the pool's mbufs */
	bool meta;              /* headroom has room for struct pcap_meta */
	struct pcap_port *pp;
	pcap_t *h;              /* open while started */
	bool eof;               /* the replay is over (written by the Rx thread, relaxed) */
	bool big_logged;        /* the first packet too long for the data room was logged */
	uint64_t records;       /* records read since start (written by the Rx thread, relaxed) */
	uint64_t passes;        /* passes finished (Rx thread writes, relaxed: xstats read it) */
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
	struct pcap_port *pp;
	uint8_t *buf;           /* records of the burst, written with one write(2) */
	uint32_t *rec_bytes;    /* pkt_len of each record in buf (bytes of what got in) */
	uint64_t unwritten;     /* packets not written since start (Tx thread writes, relaxed) */
	int first_err;          /* errno of the first failed write since start, 0: none */
	bool mixed_logged;
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
	struct stat st;
	pcap_t *pc;
	int rc = rx_file_open("pcap", pp->rx_path, &pc);

	if (rc < 0)
		return rc;
	if (fstat(fileno(pcap_file(pc)), &st) == 0) {
		pp->rx_dev = st.st_dev;
		pp->rx_ino = st.st_ino;
	}
	pp->rx_linktype = pcap_datalink(pc);
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

static void wr32(uint8_t *b, uint32_t v)
{
	memcpy(b, &v, 4);
}

static uint32_t rd32(const uint8_t *b)
{
	uint32_t v;

	memcpy(&v, b, 4);
	return v;
}

/*
 * Which open port (this one included) reads or writes this file: a tx= must be neither.
 * Called with ports_lock held. Returns "reads" or "writes" for the message, or NULL.
 */
static const char *file_user(const struct pcap_port *self, dev_t dev, ino_t ino,
			     const struct pcap_port **who)
{
	for (const struct pcap_port *o = ports_open; o != NULL; o = o->next) {
		if (o->tx_fd >= 0 && o->tx_dev == dev && o->tx_ino == ino) {
			*who = o;
			return "writes";
		}
		if (o->rx_path && o->rx_dev == dev && o->rx_ino == ino) {
			*who = o;
			return "reads";
		}
	}
	if (self->rx_path && self->rx_dev == dev && self->rx_ino == ino) {
		*who = self;
		return "reads";
	}
	return NULL;
}

/* Open (without truncating), check that nobody reads or writes it, then truncate and write
 * the file header. Called with ports_lock held. */
static int tx_file_open(struct pcap_port *pp)
{
	uint8_t hdr[PCAP_FILE_HDR];
	const struct pcap_port *o;
	const char *what;
	struct stat st;
	ssize_t w;
	int fd = open(pp->tx_path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644), rc;

	if (fd < 0) {
		rc = -errno;
		TIDE_LOG_ERR_("pcap", "tx=%s: cannot create: %s", pp->tx_path, strerror(errno));
		return rc;
	}
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		TIDE_LOG_ERR_("pcap", "tx=%s: %s", pp->tx_path, strerror(errno));
		close(fd);
		return rc;
	}
	what = file_user(pp, st.st_dev, st.st_ino, &o);
	if (what != NULL) {
		if (o == pp)
			TIDE_LOG_ERR_("pcap", "tx=%s: is the capture rx=%s reads; writing it would "
				      "destroy the input", pp->tx_path, pp->rx_path);
		else
			TIDE_LOG_ERR_("pcap", "tx=%s: %s %s this file (%s=%s)", pp->tx_path,
				      o->port->name, what, what[0] == 'r' ? "rx" : "tx",
				      what[0] == 'r' ? o->rx_path : o->tx_path);
		close(fd);
		return -EINVAL;
	}
	pp->tx_regular = S_ISREG(st.st_mode);
	if (pp->tx_regular && ftruncate(fd, 0) < 0) {
		rc = -errno;
		TIDE_LOG_ERR_("pcap", "tx=%s: cannot truncate: %s", pp->tx_path, strerror(errno));
		close(fd);
		return rc;
	}
	pp->tx_linktype = pp->rx_path ? (uint32_t)pp->rx_linktype : DLT_EN10MB;
	wr32(hdr, PCAP_MAGIC_NS);
	wr32(hdr + 4, 2 | 4u << 16); /* version 2.4 (two 16-bit fields, host order) */
	wr32(hdr + 8, 0);            /* thiszone */
	wr32(hdr + 12, 0);           /* sigfigs */
	wr32(hdr + 16, PCAP_SNAPLEN);
	wr32(hdr + PCAP_OFF_LINK, pp->tx_linktype);
	w = write(fd, hdr, sizeof(hdr));
	if (w != (ssize_t)sizeof(hdr)) {
		rc = w < 0 ? -errno : -ENOSPC;
		TIDE_LOG_ERR_("pcap", "tx=%s: cannot write the file header: %s", pp->tx_path,
			      strerror(-rc));
		close(fd);
		return rc;
	}
	pp->tx_fd = fd;
	pp->tx_dev = st.st_dev;
	pp->tx_ino = st.st_ino;
	pp->tx_off = PCAP_FILE_HDR;
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
	__atomic_store_n(&q->passes, q->passes + 1, __ATOMIC_RELAXED); /* xstats read it */
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
	uint64_t bytes = 0, skipped = 0, read = 0, now = pace ? mono_ns() : 0;
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

/* ---- Tx ---- */

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
	       good + PCAP_REC_HDR + rd32(q->buf + good + 8) <= off) {
		good += PCAP_REC_HDR + rd32(q->buf + good + 8);
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

static uint16_t tx_burst(struct tide_txq *pub, struct tide_mbuf **pkts, uint16_t n)
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
		wr32(r, (uint32_t)(ts / 1000000000u));
		wr32(r + 4, (uint32_t)(ts % 1000000000u));
		wr32(r + 8, caplen);
		wr32(r + 12, orig);
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
		int rc = rx_file_open(p->name, pp->rx_path, &q->h);

		if (rc < 0)
			return rc;
		q->eof = pp->capture_pkts == 0;
		q->records = 0;
		q->passes = 0;
		q->pass_pkts = 0;
		q->pending = false;
		q->t0_set = false;
		q->big_logged = false;
		q->pub.burst = pp->pace ? rx_paced : rx_fast;
	}
	if (p->nb_txq) {
		struct pcap_txq *q = (struct pcap_txq *)p->txq[0];

		q->unwritten = 0;
		q->first_err = 0;
		q->mixed_logged = false;
		q->pub.burst = tx_burst;
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
	pthread_mutex_lock(&ports_lock);
	for (struct pcap_port **l = &ports_open; *l != NULL; l = &(*l)->next)
		if (*l == pp) {
			*l = pp->next;
			break;
		}
	pthread_mutex_unlock(&ports_lock);
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
		rc = rx_file_check(pp);
	if (rc == 0 && loops != 0 && pp->capture_pkts > UINT64_MAX / loops) {
		TIDE_LOG_ERR_("pcap", "loop=%llu: too many passes of %llu packets",
			      (unsigned long long)loops, (unsigned long long)pp->capture_pkts);
		rc = -EINVAL;
	}
	/* The checks against the other open ports and the truncation happen under one lock:
	 * two ports opened at once cannot both miss each other. */
	pthread_mutex_lock(&ports_lock);
	if (rc == 0 && tx)
		rc = tx_file_open(pp);
	if (rc == 0) {
		pp->next = ports_open;
		ports_open = pp;
	}
	pthread_mutex_unlock(&ports_lock);
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
