/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Control-plane chaos: two lcores forward over simnic (inline generator, inline cross wire
 * with several Tx queues delivering into one Rx queue, device thread), a ring pair and a
 * memif pair (server and client in this process, control plane polled here) while
 * the control thread, at random, stops and starts ports, closes and reopens them,
 * reconfigures queues, re-pairs recycling and moves streams between the lcores. After
 * every step the lcores park, every port stops, and every pool must be whole: nothing
 * lost, nothing freed twice (TIDE_POOL_DEBUG tracking), nothing left behind.
 *
 * What the library promises (tide/port.h): control calls may run while other threads poll
 * any port; recycling pairs never follow a queue that is stopped, gone or polled by another
 * thread. What the application does itself, as this test does: it unpublishes a queue
 * handle from its lcores and waits for them to pass the top of their loop before it closes
 * the queue, and hands a queue to another lcore the same way.
 *
 * One step in two (when the streams allow) goes for the recycle link's races: a refill
 * paired by hand with another stream's Tx queue on the same lcore, then that queue's port
 * stopped and started, or its stream moved between the lcores, many times over.
 *
 * CHAOS_SECONDS (default 10) bounds the run, at least 10 steps (and sets the stop storm to
 * 100 stops a second of it); CHAOS_SEED picks the sequence (printed). The long run: make
 * chaos.
 */
#include <errno.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <tide/lcore.h>
#include <tide/log.h>
#include <tide/port.h>

#include "testutil.h"
#include "tmp_util.h"

#define NWORKERS 2
#define NWORLDS 5
#define NQ 2
#define NSTREAMS (NWORLDS * 2 * NQ)
#define RING 256
#define POOL_N 4096

enum { W_GEN_INLINE, W_CROSS_INLINE, W_GEN_THREAD, W_RING, W_MEMIF };

static const char *const world_names[NWORLDS] = {"simnic inline gen", "simnic inline cross",
						  "simnic thread gen", "ring pair", "memif pair"};

struct world {
	struct tide_pool *pool;
	struct tide_port *ports[2];
	unsigned nq[2];          /* configured queue pairs per port */
	bool inject;             /* nothing generates: lcores put packets in */
	uint64_t forwarded;      /* Tx packets over the whole run */
	char ring_name[32];
	char sock[64];
};

/* A stream: receive on (port, q) of a world, send on the other port's queue q. */
struct stream {
	struct tide_rxq *rx;
	struct tide_txq *tx;
	struct tide_pool *pool;
	bool inject;
};

struct worker {
	struct stream *slot[NSTREAMS]; /* published by the control thread (release) */
	uint64_t iter;                 /* top of the loop: holds no handle there */
	bool parked;
	struct tide_lcore *lc;
	unsigned idx;
};

static struct world worlds[NWORLDS];
static struct stream streams[NSTREAMS];
static int owner_of[NSTREAMS]; /* worker that has the stream, -1: none */
static struct worker workers[NWORKERS];
static bool quit, pause_req;
static uint16_t burst = 32; /* packets per burst (set before the lcores start) */
static uint64_t seed;

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* How long a wait for the lcores may take before the test calls them stuck: 20 s natively;
 * under qemu-user (the aarch64 cross build), which can hold a spinning thread off its CPU for
 * tens of seconds (43 s seen), 90 s, inside the test's 240 s there. */
static uint64_t stall_ms(void)
{
	return test_emulated() ? 90000 : 20000;
}

static void quiet(enum tide_log_level l, const char *c, const char *m, void *u)
{
	/* Expected refusals (re-pairing an Rx queue that has no refill); the checks below
	 * catch what matters. */
	(void)l;
	(void)c;
	(void)m;
	(void)u;
}

/* ---- the lcores ---- */

