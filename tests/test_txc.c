/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The Tx completion engine through simnic: every rs x txfree combination, burst and ring
 * sizes, RS gaps against the device window, recycling (manual, automatic, unsafe cases),
 * idle cleanup, and stop with buffers in flight.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <tide/lcore.h>
#include <tide/log.h>
#include <tide/port.h>
#include <tide/simnic.h>

#include "driver.h"
#include "testutil.h"
#include "rxr.h"
#include "txc.h"

#define SEQ_OFF 42

static int setup_thread(void **state)
{
	(void)state;
	return tide_thread_register() < 0;
}

static void quiet(enum tide_log_level l, const char *c, const char *m, void *u)
{
	(void)l;
	(void)c;
	(void)m;
	(void)u;
}

/* The sink of port q sees port q^1's packets: in order, none missing, and hashed. */
struct sink {
	uint64_t next_seq[2];
	uint64_t hash[2];
	unsigned errors;
};

static int sink_check(void *arg, unsigned port, const uint8_t *pkt, unsigned len)
{
	struct sink *s = arg;
	uint64_t seq;

	memcpy(&seq, pkt + SEQ_OFF, 8);
	if (len != 64 || seq != s->next_seq[port])
		s->errors++;
	s->next_seq[port] = seq + 1;
	for (unsigned i = 0; i < len; i++)
		s->hash[port] = (s->hash[port] ^ pkt[i]) * 0x100000001b3ull;
	return 0;
}

struct fwd {
	struct tide_pool *pool;
	struct tide_port *ports[2];
	struct sink sink;
	bool inline_hw;
};

static void fwd_open(struct fwd *f, const char *spec, unsigned ring, unsigned pool_n,
		     const struct tide_txq_conf *tc)
{
	memset(f, 0, sizeof(*f));
	f->inline_hw = strstr(spec, "mode=inline") != NULL;
	assert_int_equal(tide_pktpool_create("fwd", pool_n, 128, 0, NULL, &f->pool), 0);
	assert_int_equal(tide_ports_open(spec, f->ports, 2), 2);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(tide_port_configure(f->ports[i], 1, 1), 0);
		assert_int_equal(tide_rxq_setup(f->ports[i], 0, ring, f->pool, NULL), 0);
		assert_int_equal(tide_txq_setup(f->ports[i], 0, ring, tc), 0);
		assert_int_equal(tide_simnic_set_verify(f->ports[i], sink_check, &f->sink), 0);
	}
}

static void fwd_close(struct fwd *f)
{
	for (int i = 0; i < 2; i++)
		tide_port_close(f->ports[i]);
	assert_pool_full(f->pool);
	tide_pool_free(f->pool);
}

/* io forwarding 0->1, 1->0 until every generated packet reached a sink. */
static void fwd_run(struct fwd *f, uint64_t per_port, int burst, uint64_t *seed)
{
	struct tide_mbuf *pkts[64];
	struct tide_simnic_stats ss[2] = {{.sz = sizeof(ss[0])}, {.sz = sizeof(ss[0])}};

	/* Thread mode: the device shares the CPUs, so progress is bounded by time. Inline
	 * mode is deterministic: every iteration moves packets until the end, so an
	 * iteration that moves none is a hung queue, reported at once. */
	bool inl = f->inline_hw;
	time_t deadline = time(NULL) + 30;
	uint64_t last = 0;

	for (unsigned iter = 0; (iter & 1023) != 0 || time(NULL) < deadline; iter++) {
		for (int i = 0; i < 2; i++) {
			unsigned b = burst > 0 ? (unsigned)burst : 1 + (unsigned)(test_rand(seed) % 64);
			uint16_t n = tide_rx_burst(tide_port_rxq(f->ports[i], 0), pkts, (uint16_t)b);
			uint16_t k = 0;

			while (k < n)
				k += tide_tx_burst(tide_port_txq(f->ports[i ^ 1], 0), pkts + k,
						   (uint16_t)(n - k));
		}
		tide_simnic_stats_get(f->ports[0], &ss[0]);
		tide_simnic_stats_get(f->ports[1], &ss[1]);
		if (ss[0].sink_packets == per_port && ss[1].sink_packets == per_port)
			return;
		if (ss[0].tx_hangs + ss[1].tx_hangs != 0 ||
		    (inl && iter > 2 && ss[0].sink_packets + ss[1].sink_packets == last))
			break;
		last = ss[0].sink_packets + ss[1].sink_packets;
	}
	for (int i = 0; i < 2; i++) {
		struct tide_port_stats st = {.sz = sizeof(st)};
		struct txc *t = tide_port_txq(f->ports[i], 0)->txc;
		struct rxr *r = tide_port_rxq(f->ports[i], 0)->refill;

		tide_port_stats_get(f->ports[i], &st);
		print_message("port %d: rx %llu nombuf %llu missed %llu tx %llu hangs %llu gen %llu | txc tail %u done %u clean %u marks %u..%u | rxr next %u refill %u | pool in use %u\n",
			      i, (unsigned long long)st.ipackets, (unsigned long long)st.rx_nombuf,
			      (unsigned long long)st.rx_missed, (unsigned long long)st.opackets,
			      (unsigned long long)st.tx_hangs, (unsigned long long)ss[i].gen_packets,
			      t->tail, t->done, t->clean, t->mark_head, t->mark_tail, r->next,
			      r->refill, tide_pool_in_use(f->pool));
	}
	fail_msg("forwarding stalled (%s): sinks %llu / %llu of %llu",
		 ss[0].tx_hangs + ss[1].tx_hangs ? "a Tx queue hung" : "no progress",
		 (unsigned long long)ss[0].sink_packets, (unsigned long long)ss[1].sink_packets,
		 (unsigned long long)per_port);
}

/*
 * Every rs x txfree combination over ring sizes and burst sizes: no buffer lost or freed
 * twice, no hang with the window exactly at rs_thresh, order kept, and the same output
 * whatever the release policy.
 */
