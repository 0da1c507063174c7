/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * simnic internals shared by the driver (simnic.c, its bursts simnic_rxtx.c) and the device
 * model (simnic_hw.c).
 * Each queue keeps the driver's state, the registers and the device's private state on
 * separate cache lines, as they would be on real hardware.
 */
#ifndef TIDE_SIMNIC_H_INTERNAL
#define TIDE_SIMNIC_H_INTERNAL

#include <pthread.h>
#include <stdbool.h>
#include <string.h>

#include <tide/simnic.h>

#include "inline.h"
#include "driver.h"
#include "rxr.h"
#include "simnic_desc.h"
#include "txc.h"

#define SIMNIC_MAX_PORTS 16
#define SIMNIC_MAX_QUEUES 16
#define SIMNIC_BUDGET 64 /* descriptors per queue per device step */

enum simnic_wire { SIMNIC_WIRE_GEN, SIMNIC_WIRE_LOOP, SIMNIC_WIRE_CROSS };
enum simnic_mode { SIMNIC_MODE_INLINE, SIMNIC_MODE_THREAD };

struct simnic_port;

struct simnic_txq {
	struct tide_txq pub; /* first: the handle */
	struct txc txc;
	struct simnic_tx_desc *ring;
	uint32_t size, mask;
	bool wb_head;
	struct simnic_port *sp;

	/* Registers. */
	uint32_t tail TIDE_CACHE_ALIGNED;    /* doorbell: driver writes (release) */
	uint32_t head_wb TIDE_CACHE_ALIGNED; /* wb=head: device writes (release) */

	/* Device state: only the model touches it (plus stop/start when it is quiet). */
	struct {
		uint32_t head;  /* next descriptor to fetch */
		uint32_t gap;   /* descriptors fetched since the last RS */
		bool hung;
		bool enabled;   /* set by the driver with release, read with acquire */
		uint64_t hangs;
	} hw TIDE_CACHE_ALIGNED;
};

struct simnic_rxq {
	struct tide_rxq pub; /* first: the handle */
	struct rxr rxr;
	struct simnic_rx_desc *ring;
	uint32_t size, mask;
	uint16_t headroom;
	struct simnic_port *sp;
	struct tide_mbuf__rx_tmpl tmpl; /* a received mbuf's second half, but len and hash */

	uint32_t tail TIDE_CACHE_ALIGNED; /* doorbell: driver writes (release) */

	struct {
		uint32_t head;  /* next descriptor to fill */
		/* Inline mode: the Tx steps of every thread that sends into this queue (wire
		 * loop or cross, several Tx queues) store packets here: one at a time. */
		uint32_t lock;
		bool enabled;
		uint64_t seq;   /* packets generated on this queue */
		uint64_t missed;
		uint64_t next_ns; /* rate limit: earliest time of the next packet */
	} hw TIDE_CACHE_ALIGNED;
};

struct simnic_dev;

struct simnic_port {
	struct tide_port *port;
	struct simnic_dev *dev;
	unsigned idx;
	bool started;
	struct simnic_rxq *rxq[SIMNIC_MAX_QUEUES];
	struct simnic_txq *txq[SIMNIC_MAX_QUEUES];
	unsigned nb_rxq, nb_txq;
	tide_simnic_verify_fn verify;
	void *verify_arg;
	tide_simnic_gen_fn gen;
	void *gen_arg;
	/* Device counters (written by the device side only). */
	struct {
		uint64_t gen_packets, sink_packets, sink_bytes, verify_failed;
		uint64_t gen_budget; /* count=: packets left to generate (UINT64_MAX: no limit) */
	} hw TIDE_CACHE_ALIGNED;
};

struct simnic_dev {
	enum simnic_mode mode;
	enum simnic_wire wire;
	unsigned nports, nqueues;
	unsigned pkt_size, flows, ondie;
	uint64_t count, rate;
	bool wb_head;
	int cpu;
	unsigned open_ports, started_ports;
	struct simnic_port *ports[SIMNIC_MAX_PORTS];

	pthread_t thread;
	bool running;        /* device thread should keep going */
	uint64_t epoch;      /* device loop iterations (release store each iteration) */
	uint64_t polls, idle;
};

/*
 * Wide stores for the fast paths: a descriptor's second word as one 64-bit word, and the
 * mbuf's second half from the Rx template as two 16-byte vectors in which the length is
 * 16-bit element 0 (pkt_len's low half, little-endian) and 2 (data_len) of the first, and the
 * hash 32-bit element 2 of the second (layouts pinned below; other byte orders store the
 * length and hash fields one by one after the template).
 */