static void inject(struct stream *s)
{
	struct tide_mbuf *m[512];
	uint16_t k, n = burst / 4 ? burst / 4 : 1;

	if (tide_mbuf_alloc_bulk(s->pool, m, n) != 0)
		return;
	for (unsigned i = 0; i < n; i++) {
		uint8_t *d = (uint8_t *)tide_mbuf_append(m[i], 64);

		memset(d, 0, 64);
		d[12] = 0x08; /* IPv4, so that the cross wire spreads by flow */
		d[26 + (i & 3)] = (uint8_t)(i * 37 + 1);
	}
	k = tide_tx_burst(s->tx, m, n);
	if (k < n)
		tide_mbuf_free_bulk(m + k, (unsigned)(n - k));
}

static int worker_main(void *arg)
{
	struct worker *w = arg;
	struct tide_mbuf *pkts[512];

	while (!__atomic_load_n(&quit, __ATOMIC_ACQUIRE)) {
		/* Release: pairs with the control thread's acquire in wait_workers(); every
		 * burst on a handle unpublished before the previous top is over. */
		__atomic_store_n(&w->iter, w->iter + 1, __ATOMIC_RELEASE);
		if (__atomic_load_n(&pause_req, __ATOMIC_ACQUIRE)) {
			tide_thread_offline();
			__atomic_store_n(&w->parked, true, __ATOMIC_RELEASE);
			while (__atomic_load_n(&pause_req, __ATOMIC_ACQUIRE) &&
			       !__atomic_load_n(&quit, __ATOMIC_ACQUIRE))
				tide_pause();
			__atomic_store_n(&w->parked, false, __ATOMIC_RELEASE);
			continue;
		}
		for (unsigned i = 0; i < NSTREAMS; i++) {
			/* Acquire: pairs with publish(); the stream's fields are set. */
			struct stream *s = __atomic_load_n(&w->slot[i], __ATOMIC_ACQUIRE);
			uint16_t n, k;

			if (s == NULL)
				continue;
			n = tide_rx_burst(s->rx, pkts, burst);
			if (n == 0) {
				if (s->inject)
					inject(s);
				continue;
			}
			k = tide_tx_burst(s->tx, pkts, n);
			if (k < n)
				tide_mbuf_free_bulk(pkts + k, (unsigned)(n - k));
		}
	}
	for (unsigned i = 0; i < NWORLDS; i++)
		if (worlds[i].pool)
			tide_pool_cache_flush(worlds[i].pool);
	return 0;
}

/* Wait until every lcore has passed the top of its loop twice: a burst on a handle that
 * was unpublished before the call is over. */
static void wait_workers(void)
{
	uint64_t seen[NWORKERS], deadline = now_ms() + stall_ms();

	for (unsigned i = 0; i < NWORKERS; i++)
		seen[i] = __atomic_load_n(&workers[i].iter, __ATOMIC_ACQUIRE);
	for (unsigned i = 0; i < NWORKERS; i++)
		while (workers[i].lc != NULL &&
		       __atomic_load_n(&workers[i].iter, __ATOMIC_ACQUIRE) < seen[i] + 2 &&
		       !__atomic_load_n(&workers[i].parked, __ATOMIC_ACQUIRE)) {
			if (now_ms() > deadline)
				fail_msg("lcore %u stuck at iteration %llu (seed %llu)", i,
					 (unsigned long long)seen[i], (unsigned long long)seed);
			sched_yield();
		}
}

static void publish(unsigned s, int w)
{
	owner_of[s] = w;
	if (w >= 0)
		__atomic_store_n(&workers[w].slot[s], &streams[s], __ATOMIC_RELEASE);
}

static void unpublish(unsigned s)
{
	if (owner_of[s] >= 0)
		__atomic_store_n(&workers[owner_of[s]].slot[s], NULL, __ATOMIC_RELEASE);
}

/* ---- worlds ---- */

static unsigned stream_id(unsigned w, unsigned port, unsigned q)
{
	return (w * 2 + port) * NQ + q;
}