static void test_matrix(void **state)
{
	static const unsigned rings[] = {64, 512, 4096};
	static const int bursts[] = {1, 7, 32, 64, -1};
	static const struct {
		enum tide_txfree f;
		unsigned flags;
	} frees[] = {
		{TIDE_TXFREE_EACH, 0},
		{TIDE_TXFREE_BULK, 0},
		{TIDE_TXFREE_FAST, TIDE_TXQ_F_FAST_FREE},
		{TIDE_TXFREE_RECYCLE, 0},
		{TIDE_TXFREE_RECYCLE, TIDE_TXQ_F_FAST_FREE},
		{TIDE_TXFREE_AUTO, 0},
		{TIDE_TXFREE_AUTO, TIDE_TXQ_F_FAST_FREE},
	};
	const uint64_t per_port = 2000;
	uint64_t ref_hash[2] = {0, 0};
	unsigned runs = 0;

	(void)state;
	for (unsigned ri = 0; ri < 3; ri++)
		for (int rs = 0; rs <= TIDE_RS_BURST; rs++)
			for (unsigned fi = 0; fi < sizeof(frees) / sizeof(frees[0]); fi++)
				for (unsigned bi = 0; bi < 5; bi++) {
					struct tide_txq_conf tc = {.sz = sizeof(tc),
								   .rs = (enum tide_rs)rs,
								   .txfree = frees[fi].f,
								   .flags = frees[fi].flags};
					struct tide_port_stats st[2] = {{.sz = sizeof(st[0])},
								 {.sz = sizeof(st[0])}};
					uint64_t seed = 99 + bi;
					struct fwd f;

					fwd_open(&f,
						 "simnic:ports=2,mode=inline,wire=gen,count=2000,ondie=32",
						 rings[ri], 3 * rings[ri] + 256, &tc);
					assert_int_equal(tide_port_start(f.ports[0]), 0);
					assert_int_equal(tide_port_start(f.ports[1]), 0);
					fwd_run(&f, per_port, bursts[bi], &seed);
					tide_port_stats_get(f.ports[0], &st[0]);
					tide_port_stats_get(f.ports[1], &st[1]);
					if (f.sink.errors != 0 || st[0].tx_hangs + st[1].tx_hangs != 0)
						fail_msg("ring %u rs=%s txfree=%s flags=%u burst %d: %u sink errors, %llu hangs",
							 rings[ri], tide_rs_name(tc.rs),
							 tide_txfree_name(tc.txfree), tc.flags,
							 bursts[bi], f.sink.errors,
							 (unsigned long long)(st[0].tx_hangs + st[1].tx_hangs));
					/* Recycling happened where it was asked for. */
					if (tc.txfree == TIDE_TXFREE_RECYCLE || tc.txfree == TIDE_TXFREE_AUTO)
						assert_true(st[0].tx_recycled + st[1].tx_recycled > 0);
					else
						assert_int_equal(st[0].tx_recycled + st[1].tx_recycled, 0);
					/* Same bytes in the same order, whatever the policy. */
					if (runs++ == 0) {
						ref_hash[0] = f.sink.hash[0];
						ref_hash[1] = f.sink.hash[1];
					}
					assert_int_equal(f.sink.hash[0], ref_hash[0]);
					assert_int_equal(f.sink.hash[1], ref_hash[1]);
					fwd_close(&f);
				}
	assert_int_equal(runs, 3 * 3 * 7 * 5);
}

/* A gap above the window is refused at setup; forced past the check, it hangs the queue
 * and the hang is reported, not a silent stall. */
static void test_hang(void **state)
{
	struct tide_txq_conf tc = {.sz = sizeof(tc), .rs_thresh = 64, .free_thresh = 64};
	struct tide_mbuf *pkts[64];
	struct tide_port_stats st = {.sz = sizeof(st)};
	struct tide_pool *pool;
	struct tide_port *p;
	struct tide_txq *txq;
	struct txc *t;
	unsigned sent = 0;

	(void)state;
	tide_log_set_handler(quiet, NULL);
	assert_int_equal(tide_pktpool_create("hang", 1024, 0, 0, NULL, &pool), 0);
	assert_int_equal(tide_port_open("simnic:mode=inline,ondie=40", &p), 0);
	assert_int_equal(tide_port_configure(p, 0, 1), 0);
	assert_int_equal(tide_txq_setup(p, 0, 256, &tc), -EINVAL);
	tc.rs_thresh = 32;
	assert_int_equal(tide_txq_setup(p, 0, 256, &tc), 0);
	txq = tide_port_txq(p, 0);
	t = txq->txc;
	t->rs_thresh = 64; /* a driver bug: marks every 64 slots */
	assert_int_equal(tide_port_start(p), 0);
	for (int round = 0; round < 4; round++) {
		assert_int_equal(tide_mbuf_alloc_bulk(pool, pkts, 64), 0);
		for (int i = 0; i < 64; i++)
			tide_mbuf_append(pkts[i], 64);
		unsigned k = tide_tx_burst(txq, pkts, 64);
		tide_mbuf_free_bulk(pkts + k, 64 - k);
		sent += k;
	}
	tide_port_stats_get(p, &st);
	assert_int_equal(st.tx_hangs, 1);
	assert_true(st.oerrors >= 1);
	/* The hung queue holds its buffers until stop, which gives them all back. */
	assert_true(tide_pool_in_use(pool) > 0);
	tide_port_close(p);
	tide_log_set_handler(NULL, NULL);
	assert_pool_full(pool);
	tide_pool_free(pool);
	assert_true(sent > 0);
}

