/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pcap driver, internal: the structures and helpers its files share.
 *   pcap.c       the spec, the port and queue operations (pcap.c's header says what the
 *                driver does)
 *   pcap_file.c  the capture files: checked at open, the same-file checks, the Tx header
 *   pcap_rx.c    the Rx burst: replaying a capture, paced or not
 *   pcap_tx.c    the Tx burst: records gathered and written, a failed write cut back
 */
#ifndef TIDE_PCAP_DRV_H
#define TIDE_PCAP_DRV_H

#include <pcap/pcap.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

#include "driver.h"
#include "txc.h"

#define PCAP_SNAPLEN	 65535
#define PCAP_MAGIC_NS	 0xa1b23c4du
#define PCAP_FILE_HDR	 24
#define PCAP_REC_HDR	 16
#define PCAP_OFF_LINK	 20	      /* link type field of the file header */
#define PCAP_TX_BUF	 (256u << 10) /* bytes of records gathered per write(2) */
#define PCAP_META_TAG	 0x70634d74u  /* "pcMt" */

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

static inline void pcap_wr32(uint8_t *b, uint32_t v)
{
	memcpy(b, &v, 4);
}

static inline uint32_t pcap_rd32(const uint8_t *b)
{
	uint32_t v;

	memcpy(&v, b, 4);
	return v;
}

/* ---- pcap_file.c ---- */
/* Open the capture @path for reading (nanosecond timestamps); 0 or -errno (logged for @who). */
int pcap_rx_file_open(const char *who, const char *path, pcap_t **out);
/* At open: the rx= capture is readable and whole; its packet count and link type. */
int pcap_rx_file_check(struct pcap_port *pp);
/*
 * Add @pp to the open pcap ports; first, when it has a tx= file, check that no open port
 * (nor its own rx=) reads or writes that file, then truncate it and write the header. One
 * lock covers the checks and the truncation: two ports opened at once cannot both miss each
 * other. 0, or -errno and @pp not added.
 */
int pcap_port_register(struct pcap_port *pp);
void pcap_port_unregister(struct pcap_port *pp);

/* ---- pcap_rx.c, pcap_tx.c ---- */
tide_rx_burst_fn pcap_rx_fn(bool pace);
uint16_t pcap_tx_burst(struct tide_txq *pub, struct tide_mbuf **pkts, uint16_t n);

#endif /* TIDE_PCAP_DRV_H */