static void world_setup_port(unsigned w, unsigned p, unsigned nq, enum tide_txfree f)
{
	struct world *wd = &worlds[w];
	struct tide_txq_conf tc = {.sz = sizeof(tc), .txfree = f};

	if (f == TIDE_TXFREE_FAST)
		tc.flags = TIDE_TXQ_F_FAST_FREE;
	assert_int_equal(tide_port_configure(wd->ports[p], nq, nq), 0);
	for (unsigned q = 0; q < nq; q++) {
		assert_int_equal(tide_rxq_setup(wd->ports[p], q, RING, wd->pool, NULL), 0);
		assert_int_equal(tide_txq_setup(wd->ports[p], q, RING, &tc), 0);
	}
	wd->nq[p] = nq;
}

static void world_open(unsigned w)
{
	struct world *wd = &worlds[w];
	char spec[160];

	switch (w) {
	case W_GEN_INLINE:
		snprintf(spec, sizeof(spec), "simnic:ports=2,queues=%u,mode=inline,wire=gen", NQ);
		break;
	case W_CROSS_INLINE:
		snprintf(spec, sizeof(spec), "simnic:ports=2,queues=%u,mode=inline,wire=cross", NQ);
		wd->inject = true;
		break;
	case W_GEN_THREAD:
		snprintf(spec, sizeof(spec), "simnic:ports=2,queues=%u,mode=thread,wire=gen,rate=2000000",
			 NQ);
		break;
	case W_MEMIF:
		wd->inject = true;
		snprintf(wd->sock, sizeof(wd->sock), "%s/tide-chaos-%d.sock", test_tmp(),
			 (int)getpid());
		snprintf(spec, sizeof(spec), "memif:socket=%s,role=server,rings=%u", wd->sock, NQ);
		assert_int_equal(tide_port_open(spec, &wd->ports[0]), 0);
		snprintf(spec, sizeof(spec), "memif:socket=%s,role=client,rings=%u", wd->sock, NQ);
		assert_int_equal(tide_port_open(spec, &wd->ports[1]), 0);
		spec[0] = '\0';
		break;
	default:
		wd->inject = true;
		snprintf(wd->ring_name, sizeof(wd->ring_name), "chaos%d", (int)getpid());
		snprintf(spec, sizeof(spec), "ring:name=%s,queues=%u", wd->ring_name, NQ);
		assert_int_equal(tide_port_open(spec, &wd->ports[0]), 0);
		snprintf(spec, sizeof(spec), "ring:name=%s,queues=%u,peer=yes", wd->ring_name, NQ);
		assert_int_equal(tide_port_open(spec, &wd->ports[1]), 0);
		spec[0] = '\0';
	}
	if (spec[0])
		assert_int_equal(tide_ports_open(spec, wd->ports, 2), 2);
	for (unsigned p = 0; p < 2; p++)
		world_setup_port(w, p, NQ, TIDE_TXFREE_AUTO);
}

/* Point the world's streams at its current queues (NULL where a queue does not exist). */
static void world_streams(unsigned w)
{
	struct world *wd = &worlds[w];

	for (unsigned p = 0; p < 2; p++)
		for (unsigned q = 0; q < NQ; q++) {
			struct stream *s = &streams[stream_id(w, p, q)];

			s->rx = q < wd->nq[p] ? tide_port_rxq(wd->ports[p], q) : NULL;
			s->tx = q < wd->nq[p ^ 1] ? tide_port_txq(wd->ports[p ^ 1], q) : NULL;
			s->pool = wd->pool;
			s->inject = wd->inject;
		}
}

static void world_publish(unsigned w)
{
	world_streams(w);
	for (unsigned p = 0; p < 2; p++)
		for (unsigned q = 0; q < NQ; q++) {
			unsigned s = stream_id(w, p, q);

			if (streams[s].rx && streams[s].tx)
				publish(s, owner_of[s] >= 0 ? owner_of[s] : (int)(test_rand(&seed) % NWORKERS));
		}
}

static void world_unpublish(unsigned w)
{
	for (unsigned s = stream_id(w, 0, 0); s < stream_id(w + 1, 0, 0); s++)
		unpublish(s);
	wait_workers();
}