static_assert(offsetof(struct tide_mbuf__rx_tmpl, pkt_len) == 0 &&
		      offsetof(struct tide_mbuf__rx_tmpl, data_len) == 2 * 2,
	      "length in 16-bit elements 0 and 2 of the template's first half");
static_assert(offsetof(struct tide_mbuf__rx_tmpl, rss_hash) == 16 + 2 * 4,
	      "hash in 32-bit element 2 of the template's second half");
static_assert(offsetof(struct simnic_tx_desc, len) == 8 && offsetof(struct simnic_tx_desc, cmd) == 10,
	      "Tx descriptor's second word: len, cmd, rsvd, status");

TIDE_ALWAYS_INLINE void
simnic_txd_set(struct simnic_tx_desc *d, uint16_t len, uint16_t cmd)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	uint64_t w = len + ((uint64_t)cmd << 16); /* an add: one lea */

	memcpy(&d->len, &w, sizeof(w));
#else
	d->len = len;
	d->cmd = cmd;
	d->rsvd = 0;
	d->status = 0;
#endif
}

TIDE_ALWAYS_INLINE void simnic_rxd_post(struct simnic_rx_desc *d,
					uint64_t addr)
{
	uint64_t zero = 0; /* len, status, rss: written back by the device */

	d->addr = addr;
	memcpy(&d->len, &zero, sizeof(zero));
}

/*
 * A received mbuf's second half (pkt_len .. packet_type, mbuf.h) from the queue's template
 * (@r: refcnt 1, one segment, the pool's buf_len and headroom, the port, the RSS flag; set
 * up with the queue) with the length put in twice and the hash once: two 16-byte stores
 * where field stores took six. refcnt and nb_segs are 1 already (the buffer came from the
 * pool or was recycled under that check), so rewriting them changes nothing.
 */
typedef uint16_t simnic_v8u16 __attribute__((vector_size(16)));
typedef uint32_t simnic_v4u32 __attribute__((vector_size(16)));

TIDE_ALWAYS_INLINE void
simnic_mbuf_rx(struct tide_mbuf *m, struct tide_mbuf__rx_regs r, uint16_t len, uint32_t rss)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	simnic_v8u16 lens = (simnic_v8u16)r.lo;
	simnic_v4u32 hash = (simnic_v4u32)r.hi;

	lens[0] = len; /* pkt_len (its upper half is 0 in the template) */
	lens[2] = len; /* data_len */
	hash[2] = rss; /* rss_hash; packet_type 0 */
	r.lo = (tide_mbuf__v16)lens;
	r.hi = (tide_mbuf__v16)hash;
	tide_mbuf__rx_tmpl_write(m, r);
#else
	tide_mbuf__rx_tmpl_write(m, r);
	m->pkt_len = len;
	m->data_len = len;
	m->rss_hash = rss;
#endif
}

/* Data path (simnic_rxtx.c): the burst variants and the hooks of the Tx engine and the Rx
 * refill, chosen at queue setup and port start. */
tide_tx_burst_fn simnic_tx_fn(bool wb_head, bool inline_hw, bool track);
tide_rx_burst_fn simnic_rx_fn(bool inline_hw);
unsigned simnic_tx_advance_dd_ool(struct txc *t);
unsigned simnic_tx_advance_head_ool(struct txc *t);
void simnic_rx_post_ool(struct rxr *r, uint32_t first, unsigned n, bool doorbell);
/* Post every descriptor the pool can fill and ring the doorbell (port start). */
void simnic_rx_fill(struct simnic_rxq *q);

/* Device model entry points (simnic_hw.c). */
/* One step of a queue's device side; returns the descriptors processed (0 when disabled). */
unsigned simnic_hw_tx_step(struct simnic_txq *q, unsigned budget);
unsigned simnic_hw_rx_step(struct simnic_rxq *q, unsigned budget);
int simnic_hw_thread_start(struct simnic_dev *d);
void simnic_hw_thread_stop(struct simnic_dev *d);
/* Wait until every device step that began before the call has finished (queues disabled
 * before it are no longer touched): the device thread's, or in inline mode the steps run
 * from other threads' bursts (a grace period, src/qs.h). */
void simnic_hw_quiesce(struct simnic_dev *d);
/* The built-in generator: packet @seq of port @p, queue @qid. */
unsigned simnic_gen_builtin(const struct simnic_dev *d, unsigned p, unsigned qid, uint64_t seq,
			    uint8_t *buf, unsigned room, uint32_t *rss);
/* Flow hash of a packet (IPv4 addresses and ports; 0 for anything else). */
uint32_t simnic_flow_hash(const uint8_t *pkt, unsigned len);

#endif