/* Manual recycling: tide_recycle() moves a bucket only when it is safe. */
static void test_recycle_manual(void **state)
{
	struct tide_txq_conf tc = {.sz = sizeof(tc), .txfree = TIDE_TXFREE_BULK};
	struct tide_pool *other;
	struct tide_mbuf *pkts[64];
	struct tide_port_stats st = {.sz = sizeof(st)};
	struct fwd f;
	struct tide_rxq *rxq;
	struct tide_txq *txq;
	uint16_t n;

	(void)state;
	fwd_open(&f, "simnic:ports=2,mode=inline,wire=gen", 256, 1024, &tc);
	assert_int_equal(tide_pktpool_create("other", 256, 0, 0, NULL, &other), 0);
	assert_int_equal(tide_port_start(f.ports[0]), 0);
	assert_int_equal(tide_port_start(f.ports[1]), 0);
	rxq = tide_port_rxq(f.ports[0], 0);
	txq = tide_port_txq(f.ports[1], 0);

	/* Nothing completed yet: nothing to recycle. */
	assert_int_equal(tide_recycle(rxq, txq), 0);
	/* Receive 64, send them: two completed buckets of 32. */
	n = tide_rx_burst(rxq, pkts, 64);
	assert_int_equal(n, 64);
	assert_int_equal(tide_tx_burst(txq, pkts, n), 64);
	/* This burst first refills the 64 slots the last one emptied (from the pool: txfree=
	 * bulk does not pair), then receives 32: those 32 slots stay empty until the next
	 * burst, which is when an application calls tide_recycle(). */
	n = tide_rx_burst(rxq, pkts, 32);
	assert_int_equal(n, 32);
	tide_mbuf_free_bulk(pkts, n);
	tide_port_stats_get(f.ports[1], &st);
	uint64_t before = st.tx_recycled, pool_before = tide_pool_avail(f.pool);
	/* One bucket of the 64 completed moves into the Rx ring, without the pool. */
	assert_int_equal(tide_recycle(rxq, txq), 32);
	tide_port_stats_get(f.ports[1], &st);
	assert_int_equal(st.tx_recycled - before, 32);
	assert_int_equal(tide_pool_avail(f.pool), pool_before);
	/* The Rx ring is full again: nothing more fits. */
	assert_int_equal(tide_recycle(rxq, txq), 0);

	/* Mismatched pool: buffers from `other` are not recycled into a ring fed by f.pool. */
	assert_int_equal(tide_port_stop(f.ports[0]), 0);
	assert_int_equal(tide_port_start(f.ports[0]), 0);
	assert_int_equal(tide_mbuf_alloc_bulk(other, pkts, 64), 0);
	for (int i = 0; i < 64; i++)
		tide_mbuf_append(pkts[i], 64);
	txq = tide_port_txq(f.ports[0], 0);
	assert_int_equal(tide_tx_burst(txq, pkts, 64), 64);
	n = tide_rx_burst(tide_port_rxq(f.ports[1], 0), pkts, 64);
	tide_mbuf_free_bulk(pkts, n);
	tide_port_stats_get(f.ports[0], &st);
	before = st.tx_recycled;
	assert_int_equal(tide_recycle(tide_port_rxq(f.ports[1], 0), txq), 0);
	tide_port_stats_get(f.ports[0], &st);
	assert_int_equal(st.tx_recycled, before);
	/* ...and they went back to their own pool. */
	assert_int_equal(tide_txq_done_cleanup(txq, 0), 32);
	assert_int_equal(tide_pool_in_use(other), 0);
	fwd_close(&f);
	assert_pool_full(other);
	tide_pool_free(other);
}

/*
 * Recycling, exactly. Inline io forwarding 0->1 and 1->0 in bursts of 32 over 256-slot
 * rings (rs=bucket, rs_thresh 32, Rx refill batch 32): each Tx burst fills and completes
 * one bucket inline, and the Rx refill of the paired queue takes the oldest completed
 * bucket. The model, iteration by iteration (each: Rx 0, Tx 1, Rx 1, Tx 0):
 *   - iteration 1: the Rx rings are full, no refill runs, so no Rx queue is the pairing
 *     hint (the hint is the Rx queue whose refill ran last on this thread; start leaves
 *     none): both Tx bursts are unpaired;
 *   - iteration 2: each refill comes from the pool and sets the hint; each Tx burst pairs;
 *   - from iteration 3 on: each refill takes one bucket of 32 and the paired Tx queue adds
 *     one, so each Tx ring keeps the two buckets of iterations 1 and 2 as backlog;
 *   - stop: those two buckets go back to the pool.
 * So per direction: recycled = sent - 64, exactly, for every policy that recycles (auto and
 * recycle, with or without the fast-free contract), and released = sent (tide/port.h: the
 * recycled buffers are released too; the other 64 went to the pool).
 */
static void test_recycle_exact(void **state)
{
	static const struct {
		enum tide_txfree f;
		unsigned flags;
	} frees[] = {
		{TIDE_TXFREE_AUTO, 0},
		{TIDE_TXFREE_AUTO, TIDE_TXQ_F_FAST_FREE},
		{TIDE_TXFREE_RECYCLE, 0},
		{TIDE_TXFREE_RECYCLE, TIDE_TXQ_F_FAST_FREE},
	};
	const uint64_t per_port = 32 * 50;

	(void)state;
	for (unsigned fi = 0; fi < sizeof(frees) / sizeof(frees[0]); fi++) {
		struct tide_txq_conf tc = {.sz = sizeof(tc), .txfree = frees[fi].f,
					   .flags = frees[fi].flags};
		struct tide_port_stats st[2] = {{.sz = sizeof(st[0])},
								 {.sz = sizeof(st[0])}};
		uint64_t seed = 1;
		struct fwd f;

		fwd_open(&f, "simnic:ports=2,mode=inline,wire=gen,count=1600", 256, 1024, &tc);
		assert_int_equal(tide_port_start(f.ports[0]), 0);
		assert_int_equal(tide_port_start(f.ports[1]), 0);
		fwd_run(&f, per_port, 32, &seed);
		for (int i = 0; i < 2; i++)
			assert_int_equal(tide_port_stop(f.ports[i]), 0);
		for (int i = 0; i < 2; i++) {
			tide_port_stats_get(f.ports[i], &st[i]);
			if (st[i].tx_recycled != per_port - 64 || st[i].tx_released != per_port)
				print_message("txfree=%s flags=%u port %d: sent %llu recycled %llu released %llu\n",
					      tide_txfree_name(tc.txfree), tc.flags, i,
					      (unsigned long long)st[i].opackets,
					      (unsigned long long)st[i].tx_recycled,
					      (unsigned long long)st[i].tx_released);
			assert_int_equal(st[i].opackets, per_port);
			assert_int_equal(st[i].tx_recycled, per_port - 64);
			assert_int_equal(st[i].tx_released, per_port);
		}
		fwd_close(&f);
	}
}