static void world_count(unsigned w)
{
	for (unsigned p = 0; p < 2; p++) {
		struct tide_port_stats st = {.sz = sizeof(st)};

		tide_port_stats_get(worlds[w].ports[p], &st);
		worlds[w].forwarded += st.opackets;
		tide_port_stats_reset(worlds[w].ports[p]);
	}
}

static void world_close(unsigned w)
{
	world_count(w);
	for (unsigned p = 0; p < 2; p++) {
		tide_port_close(worlds[w].ports[p]);
		worlds[w].ports[p] = NULL;
	}
}

/* ---- the steps ---- */

/* The control thread's share of memif: drive the handshake until both ends are up (a
 * step stops ports, which takes the link down), or give up after a while: a step that runs
 * with the link down is a case worth having too. */
static void memif_ctl(void)
{
	struct world *wd = &worlds[W_MEMIF];
	uint64_t deadline = now_ms() + 500;

	for (;;) {
		struct tide_link l0 = {0}, l1 = {0};

		for (unsigned p = 0; p < 2; p++)
			if (wd->ports[p] != NULL)
				tide_port_poll_ctl(wd->ports[p]);
		if (wd->ports[0] == NULL || wd->ports[1] == NULL || now_ms() > deadline)
			return;
		tide_port_link_get(wd->ports[0], &l0);
		tide_port_link_get(wd->ports[1], &l1);
		if (l0.up && l1.up)
			return;
		sched_yield();
	}
}

/* Let the lcores forward for a moment (a number of their loops, not a time). */
static void let_run(void)
{
	unsigned n = 1 + (unsigned)(test_rand(&seed) % 4);

	memif_ctl();
	for (unsigned i = 0; i < n; i++)
		wait_workers();
}

static struct tide_port *random_port(unsigned *w_out, unsigned *p_out)
{
	unsigned w = (unsigned)(test_rand(&seed) % NWORLDS), p = (unsigned)(test_rand(&seed) % 2);

	*w_out = w;
	*p_out = p;
	return worlds[w].ports[p];
}

/*
 * The races of the recycle link, made frequent: an lcore's refill of one stream's Rx queue
 * is paired by hand with the Tx queue of another stream of the same lcore (so the refill
 * really takes buffers from it), then that Tx queue's port is stopped and started while
 * the lcore goes on polling the Rx queue (the stopping engine must belong to no thread),
 * or its stream moves to the other lcore (which must not adopt the queue before the old
 * lcore passed a quiescent point). Returns NULL when no such pair of streams exists now.
 */
static const char *cross_pair_step(void)
{
	unsigned s = (unsigned)(test_rand(&seed) % NSTREAMS), s2 = 0, found = 0;
	int w = owner_of[s];

	if (w < 0 || workers[w].slot[s] == NULL)
		return NULL;
	/* Another stream of the same lcore whose Rx queue can take this Tx queue's buffers. */
	for (unsigned i = 0; i < NSTREAMS; i++)
		if (i != s && owner_of[i] == w && workers[w].slot[i] != NULL &&
		    test_rand(&seed) % ++found == 0)
			s2 = i;
	if (found == 0 || tide_recycle_pair(streams[s2].rx, streams[s].tx) != 0)
		return NULL;
	let_run();
	if (test_rand(&seed) % 2) {
		struct tide_port *port = streams[s].tx->port;

		for (unsigned i = 0; i < 16; i++) {
			assert_int_equal(tide_port_stop(port), 0);
			assert_int_equal(tide_port_start(port), 0);
		}
		let_run();
		return "cross-pair, stop/start";
	}
	/* To the other lcore and back, 16 times: each move away is one adoption while the old
	 * lcore's refill follows the pairing. */
	for (unsigned i = 0; i < 32; i++) {
		unpublish(s);
		wait_workers();
		publish(s, (w + 1 + (int)i) % NWORKERS);
		wait_workers();
	}
	let_run();
	return "cross-pair, move";
}

static const char *step(void)
{
	unsigned w, p, s;
	struct tide_port *port;
	const char *what;

	/* One step in two: the recycle link's races (when the streams allow one). */
	if (test_rand(&seed) % 2 == 0 && (what = cross_pair_step()) != NULL)
		return what;
	port = random_port(&w, &p);
	switch (test_rand(&seed) % 6) {
	case 0: /* stop a port while the lcores poll it (and the peer sends into it), often */
		for (unsigned i = 0; i < 16; i++) {
			assert_int_equal(tide_port_stop(port), 0);
			if (i == 0)
				let_run();
			assert_int_equal(tide_port_start(port), 0);
		}
		return "stop/start";
	case 1: /* close both ports of a world and open them again */
		world_unpublish(w);
		world_close(w);
		world_open(w);
		for (unsigned i = 0; i < 2; i++)
			assert_int_equal(tide_port_start(worlds[w].ports[i]), 0);
		world_publish(w);
		return "close/reopen";
	case 2: /* another queue count, and another release policy */
		world_unpublish(w);
		assert_int_equal(tide_port_stop(port), 0);
		world_setup_port(w, p, 1 + (unsigned)(test_rand(&seed) % NQ),
				 (enum tide_txfree)(test_rand(&seed) % 5));
		assert_int_equal(tide_port_start(port), 0);
		world_publish(w);
		return "reconfigure";
	case 3: { /* pair by hand, across ports and lcores, or unpair */
		unsigned w2, p2;
		struct tide_port *other = random_port(&w2, &p2);
		struct tide_rxq *rq = tide_port_rxq(port, (unsigned)(test_rand(&seed) % worlds[w].nq[p]));
		struct tide_txq *tq = tide_port_txq(other, (unsigned)(test_rand(&seed) % worlds[w2].nq[p2]));
		int rc = tide_recycle_pair(rq, test_rand(&seed) % 3 ? tq : NULL);

		assert_true(rc == 0 || rc == -ENOTSUP);
		let_run();
		return "re-pair";
	}
	case 4: /* hand a stream to the other lcore */
		s = (unsigned)(test_rand(&seed) % NSTREAMS);
		if (owner_of[s] >= 0 && workers[owner_of[s]].slot[s] != NULL) {
			int to = (owner_of[s] + 1) % NWORKERS;

			unpublish(s);
			wait_workers();
			publish(s, to);
		}
		let_run();
		return "move";
	default: /* stop a port and tear a Tx queue down and up again while paired */
		assert_int_equal(tide_port_stop(port), 0);
		{
			struct tide_txq_conf tc = {.sz = sizeof(tc)};
			unsigned q = (unsigned)(test_rand(&seed) % worlds[w].nq[p]);
			unsigned sid = stream_id(w, p ^ 1, q);

			unpublish(sid);
			wait_workers();
			assert_int_equal(tide_txq_setup(port, q, RING, &tc), 0);
			streams[sid].tx = tide_port_txq(port, q);
			if (streams[sid].rx != NULL && q < worlds[w].nq[p ^ 1])
				publish(sid, owner_of[sid]);
		}
		assert_int_equal(tide_port_start(port), 0);
		let_run();
		return "txq re-setup";
	}
}

/* Park the lcores, stop everything, and check every pool is whole. */
static void audit_all(unsigned n, const char *what)
{
	uint64_t deadline = now_ms() + stall_ms();

	__atomic_store_n(&pause_req, true, __ATOMIC_RELEASE);
	for (unsigned i = 0; i < NWORKERS; i++)
		while (!__atomic_load_n(&workers[i].parked, __ATOMIC_ACQUIRE)) {
			if (now_ms() > deadline)
				fail_msg("lcore %u did not park", i);
			sched_yield();
		}
	for (unsigned w = 0; w < NWORLDS; w++) {
		struct tide_pool_audit a;
		struct tide_pool_stats ps = {.sz = sizeof(ps)};

		for (unsigned p = 0; p < 2; p++)
			assert_int_equal(tide_port_stop(worlds[w].ports[p]), 0);
		world_count(w);

		tide_pool_stats_get(worlds[w].pool, &ps);
		if (tide_pool_audit(worlds[w].pool, &a) != 0 || a.free != a.n || a.duplicates != 0 ||
		    ps.debug_errors != 0)
			fail_msg("step %u (%s), %s: pool has %u of %u free, %u found twice, %u state mismatches, %llu double frees/gets refused (seed %llu)",
				 n, what, world_names[w], a.free, a.n, a.duplicates, a.state_mismatch,
				 (unsigned long long)ps.debug_errors, (unsigned long long)seed);
		for (unsigned p = 0; p < 2; p++)
			assert_int_equal(tide_port_start(worlds[w].ports[p]), 0);
	}
	__atomic_store_n(&pause_req, false, __ATOMIC_RELEASE);
	memif_ctl();
}