/*
 * The fast recycle path (buffers that keep the fast-free contract, asserted or checked
 * when sent) still checks the pool, and a buffer that broke the contract when it was sent
 * is never recycled: foreign buffers through txfree=fast and txfree=recycle with the
 * contract, held references through txfree=auto, by tide_recycle() and by the automatic
 * refill.
 */
static void test_recycle_fast_checks(void **state)
{
	static const struct {
		enum tide_txfree f;
		unsigned flags;
		bool foreign; /* else: held references */
	} cases[] = {
		{TIDE_TXFREE_FAST, TIDE_TXQ_F_FAST_FREE, true},
		{TIDE_TXFREE_RECYCLE, TIDE_TXQ_F_FAST_FREE, true},
		{TIDE_TXFREE_AUTO, TIDE_TXQ_F_FAST_FREE, true},
		{TIDE_TXFREE_AUTO, 0, true},
		{TIDE_TXFREE_AUTO, 0, false},
		{TIDE_TXFREE_RECYCLE, 0, false},
	};

	(void)state;
	for (unsigned ci = 0; ci < sizeof(cases) / sizeof(cases[0]); ci++)
		for (int manual = 0; manual < 2; manual++) {
			struct tide_txq_conf tc = {.sz = sizeof(tc), .txfree = cases[ci].f,
						   .flags = cases[ci].flags};
			struct tide_mbuf *pkts[64], *held[6 * 64];
			unsigned nheld = 0;
			struct tide_port_stats st = {.sz = sizeof(st)};
			struct tide_pool *other;
			struct tide_rxq *rxq;
			struct tide_txq *txq;
			struct fwd f;
			uint16_t n;

			fwd_open(&f, "simnic:ports=2,mode=inline,wire=gen", 256, 2048, &tc);
			assert_int_equal(tide_pktpool_create("other", 1024, 0, 0, NULL, &other), 0);
			assert_int_equal(tide_port_start(f.ports[0]), 0);
			assert_int_equal(tide_port_start(f.ports[1]), 0);
			rxq = tide_port_rxq(f.ports[1], 0);
			txq = tide_port_txq(f.ports[0], 0);
			if (manual)
				assert_int_equal(tide_recycle_pair(rxq, txq), 0);
			for (int round = 0; round < 6; round++) {
				/* Receive on port 1 (the refill may pull from port 0's Tx)... */
				n = tide_rx_burst(rxq, pkts, 64);
				for (unsigned i = 0; i < n; i++)
					for (unsigned h = 0; h < nheld; h++)
						assert_ptr_not_equal(pkts[i], held[h]);
				tide_mbuf_free_bulk(pkts, n);
				/* ...after port 0 sent 64 that must not come back through it. */
				if (cases[ci].foreign) {
					assert_int_equal(tide_mbuf_alloc_bulk(other, pkts, 64), 0);
					for (int i = 0; i < 64; i++)
						tide_mbuf_append(pkts[i], 64);
				} else {
					/* The application keeps a reference to every one until the
					 * end: none may be recycled. */
					assert_int_equal(tide_mbuf_alloc_bulk(f.pool, pkts, 64), 0);
					for (int i = 0; i < 64; i++) {
						tide_mbuf_append(pkts[i], 64);
						tide_mbuf_refcnt_update(pkts[i], 1);
						held[nheld++] = pkts[i];
					}
				}
				assert_int_equal(tide_tx_burst(txq, pkts, 64), 64);
				if (manual)
					assert_int_equal(tide_recycle(rxq, txq), 0);
			}
			tide_port_stats_get(f.ports[0], &st);
			if (st.tx_recycled != 0)
				fail_msg("txfree=%s flags=%u %s, %s pairing: %llu recycled",
					 tide_txfree_name(tc.txfree), tc.flags,
					 cases[ci].foreign ? "foreign pool" : "held references",
					 manual ? "manual" : "automatic",
					 (unsigned long long)st.tx_recycled);
			for (int i = 0; i < 2; i++)
				assert_int_equal(tide_port_stop(f.ports[i]), 0);
			for (unsigned h = 0; h < nheld; h++)
				tide_mbuf_free(held[h]);
			/* Foreign buffers went back to their own pool, none into port 1's ring. */
			assert_pool_full(other);
			fwd_close(&f);
			tide_pool_free(other);
		}
}

/* Buffers with refcnt > 1 are never recycled; they are released (dropping a reference). */
static void test_recycle_refcnt(void **state)
{
	struct tide_txq_conf tc = {.sz = sizeof(tc), .txfree = TIDE_TXFREE_RECYCLE};
	struct tide_mbuf *pkts[64], *held[64];
	struct tide_port_stats st = {.sz = sizeof(st)};
	struct fwd f;
	uint16_t n;

	(void)state;
	fwd_open(&f, "simnic:ports=2,mode=inline,wire=gen", 256, 1024, &tc);
	assert_int_equal(tide_port_start(f.ports[0]), 0);
	assert_int_equal(tide_port_start(f.ports[1]), 0);
	for (int round = 0; round < 20; round++) {
		n = tide_rx_burst(tide_port_rxq(f.ports[0], 0), pkts, 64);
		for (unsigned i = 0; i < n; i++) {
			tide_mbuf_refcnt_update(pkts[i], 1); /* the application keeps a reference */
			held[i] = pkts[i];
		}
		assert_int_equal(tide_tx_burst(tide_port_txq(f.ports[1], 0), pkts, n), n);
		/* Drop our references only after the queue may have released its own. */
		tide_txq_done_cleanup(tide_port_txq(f.ports[1], 0), 0);
		for (unsigned i = 0; i < n; i++)
			tide_mbuf_free(held[i]);
	}
	tide_port_stats_get(f.ports[1], &st);
	assert_int_equal(st.tx_recycled, 0);
	fwd_close(&f);
}