static void test_chaos(void **state)
{
	const char *secs = getenv("CHAOS_SECONDS"), *sd = getenv("CHAOS_SEED");
	uint64_t end, s0, steps = 0;

	(void)state;
	seed = sd ? strtoull(sd, NULL, 0) : (uint64_t)time(NULL) ^ (uint64_t)getpid() << 20;
	if (seed == 0)
		seed = 1;
	s0 = seed;
	end = now_ms() + (secs ? strtoull(secs, NULL, 0) : 10) * 1000;
	print_message("chaos: seed %llu\n", (unsigned long long)s0);
	tide_log_set_handler(quiet, NULL);
	memset(workers, 0, sizeof(workers));
	memset(worlds, 0, sizeof(worlds));
	memset(owner_of, 0xff, sizeof(owner_of));
	__atomic_store_n(&quit, false, __ATOMIC_RELEASE);
	for (unsigned w = 0; w < NWORLDS; w++) {
		char name[32];

		snprintf(name, sizeof(name), "chaos%u", w);
		assert_int_equal(tide_pktpool_create(name, POOL_N, 64, 0, NULL, &worlds[w].pool), 0);
		world_open(w);
		for (unsigned p = 0; p < 2; p++)
			assert_int_equal(tide_port_start(worlds[w].ports[p]), 0);
	}
	for (unsigned w = 0; w < NWORLDS; w++)
		world_publish(w);
	for (unsigned i = 0; i < NWORKERS; i++) {
		workers[i].idx = i;
		assert_int_equal(tide_lcore_launch(-1, worker_main, &workers[i], &workers[i].lc), 0);
	}
	/* At least 10 steps however slow the machine: the bound is a duration, not a result. */
	while (now_ms() < end || steps < 10) {
		const char *what = step();

		audit_all((unsigned)steps, what);
		steps++;
	}
	__atomic_store_n(&quit, true, __ATOMIC_RELEASE);
	for (unsigned i = 0; i < NWORKERS; i++)
		assert_int_equal(tide_lcore_join(workers[i].lc, NULL), 0);
	for (unsigned w = 0; w < NWORLDS; w++) {
		world_close(w);
		assert_pool_full(worlds[w].pool);
		tide_pool_free(worlds[w].pool);
		print_message("chaos: %-20s %llu packets sent\n", world_names[w],
			      (unsigned long long)worlds[w].forwarded);
		if (worlds[w].forwarded == 0)
			fail_msg("%s forwarded nothing in %llu steps", world_names[w],
				 (unsigned long long)steps);
	}
	print_message("chaos: %llu steps, seed %llu, every pool whole after each\n",
		      (unsigned long long)steps, (unsigned long long)s0);
}

/*
 * A storm of stops on alternate ends of a ring pair while an lcore forwards through both:
 * once tide_port_stop() returned, no burst of that port may still be running (its grace
 * period), so its packet counters stand still while the lcore keeps polling it; and the
 * driver's drain of its rings, which would race such a burst, loses or doubles nothing
 * (pool audit, double-free tracking).
 */
static void test_stop_storm(void **state)
{
	const char *secs = getenv("CHAOS_SECONDS");
	unsigned cycles = 100u * (unsigned)(secs ? strtoul(secs, NULL, 0) : 10);
	struct tide_pool_stats ps = {.sz = sizeof(ps)};
	struct tide_pool_audit a;
	char spec[64];

	(void)state;
	memset(workers, 0, sizeof(workers));
	memset(worlds, 0, sizeof(worlds));
	memset(owner_of, 0xff, sizeof(owner_of));
	__atomic_store_n(&quit, false, __ATOMIC_RELEASE);
	/* Long bursts (512 packets) keep the lcore inside a burst most of the time. */
	burst = 512;
	assert_int_equal(tide_pktpool_create("storm", 8192, 64, 0, NULL, &worlds[W_RING].pool), 0);
	snprintf(worlds[W_RING].ring_name, sizeof(worlds[W_RING].ring_name), "storm%d", (int)getpid());
	snprintf(spec, sizeof(spec), "ring:name=%s", worlds[W_RING].ring_name);
	assert_int_equal(tide_port_open(spec, &worlds[W_RING].ports[0]), 0);
	snprintf(spec, sizeof(spec), "ring:name=%s,peer=yes", worlds[W_RING].ring_name);
	assert_int_equal(tide_port_open(spec, &worlds[W_RING].ports[1]), 0);
	worlds[W_RING].inject = true;
	for (unsigned p = 0; p < 2; p++) {
		assert_int_equal(tide_port_configure(worlds[W_RING].ports[p], 1, 1), 0);
		assert_int_equal(tide_rxq_setup(worlds[W_RING].ports[p], 0, 2048, worlds[W_RING].pool, NULL), 0);
		assert_int_equal(tide_txq_setup(worlds[W_RING].ports[p], 0, 2048, NULL), 0);
		assert_int_equal(tide_port_start(worlds[W_RING].ports[p]), 0);
		worlds[W_RING].nq[p] = 1;
	}
	world_streams(W_RING);
	publish(stream_id(W_RING, 0, 0), 0);
	publish(stream_id(W_RING, 1, 0), 0);
	assert_int_equal(tide_lcore_launch(-1, worker_main, &workers[0], &workers[0].lc), 0);
	wait_workers();
	for (unsigned i = 0; i < cycles; i++) {
		struct tide_port *p = worlds[W_RING].ports[i & 1];
		struct tide_port_stats st0 = {.sz = sizeof(st0)}, st1 = {.sz = sizeof(st1)};

		assert_int_equal(tide_port_stop(p), 0);
		/* Stopped means no burst of it is still running: its counters stand still
		 * while the lcore goes on polling it. */
		tide_port_stats_get(p, &st0);
		wait_workers();
		tide_port_stats_get(p, &st1);
		if (st1.ipackets != st0.ipackets || st1.opackets != st0.opackets)
			fail_msg("stop %u returned while a burst of %s was running: rx %llu -> %llu, tx %llu -> %llu afterwards",
				 i, tide_port_name(p), (unsigned long long)st0.ipackets,
				 (unsigned long long)st1.ipackets, (unsigned long long)st0.opackets,
				 (unsigned long long)st1.opackets);
		assert_int_equal(tide_port_start(p), 0);
	}
	__atomic_store_n(&quit, true, __ATOMIC_RELEASE);
	assert_int_equal(tide_lcore_join(workers[0].lc, NULL), 0);
	world_close(W_RING);
	tide_pool_stats_get(worlds[W_RING].pool, &ps);
	assert_int_equal(tide_pool_audit(worlds[W_RING].pool, &a), 0);
	print_message("storm: %u stops, %llu packets sent, %u of %u free, %llu refused\n", cycles,
		      (unsigned long long)worlds[W_RING].forwarded, a.free, a.n,
		      (unsigned long long)ps.debug_errors);
	assert_int_equal(ps.debug_errors, 0);
	assert_int_equal(a.free, a.n);
	assert_true(worlds[W_RING].forwarded > 0);
	tide_pool_free(worlds[W_RING].pool);
	worlds[W_RING].pool = NULL;
	burst = 32;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stop_storm),
		cmocka_unit_test(test_chaos),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