/*
 * txfree=auto without the contract: packets are checked as they are sent. A mix of packets
 * that keep the contract and packets that break it (another pool, an extra reference) must
 * release each the right way: held buffers are never recycled into an Rx ring while the
 * application still owns them, and every pool comes back full.
 */
static void test_auto_mixed(void **state)
{
	struct tide_txq_conf tc = {.sz = sizeof(tc), .txfree = TIDE_TXFREE_AUTO};
	struct tide_mbuf *pkts[64], *held[256];
	struct tide_port_stats st = {.sz = sizeof(st)};
	struct tide_pool *other;
	unsigned nheld = 0;
	struct fwd f;

	(void)state;
	fwd_open(&f, "simnic:ports=2,mode=inline,wire=gen", 256, 2048, &tc);
	assert_int_equal(tide_pktpool_create("other", 512, 0, 0, NULL, &other), 0);
	assert_int_equal(tide_port_start(f.ports[0]), 0);
	assert_int_equal(tide_port_start(f.ports[1]), 0);
	for (int round = 0; round < 200; round++) {
		uint16_t n = tide_rx_burst(tide_port_rxq(f.ports[0], 0), pkts, 32);

		/* No buffer the application holds may come back from an Rx ring. */
		for (unsigned i = 0; i < n; i++)
			for (unsigned h = 0; h < nheld; h++)
				assert_ptr_not_equal(pkts[i], held[h]);
		if (round % 5 == 1 && n > 0 && nheld < 256) {
			tide_mbuf_refcnt_update(pkts[0], 1);
			held[nheld++] = pkts[0];
		}
		if (round % 7 == 3 && n > 1) {
			/* Swap one packet for a copy from another pool. */
			struct tide_mbuf *m = tide_mbuf_alloc(other);

			assert_non_null(m);
			memcpy(tide_mbuf_append(m, pkts[1]->data_len), tide_mbuf_mtod(pkts[1], void *),
			       pkts[1]->data_len);
			tide_mbuf_free(pkts[1]);
			pkts[1] = m;
		}
		assert_int_equal(tide_tx_burst(tide_port_txq(f.ports[1], 0), pkts, n), n);
	}
	tide_port_stats_get(f.ports[1], &st);
	assert_true(st.tx_recycled > 0);
	assert_int_equal(f.sink.errors, 0);
	for (unsigned h = 0; h < nheld; h++)
		tide_mbuf_free(held[h]);
	fwd_close(&f);
	assert_pool_full(other);
	tide_pool_free(other);
}

/*
 * Buckets smaller than the bursts: several buckets complete between two bursts and the
 * queue must reclaim them all (one completion check per bucket), not refuse packets.
 */
static void test_small_buckets(void **state)
{
	struct tide_mbuf *pkts[64];
	uint64_t refused = 0;

	(void)state;
	for (int rs = 0; rs <= TIDE_RS_BURST; rs++) {
		struct tide_txq_conf tc = {.sz = sizeof(tc), .rs = (enum tide_rs)rs,
					   .rs_thresh = 8, .free_thresh = 32};
		struct fwd f;

		fwd_open(&f, "simnic:ports=2,mode=inline,wire=gen", 256, 1024, &tc);
		assert_int_equal(tide_port_start(f.ports[0]), 0);
		assert_int_equal(tide_port_start(f.ports[1]), 0);
		for (int round = 0; round < 500; round++) {
			uint16_t n = tide_rx_burst(tide_port_rxq(f.ports[0], 0), pkts, 64);
			uint16_t k = tide_tx_burst(tide_port_txq(f.ports[1], 0), pkts, n);

			refused += n - k;
			tide_mbuf_free_bulk(pkts + k, n - k);
		}
		fwd_close(&f);
	}
	/* The device completes everything inline: there is always room. */
	assert_int_equal(refused, 0);
}

/* Idle queue: done_cleanup reclaims what the device reported; stop returns the rest. */
static void test_idle_cleanup(void **state)
{
	(void)state;
	for (int rs = 0; rs <= TIDE_RS_BURST; rs++) {
		struct tide_txq_conf tc = {.sz = sizeof(tc), .rs = (enum tide_rs)rs,
					   .txfree = TIDE_TXFREE_BULK};
		struct tide_mbuf *pkts[10];
		struct tide_pool *pool;
		struct tide_port *p;
		struct tide_txq *txq;
		unsigned cleaned;

		assert_int_equal(tide_pktpool_create("idle", 256, 0, 0, NULL, &pool), 0);
		assert_int_equal(tide_port_open("simnic:mode=inline", &p), 0);
		assert_int_equal(tide_port_configure(p, 0, 1), 0);
		assert_int_equal(tide_txq_setup(p, 0, 256, &tc), 0);
		assert_int_equal(tide_port_start(p), 0);
		txq = tide_port_txq(p, 0);
		assert_int_equal(tide_mbuf_alloc_bulk(pool, pkts, 10), 0);
		for (int i = 0; i < 10; i++)
			tide_mbuf_append(pkts[i], 64);
		assert_int_equal(tide_tx_burst(txq, pkts, 10), 10);
		assert_int_equal(tide_pool_in_use(pool), 10);
		cleaned = tide_txq_done_cleanup(txq, 0);
		/* RS on the burst's last packet (every, burst) lets all 10 be reported; with
		 * fixed buckets the partial bucket has no RS yet and stays until stop. */
		assert_int_equal(cleaned, rs == TIDE_RS_BUCKET ? 0 : 10);
		assert_int_equal(tide_pool_in_use(pool), 10 - cleaned);
		assert_int_equal(tide_port_stop(p), 0);
		assert_pool_full(pool);
		tide_port_close(p);
		tide_pool_free(pool);
	}
}

/* Thread mode: real concurrency between driver and device; counts exact, pools full. */
static void test_thread_mode(void **state)
{
	struct tide_txq_conf tc = {.sz = sizeof(tc), .txfree = TIDE_TXFREE_AUTO,
				   .flags = TIDE_TXQ_F_FAST_FREE};
	uint64_t seed = 1;
	struct fwd f;

	(void)state;
	for (int rs = 0; rs <= TIDE_RS_BURST; rs++) {
		tc.rs = (enum tide_rs)rs;
		fwd_open(&f, "simnic:ports=2,mode=thread,wire=gen,count=20000", 512, 2048, &tc);
		assert_int_equal(tide_port_start(f.ports[0]), 0);
		assert_int_equal(tide_port_start(f.ports[1]), 0);
		fwd_run(&f, 20000, 32, &seed);
		assert_int_equal(f.sink.errors, 0);
		fwd_close(&f);
	}
}

/*
 * Chained packets in Tx bursts, through every specialised simnic Tx function this can reach
 * (checked or unchecked contract, DD or head write-back): a chain that fits is linearized
 * and sent, one too big for its first segment is dropped (counted in oerrors, freed), and
 * the packets after a drop take the next descriptors, also across the ring's wrap. The sink
 * must see exactly the packets sent, in order, with their bytes.
 */
#define CHAIN_MAX 4096

struct chain_sink {
	uint32_t want[CHAIN_MAX];
	uint16_t len[CHAIN_MAX];
	unsigned nwant, seen, bad;
};

static uint8_t chain_byte(uint32_t id, unsigned off)
{
	return (uint8_t)(id * 7u + off);
}

static int chain_check(void *arg, unsigned port, const uint8_t *pkt, unsigned len)
{
	struct chain_sink *s = arg;
	uint32_t id;

	(void)port;
	memcpy(&id, pkt, 4);
	if (s->seen >= s->nwant || id != s->want[s->seen] || len != s->len[s->seen]) {
		if (s->bad++ == 0)
			print_message("sink: packet %u is id %u len %u, expected id %u len %u\n",
				      s->seen, id, len, s->seen < s->nwant ? s->want[s->seen] : 0,
				      s->seen < s->nwant ? s->len[s->seen] : 0);
	} else {
		for (unsigned j = 4; j < len; j++)
			if (pkt[j] != chain_byte(id, j)) {
				s->bad++;
				break;
			}
	}
	s->seen++;
	return 0;
}

/* A packet of @a bytes, chained to a second segment of @b bytes when @b > 0. */
static struct tide_mbuf *chain_pkt(struct tide_pool *p, uint32_t id, unsigned a, unsigned b)
{
	struct tide_mbuf *m = tide_mbuf_alloc(p), *s;
	uint8_t *d;

	assert_non_null(m);
	d = (uint8_t *)tide_mbuf_append(m, (uint16_t)a);
	assert_non_null(d);
	memcpy(d, &id, 4);
	for (unsigned j = 4; j < a; j++)
		d[j] = chain_byte(id, j);
	if (b == 0)
		return m;
	s = tide_mbuf_alloc(p);
	assert_non_null(s);
	d = (uint8_t *)tide_mbuf_append(s, (uint16_t)b);
	assert_non_null(d);
	for (unsigned j = 0; j < b; j++)
		d[j] = chain_byte(id, a + j);
	assert_int_equal(tide_mbuf_chain(m, s), 0);
	return m;
}

static void test_tx_chains(void **state)
{
	static const char *const specs[] = {
		"simnic:mode=inline,wire=gen,ondie=64",
		"simnic:mode=inline,wire=gen,ondie=64,wb=head",
	};
	static const enum tide_txfree frees[] = {TIDE_TXFREE_AUTO, TIDE_TXFREE_BULK};
	static struct chain_sink sink;

	(void)state;
	for (unsigned sp = 0; sp < 2; sp++)
		for (unsigned fi = 0; fi < 2; fi++) {
			struct tide_txq_conf tc = {.sz = sizeof(tc), .txfree = frees[fi]};
			struct tide_mbuf *pkts[40];
			struct tide_port_stats st = {.sz = sizeof(st)};
			struct tide_pool *pool;
			struct tide_port *p;
			struct tide_txq *q;
			uint64_t seed = 14 + sp * 2 + fi, drops = 0;
			uint32_t id = 0;

			memset(&sink, 0, sizeof(sink));
			assert_int_equal(tide_pktpool_create("chains", 1024, 0, 0, NULL, &pool), 0);
			assert_int_equal(tide_port_open(specs[sp], &p), 0);
			assert_int_equal(tide_port_configure(p, 1, 1), 0);
			assert_int_equal(tide_rxq_setup(p, 0, 64, pool, NULL), 0);
			assert_int_equal(tide_txq_setup(p, 0, 64, &tc), 0);
			assert_int_equal(tide_simnic_set_verify(p, chain_check, &sink), 0);
			assert_int_equal(tide_port_start(p), 0);
			q = tide_port_txq(p, 0);
			while (sink.nwant < CHAIN_MAX - 40) {
				unsigned n = 1 + (unsigned)(test_rand(&seed) % 40), k;
				unsigned want0 = sink.nwant;
				uint32_t ids[40];
				uint16_t lens[40];
				bool sent[40];

				for (unsigned i = 0; i < n; i++) {
					unsigned kind = (unsigned)(test_rand(&seed) % 8);
					unsigned a = 60 + (unsigned)(test_rand(&seed) % 200), b = 0;

					if (kind == 0)
						b = 30 + (unsigned)(test_rand(&seed) % 100); /* fits */
					else if (kind == 1)
						a = 1500, b = 1500; /* too big for one buffer */
					ids[i] = id++;
					pkts[i] = chain_pkt(pool, ids[i], a, b);
					lens[i] = (uint16_t)(a + b);
					sent[i] = kind != 1;
				}
				/* Expected before the burst: the inline device delivers inside it. */
				for (unsigned i = 0; i < n; i++)
					if (sent[i]) {
						sink.want[sink.nwant] = ids[i];
						sink.len[sink.nwant++] = lens[i];
					}
				k = tide_tx_burst(q, pkts, (uint16_t)n);
				/* Not taken (ring full): freed here and not expected. */
				sink.nwant = want0;
				for (unsigned i = 0; i < n; i++) {
					if (i >= k) {
						tide_mbuf_free(pkts[i]);
					} else if (sent[i]) {
						sink.want[sink.nwant] = ids[i];
						sink.len[sink.nwant++] = lens[i];
					} else {
						drops++;
					}
				}
				assert_int_equal(sink.bad, 0);
			}
			tide_txq_done_cleanup(q, 0);
			assert_int_equal(tide_port_stats_get(p, &st), 0);
			assert_int_equal(sink.bad, 0);
			assert_int_equal(sink.seen, sink.nwant);
			assert_int_equal(st.opackets, sink.nwant);
			assert_int_equal(st.oerrors, drops);
			assert_true(drops > 100);
			tide_port_close(p);
			tide_pool_cache_flush(pool);
			assert_pool_full(pool);
			tide_pool_free(pool);
		}
}

/* The device model's flow hash (simnic_hw.c), to check what the driver reports. */
uint32_t simnic_flow_hash(const uint8_t *pkt, unsigned len);

/*
 * Every field of a received mbuf (simnic's Rx template and what it inserts), also for
 * buffers that come back recycled after the application changed their fields.
 */
static void test_rx_fields(void **state)
{
	struct tide_txq_conf tc = {.sz = sizeof(tc), .txfree = TIDE_TXFREE_AUTO};
	struct tide_mbuf *pkts[32];
	struct tide_port_stats st = {.sz = sizeof(st)};
	struct tide_pool *pool;
	struct tide_port *p;
	unsigned total = 0;

	(void)state;
	assert_int_equal(tide_pktpool_create("fields", 512, 0, 0, NULL, &pool), 0);
	assert_int_equal(tide_port_open("simnic:mode=inline,wire=gen,size=100", &p), 0);
	assert_int_equal(tide_port_configure(p, 1, 1), 0);
	assert_int_equal(tide_rxq_setup(p, 0, 128, pool, NULL), 0);
	assert_int_equal(tide_txq_setup(p, 0, 128, &tc), 0);
	assert_int_equal(tide_port_start(p), 0);
	for (int round = 0; round < 100; round++) {
		uint16_t n = tide_rx_burst(tide_port_rxq(p, 0), pkts, 32);

		assert_int_equal(n, 32);
		for (unsigned i = 0; i < n; i++) {
			struct tide_mbuf *m = pkts[i];

			assert_int_equal(m->pkt_len, 100);
			assert_int_equal(m->data_len, 100);
			assert_int_equal(m->data_off, tide_pktpool_headroom(pool));
			assert_int_equal(m->refcnt, 1);
			assert_int_equal(m->nb_segs, 1);
			assert_null(m->next);
			assert_ptr_equal(m->pool, pool);
			assert_int_equal(m->buf_len, tide_pktpool_headroom(pool) +
							     tide_pktpool_data_room(pool));
			assert_int_equal(m->port, p->id);
			assert_int_equal(m->ol_flags, TIDE_MBUF_F_RX_RSS_HASH);
			assert_int_equal(m->rss_hash,
					 simnic_flow_hash(tide_mbuf_mtod(m, const uint8_t *), 100));
			assert_int_equal(m->packet_type, 0);
			/* What an application may change before sending the buffer on. */
			m->port = 7;
			m->ol_flags = TIDE_MBUF_F_RX_L3_CKSUM_BAD;
			m->rss_hash = 0xdeadbeef;
			m->packet_type = 9;
			assert_non_null(tide_mbuf_adj(m, 14));
		}
		total += n;
		assert_int_equal(tide_tx_burst(tide_port_txq(p, 0), pkts, n), n);
	}
	assert_int_equal(tide_port_stats_get(p, &st), 0);
	assert_int_equal(st.ipackets, total);
	assert_true(st.tx_recycled > 0); /* the later rounds saw recycled buffers */
	tide_port_close(p);
	tide_pool_cache_flush(pool);
	assert_pool_full(pool);
	tide_pool_free(pool);
}

/* ---- slots without a buffer (txc_burst_hole) ---- */

static int hole_done(void *ctx, uint32_t slot)
{
	(void)ctx;
	(void)slot;
	return 1;
}

static void hole_rs(void *ctx, uint32_t slot)
{
	(void)ctx;
	(void)slot;
}

/*
 * Commit a burst of @npkts buffers from @pool into @t, a hole (a driver's context
 * descriptor) before every packet where @holes has its bit, RS on every slot; then the
 * device completes it all. Returns the slots used.
 */
static unsigned hole_burst(struct txc *t, struct tide_pool *pool, unsigned npkts, unsigned holes)
{
	struct txc_burst b;
	uint32_t first = t->tail, k = 0;

	txc_burst_begin(t, &b);
	for (unsigned i = 0; i < npkts; i++) {
		struct tide_mbuf *m = tide_mbuf_alloc(pool);

		assert_non_null(m);
		if (holes >> i & 1)
			txc_burst_hole(&b, first + k++);
		txc_burst_fill(&b, first + k++, m);
	}
	txc_burst_end(t, &b);
	txc_place_rs(t, first, k, hole_rs, NULL);
	txc_commit(t, k);
	while (txc_advance_dd(t, hole_done, NULL) != 0)
		;
	return k;
}

/*
 * Every txfree policy with holes among the slots: completion releases each buffer once and
 * counts only buffers (tx_released), nothing NULL reaches the pool or an Rx refill, the pool
 * of txfree=auto/fast is learned from the first buffer even when the burst starts with a
 * hole, and once the holes are released the queue is back on its fast way (recycling
 * whole buckets again).
 */
static void test_holes(void **state)
{
	static const struct {
		enum tide_txfree f;
		unsigned flags;
	} cases[] = {
		{TIDE_TXFREE_EACH, 0},	{TIDE_TXFREE_BULK, 0},
		{TIDE_TXFREE_FAST, TIDE_TXQ_F_FAST_FREE},
		{TIDE_TXFREE_RECYCLE, 0}, {TIDE_TXFREE_RECYCLE, TIDE_TXQ_F_FAST_FREE},
		{TIDE_TXFREE_AUTO, 0},	{TIDE_TXFREE_AUTO, TIDE_TXQ_F_FAST_FREE},
	};

	(void)state;
	for (unsigned ci = 0; ci < sizeof(cases) / sizeof(cases[0]); ci++) {
		struct tide_txq_conf conf = {.sz = sizeof(conf), .rs = TIDE_RS_EVERY,
					     .txfree = cases[ci].f, .flags = cases[ci].flags};
		struct txc_drv d = {.advance = txc_advance_none_ool};
		struct tide_txq q = {0};
		struct tide_mbuf *dst[16];
		struct tide_pool *pool;
		struct txc t;
		unsigned slots, got;

		assert_int_equal(tide_pktpool_create("holes", 256, 0, 256, NULL, &pool), 0);
		assert_int_equal(txc_conf_check("holes", 256, 64, false, &conf), 0);
		assert_int_equal(txc_init(&t, &q, 256, &conf, &d), 0);

		/* A hole first: the pool is learned from the buffer after it. */
		slots = hole_burst(&t, pool, 8, 0x55);
		assert_int_equal(slots, 12);
		if (t.track)
			assert_ptr_equal(t.fast_pool, pool);
		assert_int_equal(txc_reclaim(&t, UINT32_MAX), slots);
		assert_int_equal(t.released, 8);
		assert_pool_full(pool);

		/* A recycle over holes takes nothing and releases them the normal way. */
		slots = hole_burst(&t, pool, 12, 0x0f0);
		assert_int_equal(slots, 16);
		got = txc_recycle_into(&t, dst, 16, pool);
		assert_int_equal(got, 0);
		assert_int_equal(txc_reclaim(&t, UINT32_MAX), 0);
		assert_int_equal(t.released, 20);
		assert_int_equal(t.recycled, 0);
		assert_pool_full(pool);

		/* Without holes, a whole bucket is recycled again (and with the contract kept, the
		 * fast way: no per-buffer check). */
		hole_burst(&t, pool, 16, 0);
		assert_int_equal(t.unsafe_left, 0);
		got = txc_recycle_into(&t, dst, 16, pool);
		assert_int_equal(got, 16);
		assert_int_equal(t.recycled, 16);
		assert_int_equal(t.unsafe_left, 0);
		tide_mbuf_free_bulk(dst, 16);
		txc_reclaim(&t, UINT32_MAX);
		assert_int_equal(t.released, 36);
		assert_int_equal(t.clean, t.tail);
		assert_pool_full(pool);

		/* Stop with holes not yet reclaimed: every buffer back, holes not counted. */
		hole_burst(&t, pool, 4, 0x3);
		assert_int_equal(txc_release_all(&t), 6);
		assert_int_equal(t.released, 40);
		assert_pool_full(pool);
		txc_fini(&t);
		tide_pool_free(pool);
	}
}

/*
 * The default free_thresh: 32 (or rs_thresh when larger); on a port that reclaims eagerly,
 * nb_desc - rs_thresh, the most the checks allow. A value the application gives is kept.
 */
static void test_conf_eager(void **state)
{
	static const struct {
		bool eager;
		unsigned nb_desc, rs_thresh, free_thresh, want;
	} cases[] = {
		{false, 256, 0, 0, 32},	  {true, 256, 0, 0, 224},   {true, 1024, 64, 0, 960},
		{true, 256, 128, 0, 128}, {false, 256, 64, 0, 64},  {true, 256, 32, 48, 48},
		{true, 64, 0, 0, 32},
	};

	(void)state;
	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct tide_txq_conf c = {.sz = sizeof(c), .rs_thresh = (uint16_t)cases[i].rs_thresh,
					  .free_thresh = (uint16_t)cases[i].free_thresh};

		assert_int_equal(txc_conf_check("eager", cases[i].nb_desc, 4096, cases[i].eager, &c),
				 0);
		if (c.free_thresh != cases[i].want)
			fail_msg("case %u: free_thresh %u, want %u", i, c.free_thresh, cases[i].want);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_matrix),
		cmocka_unit_test(test_hang),
		cmocka_unit_test(test_recycle_manual),
		cmocka_unit_test(test_recycle_exact),
		cmocka_unit_test(test_recycle_fast_checks),
		cmocka_unit_test(test_recycle_refcnt),
		cmocka_unit_test(test_auto_mixed),
		cmocka_unit_test(test_small_buckets),
		cmocka_unit_test(test_idle_cleanup),
		cmocka_unit_test(test_thread_mode),
		cmocka_unit_test(test_tx_chains),
		cmocka_unit_test(test_rx_fields),
		cmocka_unit_test(test_holes),
		cmocka_unit_test(test_conf_eager),
	};

	return cmocka_run_group_tests(tests, setup_thread, NULL);
}
