/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The quiescent teardown and the Tx queue hand-over, with the interleavings forced rather
 * than hoped for (docs/design/link.md; src/qs.h).
 *
 * Two simnic ports (inline device, generators): port 0's Rx queue is paired by hand with
 * port 1's Tx queue, so port 0's refill takes completed buffers from port 1's Tx engine. A
 * worker lcore W forwards 0 -> 1 on command. The test parks W at the exact point of a race:
 *   - inside port 0's refill, in port 1's Tx engine (its `advance` hook, which
 *     txc_recycle_into calls after the ownership check), or
 *   - inside a port 0 Rx burst (its burst function wrapped), before the driver runs;
 * and runs the control call (stop, queue release) or the other lcore's burst meanwhile.
 * Port 1's driver is simnic wrapped by this test (stop and txq_release note when they are
 * entered), so what the library does while W is parked is seen directly.
 *
 * A parked W is released only after the check, so no check depends on timing: the one
 * bounded wait ("the driver's stop has not been entered 200 ms after W parked") cannot trip
 * on a correct tide, which waits for W, however long.
 *
 * Each case checks one rule of tide/port.h (the last one of src/driver.h):
 *   adopt:       a Tx queue moved to another lcore takes no packets until its old lcore
 *                passed a quiescent point (its refill may be inside the engine);
 *   stop_grace:  stop does not reach the driver while a burst that saw the port running is
 *                still inside; the port starts again afterwards;
 *   stop_owner:  once stop has made the bursts no-ops, no refill follows a pairing into the
 *                stopping port's Tx engine (it belongs to no thread);
 *   stop_straddle: a Tx burst that loaded its call before stop made it a no-op, and
 *                reaches the engine after, cannot take the stopped engine (its lcore would
 *                own it, and follow pairings into it, while the driver stops);
 *   stop_entries: tide_recycle() and tide_txq_done_cleanup() called while the driver stops
 *                (Tx side and Rx side) do nothing; none reaches an engine before the
 *                first start either, and after start the queue is taken again;
 *   release:     a Tx queue release waits for bursts in progress and leaves no pairing
 *                naming the freed engine;
 *   link_owner:  a refill never follows a pairing into a Tx engine another lcore owns;
 *   close_grace: releasing queues (close, configure) costs one grace period in all, not
 *                one per queue;
 *   online:      tide_thread_online() makes grace periods wait for the thread again;
 *   device_step: (driver.h) simnic inline, wire=cross: port 1's driver stop waits for a
 *                port 0 Tx burst begun after port 1's own grace period, whose device step
 *                stores into port 1's Rx ring.
 * Every case ends with every port closed and the pool whole (audit).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <tide/lcore.h>
#include <tide/log.h>
#include <tide/memif.h>
#include <tide/port.h>
#include <tide/vhost.h>

#include "testutil.h"
#include "driver.h"
#include "link.h"
#include "membarrier_fail.h"
#include "qs.h"
#include "quiesce.h"
#include "txc.h"
#include "vhost_front.h"
#include "tmp_util.h"

#define RING 256
#define POOL_N 2048
#define WAIT_MS 10000 /* a step that should happen at once: fail after this long */
#define NEG_MS 200    /* the negative check: nothing may happen while W is parked */

enum park_at { PARK_NONE, PARK_ADVANCE, PARK_RX, PARK_TX };
enum cmd { CMD_NONE, CMD_RX, CMD_FWD, CMD_TX0, CMD_RECYCLE, CMD_CLEANUP, CMD_EXIT };

/* Everything the hooks, the worker and the control side share, under one lock. */
static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	/* hooks */
	txc_advance_fn orig_advance;
	tide_rx_burst_fn orig_rx;
	tide_tx_burst_fn orig_tx;
	const struct tide_driver *orig_drv;
	struct tide_driver wrap_drv;
	void (*on_stop)(struct tide_port *p);
	struct txc *engine; /* port 1's Tx engine */
	enum park_at park_at;
	unsigned park_idx;  /* the thread to park */
	bool parked, go;
	bool stopping;
	unsigned adv_calls, adv_calls_nonowner, adv_calls_stopping;
	bool stop_entered, stop_entered_parked;
	bool release_entered, release_entered_parked;
	bool inner_begun, inner_done; /* the wrapped driver's own stop runs / has returned */
	uint16_t tx_taken; /* what the last wrapped Tx burst took */
	/* worker mailbox */
	enum cmd cmd;
	struct tide_rxq *w_rxq; /* CMD_RX polls this queue (NULL: port 0's) */
	uint16_t result;
	unsigned w_idx;
	bool w_ready;
	/* control thread C */
	bool c_done;
	/* the first broken rule, reported after W is released and everything is closed */
	char failure[256];
} H = {.mu = PTHREAD_MUTEX_INITIALIZER};

static struct tide_pool *pool;
static struct tide_port *ports[2];

static void lock(void)
{
	pthread_mutex_lock(&H.mu);
}

static void unlock(void)
{
	pthread_cond_broadcast(&H.cv);
	pthread_mutex_unlock(&H.mu);
}

static void note_failure(const char *msg)
{
	lock();
	if (H.failure[0] == '\0')
		snprintf(H.failure, sizeof(H.failure), "%s", msg);
	unlock();
}

static void set_flag(bool *f, bool v)
{
	lock();
	*f = v;
	unlock();
}

/* Wait (lock held) until *flag is set, at most @ms. Returns whether it is set. */
static bool wait_flag_locked(const bool *flag, int ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	while (!*flag)
		if (pthread_cond_timedwait(&H.cv, &H.mu, &ts) == ETIMEDOUT)
			break;
	return *flag;
}

static bool wait_flag(const bool *flag, int ms)
{
	bool r;

	lock();
	r = wait_flag_locked(flag, ms);
	unlock();
	return r;
}

/* Park the calling thread here if it is the one armed for @where; until H.go. */
static void park_point(enum park_at where)
{
	lock();
	if (H.park_at == where && tide_thread_index() == H.park_idx) {
		H.park_at = PARK_NONE;
		H.parked = true;
		pthread_cond_broadcast(&H.cv);
		while (!H.go)
			pthread_cond_wait(&H.cv, &H.mu);
		H.parked = false;
	}
	unlock();
}

/* Port 1's Tx engine completion check: reached only from a refill that follows the pairing
 * (txc_recycle_into), after the ownership check. */
static unsigned hook_advance(struct txc *t)
{
	lock();
	H.adv_calls++;
	if (tide_thread_index() != __atomic_load_n(&t->link.owner, __ATOMIC_RELAXED))
		H.adv_calls_nonowner++;
	if (H.stopping)
		H.adv_calls_stopping++;
	unlock();
	park_point(PARK_ADVANCE);
	return H.orig_advance(t);
}

static uint16_t hook_rx(struct tide_rxq *q, struct tide_mbuf **pkts, uint16_t n)
{
	park_point(PARK_RX);
	return H.orig_rx(q, pkts, n);
}

static uint16_t hook_tx(struct tide_txq *q, struct tide_mbuf **pkts, uint16_t n)
{
	uint16_t k;

	park_point(PARK_TX);
	k = H.orig_tx(q, pkts, n);
	lock();
	H.tx_taken = k;
	unlock();
	return k;
}

/* The wrapped driver was entered: note it, and whether W was parked at that moment. */
static void entered(bool *flag, bool *while_parked)
{
	lock();
	*flag = true;
	if (H.parked)
		*while_parked = true;
	unlock();
}

static void wrap_stop(struct tide_port *p)
{
	entered(&H.stop_entered, &H.stop_entered_parked);
	if (H.on_stop)
		H.on_stop(p);
	H.orig_drv->stop(p);
}

static void wrap_txq_release(struct tide_txq *q)
{
	entered(&H.release_entered, &H.release_entered_parked);
	H.orig_drv->txq_release(q);
}

/* ---- the worker lcore ---- */

static int worker_main(void *arg)
{
	struct tide_mbuf *pkts[64];

	(void)arg;
	lock();
	H.w_idx = tide_thread_index();
	H.w_ready = true;
	unlock();
	for (;;) {
		enum cmd c;
		uint16_t n, k = 0;

		/* Blocking: offline, so control calls do not wait for this thread. */
		tide_thread_offline();
		lock();
		while (H.cmd == CMD_NONE)
			pthread_cond_wait(&H.cv, &H.mu);
		c = H.cmd;
		unlock();
		if (c == CMD_EXIT)
			break;
		if (c == CMD_RECYCLE || c == CMD_CLEANUP) {
			/* Port 0's Rx queue, port 1's Tx queue: public calls between bursts. */
			unsigned r = c == CMD_RECYCLE
					     ? tide_recycle(tide_port_rxq(ports[0], 0),
							    tide_port_txq(ports[1], 0))
					     : tide_txq_done_cleanup(tide_port_txq(ports[1], 0), 0);

			tide_thread_offline();
			lock();
			H.result = (uint16_t)r;
			H.cmd = CMD_NONE;
			unlock();
			continue;
		}
		if (c == CMD_TX0) {
			/* Send 32 of its own on port 0 (wire=cross: into port 1's Rx queue). */
			n = 32;
			if (tide_mbuf_alloc_bulk(pool, pkts, n) != 0)
				n = 0;
			for (unsigned j = 0; j < n; j++)
				memset(tide_mbuf_append(pkts[j], 64), (int)j, 64);
			k = tide_tx_burst(tide_port_txq(ports[0], 0), pkts, n);
		} else {
			n = tide_rx_burst(H.w_rxq ? H.w_rxq : tide_port_rxq(ports[0], 0), pkts,
					  c == CMD_FWD ? 64 : 32);
			if (c == CMD_FWD)
				k = tide_tx_burst(tide_port_txq(ports[1], 0), pkts, n);
		}
		tide_mbuf_free_bulk(pkts + k, n - k);
		/* Offline before reporting: the caller's next control call or adoption must
		 * not wait for (or race with) this thread reaching its mailbox. */
		tide_thread_offline();
		lock();
		H.result = c == CMD_FWD || c == CMD_TX0 ? k : n;
		H.cmd = CMD_NONE;
		unlock();
	}
	tide_pool_cache_flush(pool);
	return 0;
}

/* With the lock held: wait until W's mailbox is empty (W finished its command), at most
 * WAIT_MS; the test fails otherwise (@what: which command). */
static void worker_idle_wait_locked(const char *what)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += WAIT_MS / 1000;
	while (H.cmd != CMD_NONE)
		if (pthread_cond_timedwait(&H.cv, &H.mu, &ts) == ETIMEDOUT)
			break;
	if (H.cmd != CMD_NONE) {
		unlock();
		fail_msg("the worker did not finish its %s within %d ms", what, WAIT_MS);
	}
}

/*
 * Post a command once W has finished the one before: W goes offline before it clears its
 * mailbox, so a grace period (and a stop's hook that posts the next command) can end
 * while W still has to report; a command posted then would be cleared by W's report, and
 * its caller would read the earlier command's result.
 */
static void worker_post(enum cmd c)
{
	lock();
	worker_idle_wait_locked("last command");
	H.cmd = c;
	unlock();
}

/* Wait for the posted command to finish; its result. */
static uint16_t worker_wait(void)
{
	uint16_t r;

	lock();
	worker_idle_wait_locked("burst");
	r = H.result;
	unlock();
	return r;
}

static uint16_t worker_do(enum cmd c)
{
	worker_post(c);
	return worker_wait();
}

/* ---- setup ---- */

static struct tide_lcore *worker;

static void hooks_reset(void)
{
	lock();
	H.park_at = PARK_NONE;
	H.parked = H.go = H.stopping = false;
	H.adv_calls = H.adv_calls_nonowner = H.adv_calls_stopping = 0;
	H.stop_entered = H.stop_entered_parked = false;
	H.release_entered = H.release_entered_parked = false;
	H.inner_begun = H.inner_done = false;
	H.tx_taken = 0;
	H.w_ready = false;
	H.on_stop = NULL;
	H.cmd = CMD_NONE;
	H.w_rxq = NULL;
	H.failure[0] = '\0';
	unlock();
}

/* @cross: wire=cross (port 0's Tx arrives on port 1's Rx and back), nothing generated and
 * no forwarding primed; else the generators and W's first forwarded burst. */
static void world_open_wire(bool cross)
{
	struct tide_txq_conf tc = {.sz = sizeof(tc), .txfree = TIDE_TXFREE_AUTO};
	struct txc *t;

	hooks_reset();
	assert_int_equal(tide_pktpool_create("qs", POOL_N, 32, 0, NULL, &pool), 0);
	assert_int_equal(tide_ports_open(cross ? "simnic:ports=2,mode=inline,wire=cross"
					       : "simnic:ports=2,mode=inline,wire=gen,size=64",
					 ports, 2),
			 2);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(tide_port_configure(ports[i], 1, 1), 0);
		assert_int_equal(tide_rxq_setup(ports[i], 0, RING, pool, NULL), 0);
		assert_int_equal(tide_txq_setup(ports[i], 0, RING, &tc), 0);
	}
	/* Port 1: simnic, with stop and Tx queue release observed. */
	H.orig_drv = ports[1]->drv;
	H.wrap_drv = *H.orig_drv;
	H.wrap_drv.stop = wrap_stop;
	H.wrap_drv.txq_release = wrap_txq_release;
	ports[1]->drv = &H.wrap_drv;
	t = tide_port_txq(ports[1], 0)->txc;
	H.engine = t;
	H.orig_advance = t->advance;
	t->advance = hook_advance;
	assert_int_equal(tide_recycle_pair(tide_port_rxq(ports[0], 0), tide_port_txq(ports[1], 0)),
			 0);
	assert_int_equal(tide_port_start(ports[0]), 0);
	assert_int_equal(tide_port_start(ports[1]), 0);
	assert_int_equal(tide_lcore_launch(-1, worker_main, NULL, &worker), 0);
	if (!wait_flag(&H.w_ready, WAIT_MS))
		fail_msg("the worker lcore did not start");
	if (cross)
		return;
	/* W forwards one burst: it owns port 1's Tx queue, which now holds 64 buffers, and port
	 * 0's Rx ring has 64 empty slots that its next burst refills from that queue. */
	assert_int_equal(worker_do(CMD_FWD), 64);
	assert_int_equal(__atomic_load_n(&t->link.owner, __ATOMIC_RELAXED), H.w_idx);
}

static void world_open(void)
{
	world_open_wire(false);
}

static void world_close(void)
{
	int ret = -1;

	worker_post(CMD_EXIT);
	assert_int_equal(tide_lcore_join(worker, &ret), 0);
	assert_int_equal(ret, 0);
	tide_port_close(ports[0]);
	tide_port_close(ports[1]);
	tide_pool_cache_flush(pool);
	assert_pool_full(pool);
	tide_pool_free(pool);
	if (H.failure[0])
		fail_msg("%s", H.failure);
}

/* Arm a park point for W, post a command, and wait until W sits there. Returns whether it
 * does (if not, the point is disarmed and W finishes the command on its own). */
static bool park_worker_try(enum park_at where, enum cmd c)
{
	lock();
	H.park_at = where;
	H.park_idx = H.w_idx;
	H.go = false;
	unlock();
	worker_post(c);
	if (wait_flag(&H.parked, WAIT_MS))
		return true;
	lock();
	H.park_at = PARK_NONE;
	unlock();
	return false;
}

static void park_worker(enum park_at where, enum cmd c)
{
	if (!park_worker_try(where, c)) {
		worker_wait();
		fail_msg("the worker's burst never reached the park point (%s)",
			 where == PARK_ADVANCE ? "the refill did not follow the pairing"
					       : "the Rx burst was not called");
	}
}

static uint16_t release_worker(void)
{
	set_flag(&H.go, true);
	return worker_wait();
}

/* Main's own packets for port 1's Tx queue. */
static uint16_t main_send(unsigned n)
{
	struct tide_mbuf *pkts[64];
	uint16_t k;

	assert_int_equal(tide_mbuf_alloc_bulk(pool, pkts, n), 0);
	for (unsigned i = 0; i < n; i++)
		tide_mbuf_append(pkts[i], 64);
	k = tide_tx_burst(tide_port_txq(ports[1], 0), pkts, (uint16_t)n);
	tide_mbuf_free_bulk(pkts + k, n - k);
	return k;
}

/* ---- the cases ---- */

/*
 * W is inside port 0's refill, taking buffers out of port 1's Tx engine. The main thread
 * now polls port 1's Tx queue (the queue moved lcores): its bursts must take nothing while
 * W is inside, and the queue's slots must not move; once W has passed a burst call (here
 * it goes offline), the queue is the main thread's.
 */
static void test_adopt(void **state)
{
	struct txc *t;
	uint32_t tail;

	(void)state;
	world_open();
	t = H.engine;
	park_worker(PARK_ADVANCE, CMD_RX);
	tail = t->tail;
	for (int i = 0; i < 3; i++)
		if (main_send(32) != 0) {
			note_failure("adopt: the new lcore's Tx burst took packets while the old lcore was still inside a refill from the queue");
			break;
		}
	if (t->tail != tail)
		note_failure("adopt: the Tx ring moved while the old lcore was inside a refill from it");
	/* W's refill goes on and takes its bucket, then W goes offline. */
	assert_int_equal(release_worker(), 32);
	if (__atomic_load_n(&t->recycled, __ATOMIC_RELAXED) == 0)
		note_failure("adopt: the parked refill did not recycle (the case tested nothing)");
	if (main_send(32) != 32)
		note_failure("adopt: the queue was not handed over after the old lcore passed a quiescent point");
	else if (__atomic_load_n(&t->link.owner, __ATOMIC_RELAXED) != tide_thread_index())
		note_failure("adopt: the new lcore sends but does not own the queue");
	world_close();
}

static void *c_stop(void *arg)
{
	(void)arg;
	tide_port_stop(ports[1]);
	set_flag(&H.c_done, true);
	return NULL;
}

static void *c_release(void *arg)
{
	(void)arg;
	/* No Tx queues: queue 0 is released (no Rx queue is, so only its grace period runs). */
	tide_port_configure(ports[1], 1, 0);
	set_flag(&H.c_done, true);
	return NULL;
}

/* Run @fn on another thread as the control thread, while W is parked; check that @entered
 * (set by the wrapped driver) stays clear while W is parked, release W, and wait for @fn. */
static void control_while_parked(void *(*fn)(void *), const bool *entered, const char *what)
{
	pthread_t c;
	char msg[200];

	set_flag(&H.c_done, false);
	/* The main thread has polled queues: offline, so the control call does not wait for it. */
	tide_thread_offline();
	assert_int_equal(pthread_create(&c, NULL, fn, NULL), 0);
	if (wait_flag(entered, NEG_MS)) {
		snprintf(msg, sizeof(msg), "%s: reached the driver while a burst was still inside", what);
		note_failure(msg);
	}
	lock();
	if (H.c_done) {
		snprintf(msg, sizeof(msg), "%s: returned while a burst was still inside", what);
		unlock();
		note_failure(msg);
	} else {
		unlock();
	}
	release_worker();
	if (!wait_flag(&H.c_done, WAIT_MS))
		fail_msg("%s: did not return within %d ms of the burst leaving", what, WAIT_MS);
	pthread_join(c, NULL);
	if (!*entered) {
		snprintf(msg, sizeof(msg), "%s: the driver was never reached", what);
		note_failure(msg);
	}
}

/*
 * W is inside port 0's refill, in port 1's Tx engine (a burst that saw port 1 running).
 * Stopping port 1 must wait for it: the driver's stop gives every Tx buffer back to the
 * pool, the ones W is taking included. Afterwards port 1 starts again and takes packets.
 */
static void test_stop_grace(void **state)
{
	(void)state;
	world_open();
	park_worker(PARK_ADVANCE, CMD_RX);
	control_while_parked(c_stop, &H.stop_entered, "stop");
	if (H.stop_entered_parked)
		note_failure("stop: the driver's stop ran while a burst was inside the Tx engine");
	assert_int_equal(tide_port_start(ports[1]), 0);
	if (main_send(32) != 32)
		note_failure("stop: after stop and start, the Tx queue takes no packets");
	world_close();
}

/* While port 1's driver stops (bursts are no-ops, the grace period passed), W's refill of
 * port 0 runs: it must not take buffers from port 1's Tx engine, which the driver is
 * releasing at the same moment. */
static void stop_during(struct tide_port *p)
{
	(void)p;
	set_flag(&H.stopping, true);
	if (worker_do(CMD_RX) != 32)
		note_failure("port 0 stopped receiving while port 1 stopped");
	set_flag(&H.stopping, false);
}

static void test_stop_owner(void **state)
{
	uint64_t recycled;

	(void)state;
	world_open();
	recycled = __atomic_load_n(&H.engine->recycled, __ATOMIC_RELAXED);
	H.on_stop = stop_during;
	assert_int_equal(tide_port_stop(ports[1]), 0);
	H.on_stop = NULL;
	if (H.adv_calls_stopping != 0 ||
	    __atomic_load_n(&H.engine->recycled, __ATOMIC_RELAXED) != recycled)
		note_failure("stop_owner: a refill followed its pairing into a Tx engine whose port was stopping");
	/* The next start hands the queue to whoever polls it first. */
	assert_int_equal(tide_port_start(ports[1]), 0);
	if (main_send(32) != 32)
		note_failure("stop_owner: after stop and start, the Tx queue takes no packets");
	world_close();
}

/*
 * W is inside a Tx burst of port 1 (it loaded the burst function while the port ran) and
 * has not reached the engine yet. Port 1 stops meanwhile: the grace period waits for W,
 * whose burst then finds the engine stopped and must not take it. Had it taken it, W would
 * own the engine while the driver releases its buffers, and W's refill of port 0, paired
 * with it, would recycle from it (one buffer in port 0's Rx ring and in the pool).
 */
static void test_stop_straddle(void **state)
{
	struct tide_txq *txq;
	pthread_t c;
	uint16_t k;
	int ms;

	(void)state;
	world_open();
	txq = tide_port_txq(ports[1], 0);
	H.orig_tx = txq->call;
	__atomic_store_n(&txq->call, hook_tx, __ATOMIC_RELEASE);
	park_worker(PARK_TX, CMD_FWD);
	H.on_stop = stop_during;
	set_flag(&H.c_done, false);
	tide_thread_offline();
	assert_int_equal(pthread_create(&c, NULL, c_stop, NULL), 0);
	/* Stop unpublishes before its grace period, which waits for W: wait for the former. */
	for (ms = 0; ms < WAIT_MS && __atomic_load_n(&H.engine->link.owner, __ATOMIC_RELAXED) == H.w_idx;
	     ms++)
		usleep(1000);
	if (ms == WAIT_MS)
		note_failure("stop_straddle: stop did not take the Tx engine from its lcore");
	release_worker();
	if (!wait_flag(&H.c_done, WAIT_MS))
		fail_msg("stop_straddle: stop did not return within %d ms of the burst leaving", WAIT_MS);
	pthread_join(c, NULL);
	H.on_stop = NULL;
	__atomic_store_n(&txq->call, H.orig_tx, __ATOMIC_RELEASE);
	lock();
	k = H.tx_taken;
	unlock();
	if (H.adv_calls_stopping != 0)
		note_failure("stop_straddle: the lcore whose Tx burst straddled the stop took the engine, and its refill recycled from it while the driver stopped");
	else if (k != 0)
		note_failure("stop_straddle: a Tx burst straddling the stop put packets into the stopped engine");
	assert_int_equal(tide_port_start(ports[1]), 0);
	if (main_send(32) != 32)
		note_failure("stop_straddle: after stop and start, the Tx queue takes no packets");
	world_close();
}

/* While port 1's driver stops: W's public calls on its Tx queue find it stopped. */
static void entries_during(struct tide_port *p)
{
	unsigned r;

	(void)p;
	set_flag(&H.stopping, true);
	r = worker_do(CMD_RECYCLE);
	if (r != 0 || H.adv_calls_stopping != 0)
		note_failure("stop_entries: tide_recycle() took buffers from a Tx engine whose driver was stopping");
	r = worker_do(CMD_CLEANUP);
	if (r != 0 || H.adv_calls_stopping != 0)
		note_failure("stop_entries: tide_txq_done_cleanup() entered a Tx engine whose driver was stopping");
	set_flag(&H.stopping, false);
}

static const struct tide_driver *rx_orig_drv;
static unsigned rx_stop_recycled;

/* While port 0's driver stops: recycling into its Rx queue does nothing. */
static void rx_wrap_stop(struct tide_port *p)
{
	rx_stop_recycled += worker_do(CMD_RECYCLE);
	rx_orig_drv->stop(p);
}

static void test_stop_entries(void **state)
{
	struct tide_driver wrap0;
	struct tide_port *solo;
	struct txc *t;
	unsigned n;

	(void)state;
	world_open();
	/* W owns port 1's Tx queue (it forwarded); the recycle works while both ports run. */
	if (worker_do(CMD_RECYCLE) != 32)
		note_failure("stop_entries: tide_recycle() did not recycle while both ports ran (the case tests nothing)");
	assert_int_equal(worker_do(CMD_FWD), 64);
	/* Tx side: port 1 stops. */
	H.on_stop = entries_during;
	assert_int_equal(tide_port_stop(ports[1]), 0);
	H.on_stop = NULL;
	assert_int_equal(tide_port_start(ports[1]), 0);
	/* Rx side: port 0 stops while W owns port 1's Tx queue, which has completed buffers. */
	assert_int_equal(worker_do(CMD_FWD), 64);
	rx_orig_drv = ports[0]->drv;
	wrap0 = *rx_orig_drv;
	wrap0.stop = rx_wrap_stop;
	ports[0]->drv = &wrap0;
	rx_stop_recycled = 0;
	assert_int_equal(tide_port_stop(ports[0]), 0);
	ports[0]->drv = rx_orig_drv;
	if (rx_stop_recycled != 0)
		note_failure("stop_entries: tide_recycle() moved buffers into an Rx queue whose driver was stopping");
	assert_int_equal(tide_port_start(ports[0]), 0);
	world_close();
	if (H.failure[0])
		return;

	/* Set up, never started: no entry reaches the engine; after start, one does. */
	hooks_reset();
	assert_int_equal(tide_pktpool_create("qs", POOL_N, 32, 0, NULL, &pool), 0);
	assert_int_equal(tide_port_open("simnic:ports=1,mode=inline,wire=gen,size=64", &solo), 0);
	assert_int_equal(tide_port_configure(solo, 1, 1), 0);
	assert_int_equal(tide_rxq_setup(solo, 0, RING, pool, NULL), 0);
	assert_int_equal(tide_txq_setup(solo, 0, RING, NULL), 0);
	t = tide_port_txq(solo, 0)->txc;
	H.orig_advance = t->advance;
	t->advance = hook_advance;
	n = tide_txq_done_cleanup(tide_port_txq(solo, 0), 0);
	if (n != 0 || H.adv_calls != 0)
		note_failure("stop_entries: tide_txq_done_cleanup() entered the Tx engine of a port never started");
	assert_int_equal(tide_port_start(solo), 0);
	tide_txq_done_cleanup(tide_port_txq(solo, 0), 0);
	if (H.adv_calls == 0 || __atomic_load_n(&t->link.owner, __ATOMIC_RELAXED) != tide_thread_index())
		note_failure("stop_entries: after start, tide_txq_done_cleanup() could not take the idle Tx queue");
	tide_port_close(solo);
	tide_pool_cache_flush(pool);
	assert_pool_full(pool);
	tide_pool_free(pool);
	if (H.failure[0])
		fail_msg("%s", H.failure);
}

/*
 * Port 1 is stopped; W is inside a port 0 Rx burst (it began before the release and may
 * hold what it read of the pairing). Releasing port 1's Tx queue must wait for it, and
 * afterwards no pairing may name the freed engine.
 */
static void test_release(void **state)
{
	struct tide_rxq *rxq;
	struct link_rx *l;

	(void)state;
	world_open();
	assert_int_equal(tide_port_stop(ports[1]), 0);
	rxq = tide_port_rxq(ports[0], 0);
	l = rxq->refill;
	if (link_rx_pair(l) != (uintptr_t)H.engine)
		note_failure("release: the pairing was lost by stop (the case tests nothing)");
	H.orig_rx = rxq->call;
	__atomic_store_n(&rxq->call, hook_rx, __ATOMIC_RELEASE);
	park_worker(PARK_RX, CMD_RX);
	control_while_parked(c_release, &H.release_entered, "txq release");
	__atomic_store_n(&rxq->call, H.orig_rx, __ATOMIC_RELEASE);
	if (H.release_entered_parked)
		note_failure("txq release: the engine was freed while a burst was inside");
	if (link_rx_pair(l) != 0)
		note_failure("txq release: a pairing still names the freed Tx engine");
	/* Port 0's refill works on (from the pool). */
	if (worker_do(CMD_RX) != 32)
		note_failure("txq release: port 0 stopped receiving");
	world_close();
}

/*
 * wire=cross: port 0's Tx step (inside a burst on W) stores packets into port 1's Rx ring.
 * When port 1 stops, the port's grace period covers bursts of port 1 only in effect; a
 * burst of port 0 that begins after it may still be delivering into port 1's Rx queue, so
 * the driver disables the queue and runs a grace period of its own before it takes the
 * ring's buffers back. W enters a port 0 Tx burst after port 1's bursts became no-ops and
 * parks there: port 1's driver stop must not return while W is inside.
 */
static void inner_stop(struct tide_port *p)
{
	(void)p;
	H.orig_tx = tide_port_txq(ports[0], 0)->call;
	__atomic_store_n(&tide_port_txq(ports[0], 0)->call, hook_tx, __ATOMIC_RELEASE);
	/* On this (control) thread failures are noted, not raised. */
	if (!park_worker_try(PARK_TX, CMD_TX0))
		note_failure("device step: the worker's port 0 Tx burst was never called");
	set_flag(&H.inner_begun, true);
}

static void wrap_stop_inner(struct tide_port *p)
{
	entered(&H.stop_entered, &H.stop_entered_parked);
	inner_stop(p);
	H.orig_drv->stop(p);
	set_flag(&H.inner_done, true);
}

static void test_device_step(void **state)
{
	pthread_t c;

	(void)state;
	world_open_wire(true);
	H.wrap_drv.stop = wrap_stop_inner;
	set_flag(&H.c_done, false);
	tide_thread_offline();
	assert_int_equal(pthread_create(&c, NULL, c_stop, NULL), 0);
	if (!wait_flag(&H.inner_begun, WAIT_MS))
		note_failure("device step: port 1's driver stop was never reached");
	else if (H.parked && wait_flag(&H.inner_done, NEG_MS))
		note_failure("device step: port 1's driver stop returned while a port 0 Tx burst (whose device step delivers into port 1) was inside");
	release_worker();
	if (!wait_flag(&H.c_done, WAIT_MS))
		fail_msg("device step: stop did not return within %d ms of the burst leaving", WAIT_MS);
	pthread_join(c, NULL);
	H.wrap_drv.stop = wrap_stop;
	__atomic_store_n(&tide_port_txq(ports[0], 0)->call, H.orig_tx, __ATOMIC_RELEASE);
	assert_int_equal(tide_port_start(ports[1]), 0);
	world_close();
}

/* The main thread owns port 1's Tx queue (it sent last); W's refill of port 0, paired
 * with it, must not follow the pairing. */
static void test_link_owner(void **state)
{
	(void)state;
	world_open();
	/* W goes offline in its mailbox: the queue passes to the main thread at once. */
	if (main_send(32) != 32)
		note_failure("link_owner: the main thread could not take over an idle Tx queue");
	lock();
	H.adv_calls = H.adv_calls_nonowner = 0;
	unlock();
	if (worker_do(CMD_RX) != 32)
		note_failure("link_owner: port 0 stopped receiving");
	if (H.adv_calls_nonowner != 0 || H.adv_calls != 0)
		note_failure("link_owner: a refill followed its pairing into a Tx engine another lcore owns");
	world_close();
}

/* ---- grace periods per control call ---- */

static bool cg_stop;

/* A registered lcore that keeps polling a port of its own (online throughout), with a
 * pause between polls as an application's work would make. */
static int close_grace_poller(void *arg)
{
	struct tide_rxq *q = tide_port_rxq(arg, 0);
	struct tide_mbuf *pkts[32];
	struct timespec pause = {0, 200000};

	while (!__atomic_load_n(&cg_stop, __ATOMIC_RELAXED)) {
		uint16_t n = tide_rx_burst(q, pkts, 32);

		tide_mbuf_free_bulk(pkts, n);
		nanosleep(&pause, NULL);
	}
	tide_thread_offline();
	tide_pool_cache_flush(pool);
	return 0;
}

static struct tide_port *cg_open(unsigned nq)
{
	struct tide_port *p;

	assert_int_equal(tide_port_open("null:queues=16,tx=ring", &p), 0);
	assert_int_equal(tide_port_configure(p, nq, nq), 0);
	for (unsigned q = 0; q < nq; q++) {
		assert_int_equal(tide_rxq_setup(p, q, RING, pool, NULL), 0);
		assert_int_equal(tide_txq_setup(p, q, RING, NULL), 0);
	}
	return p;
}

static uint64_t qs_calls(void)
{
	return __atomic_load_n(&qs_synchronize_calls, __ATOMIC_RELAXED);
}

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/*
 * Releasing queues costs one grace period however many queues go (each waits for every
 * online lcore's next burst call): closing a running port of 16 + 16 queues runs two (its
 * stop's and the release's), a stopped one one, and configuring 16 queues down to 1 one.
 * Counted, not timed; the time is printed for information.
 */
static void test_close_grace(void **state)
{
	struct tide_port *busy, *p;
	struct tide_lcore *lc;
	uint64_t c0, t0;
	unsigned running, stopped, reconf;
	int ret = -1;

	(void)state;
	assert_int_equal(tide_pktpool_create("qscg", POOL_N * 8, 32, 0, NULL, &pool), 0);
	busy = cg_open(1);
	assert_int_equal(tide_port_start(busy), 0);
	__atomic_store_n(&cg_stop, false, __ATOMIC_RELAXED);
	assert_int_equal(tide_lcore_launch(-1, close_grace_poller, busy, &lc), 0);
	/* Online from its first burst call on. */
	for (int ms = 0; __atomic_load_n(&tide_port_rxq(busy, 0)->stats.polls, __ATOMIC_RELAXED) < 2;
	     ms++) {
		if (ms == WAIT_MS)
			fail_msg("close_grace: the polling lcore did not poll");
		usleep(1000);
	}

	p = cg_open(16);
	assert_int_equal(tide_port_start(p), 0);
	c0 = qs_calls();
	t0 = now_us();
	tide_port_close(p);
	running = (unsigned)(qs_calls() - c0);
	fprintf(stderr, "close of a running port with 16 Rx + 16 Tx queues: %u grace periods, %llu us\n",
		running, (unsigned long long)(now_us() - t0));

	p = cg_open(16);
	assert_int_equal(tide_port_start(p), 0);
	assert_int_equal(tide_port_stop(p), 0);
	c0 = qs_calls();
	tide_port_close(p);
	stopped = (unsigned)(qs_calls() - c0);

	p = cg_open(16);
	c0 = qs_calls();
	assert_int_equal(tide_port_configure(p, 1, 1), 0);
	reconf = (unsigned)(qs_calls() - c0);
	tide_port_close(p);

	__atomic_store_n(&cg_stop, true, __ATOMIC_RELAXED);
	assert_int_equal(tide_lcore_join(lc, &ret), 0);
	assert_int_equal(ret, 0);
	tide_port_close(busy);
	tide_pool_cache_flush(pool);
	assert_pool_full(pool);
	tide_pool_free(pool);
	if (running != 2 || stopped != 1 || reconf != 1)
		fail_msg("grace periods: close of a running 16+16-queue port %u (want 2), of a stopped one %u (want 1), configure 16 -> 1 queues %u (want 1)",
			 running, stopped, reconf);
}

static int online_main(void *arg)
{
	(void)arg;
	tide_thread_online();
	set_flag(&H.w_ready, true);
	lock();
	while (!H.go)
		pthread_cond_wait(&H.cv, &H.mu);
	unlock();
	tide_thread_offline();
	return 0;
}

static void *c_grace(void *arg)
{
	(void)arg;
	qs_synchronize();
	set_flag(&H.c_done, true);
	return NULL;
}

/*
 * tide_thread_online() (tide/lcore.h): a thread that has not called a burst since it went
 * offline (here: never) is waited for by a grace period once it called it, until it goes
 * offline again (or reaches a quiescent point).
 */
static void test_online(void **state)
{
	struct tide_lcore *lc;
	pthread_t c;
	int ret = -1;

	(void)state;
	hooks_reset();
	assert_int_equal(tide_lcore_launch(-1, online_main, NULL, &lc), 0);
	if (!wait_flag(&H.w_ready, WAIT_MS))
		fail_msg("online: the thread did not start");
	set_flag(&H.c_done, false);
	tide_thread_offline();
	assert_int_equal(pthread_create(&c, NULL, c_grace, NULL), 0);
	if (wait_flag(&H.c_done, NEG_MS))
		note_failure("online: a grace period ended while a thread that called tide_thread_online() had not passed a quiescent point");
	set_flag(&H.go, true);
	if (!wait_flag(&H.c_done, WAIT_MS))
		fail_msg("online: the grace period did not end within %d ms of the thread going offline", WAIT_MS);
	pthread_join(c, NULL);
	assert_int_equal(tide_lcore_join(lc, &ret), 0);
	if (H.failure[0])
		fail_msg("%s", H.failure);
}

/* ---- a membarrier() that fails after the probe (src/quiesce.h) ---- */

/* mb_errno, mb_failed and the syscall() that fails the barrier: membarrier_fail.h. */
static int mb_cut_fd = -1; /* closed once armed (vhost: its own control thread acts at once) */
static unsigned mb_logged; /* log lines about it */

static void mb_log(enum tide_log_level level, const char *comp, const char *msg, void *user)
{
	(void)user;
	if (strstr(msg, "membarrier() failed") != NULL)
		__atomic_add_fetch(&mb_logged, 1, __ATOMIC_RELAXED);
	fprintf(stderr, "%s %s: %s\n", tide_log_level_name(level), comp, msg);
}

static void *c_wait_down(void *arg);

static struct tide_port *mb_port;  /* the port whose peer goes away */
static enum tide_log_level mb_level;

/* A pool, the worker lcore, the log watched (warnings included). */
static void mb_world_open(void)
{
	hooks_reset();
	mb_level = tide_log_get_level();
	tide_log_set_level(TIDE_LOG_WARNING);
	tide_log_set_handler(mb_log, NULL);
	assert_int_equal(tide_pktpool_create("qsmb", POOL_N, 32, 0, NULL, &pool), 0);
}

static void mb_worker_start(void)
{
	assert_int_equal(tide_lcore_launch(-1, worker_main, NULL, &worker), 0);
	if (!wait_flag(&H.w_ready, WAIT_MS))
		fail_msg("the worker lcore did not start");
}

static bool link_up(struct tide_port *p)
{
	struct tide_memif_info mi = {.sz = sizeof(mi)};
	struct tide_vhost_info vi = {.sz = sizeof(vi)};

	if (tide_memif_info_get(p, &mi) == 0)
		return mi.connected;
	assert_int_equal(tide_vhost_info_get(p, &vi), 0);
	return vi.connected;
}

/*
 * The peer of mb_port has just gone away (its socket is closed) and the kernel now refuses
 * membarrier(). W sits inside an Rx burst call of mb_port, past its quiescent point, before
 * the driver runs: a burst whose store of busy the control thread cannot be sure to see
 * without the barrier (it may have read live == 1 already). The control thread polls the
 * port, takes the link down and gives up the peer's memory (memif: unmaps the regions; vhost:
 * unmaps guest memory): that must wait until W has left its burst call.
 */
static void mb_teardown_while_parked(const char *what)
{
	struct tide_rxq *rxq = tide_port_rxq(mb_port, 0);
	unsigned failed0, logged0;
	pthread_t c;
	char msg[240];

	H.orig_rx = rxq->call;
	__atomic_store_n(&rxq->call, hook_rx, __ATOMIC_RELEASE);
	H.w_rxq = rxq;
	park_worker(PARK_RX, CMD_RX);
	failed0 = __atomic_load_n(&mb_failed, __ATOMIC_RELAXED);
	logged0 = __atomic_load_n(&mb_logged, __ATOMIC_RELAXED);
	__atomic_store_n(&mb_errno, EPERM, __ATOMIC_RELAXED);
	if (mb_cut_fd >= 0) {
		close(mb_cut_fd);
		mb_cut_fd = -1;
	}
	set_flag(&H.c_done, false);
	tide_thread_offline();
	assert_int_equal(pthread_create(&c, NULL, c_wait_down, NULL), 0);
	if (wait_flag(&H.c_done, NEG_MS)) {
		snprintf(msg, sizeof(msg), "%s: membarrier() failed and the link went down (the peer's memory released) while a burst call begun before was still running",
			 what);
		note_failure(msg);
	}
	release_worker();
	if (!wait_flag(&H.c_done, WAIT_MS))
		fail_msg("%s: the link did not go down within %d ms of the burst leaving", what,
			 WAIT_MS);
	pthread_join(c, NULL);
	__atomic_store_n(&mb_errno, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&rxq->call, H.orig_rx, __ATOMIC_RELEASE);
	H.w_rxq = NULL;
	if (__atomic_load_n(&mb_failed, __ATOMIC_RELAXED) == failed0) {
		snprintf(msg, sizeof(msg), "%s: no barrier was asked for at the teardown (the case tests nothing)", what);
		note_failure(msg);
	} else if (__atomic_load_n(&mb_logged, __ATOMIC_RELAXED) == logged0) {
		snprintf(msg, sizeof(msg), "%s: the failed membarrier() was not logged", what);
		note_failure(msg);
	}
}

/* Control thread: poll mb_port until its link is down. */
static void *c_wait_down(void *arg)
{
	struct timespec t0, t;

	(void)arg;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		tide_port_poll_ctl(mb_port);
		if (!link_up(mb_port))
			break;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 > WAIT_MS) {
			note_failure("the link did not go down after the peer went away");
			break;
		}
		sched_yield();
	}
	set_flag(&H.c_done, true);
	return NULL;
}

static void mb_world_close(void)
{
	int ret = -1;

	worker_post(CMD_EXIT);
	assert_int_equal(tide_lcore_join(worker, &ret), 0);
	assert_int_equal(ret, 0);
	tide_port_close(mb_port);
	mb_port = NULL;
	tide_pool_cache_flush(pool);
	assert_pool_full(pool);
	tide_pool_free(pool);
	tide_log_set_handler(NULL, NULL);
	tide_log_set_level(mb_level);
	if (H.failure[0])
		fail_msg("%s", H.failure);
}

/* Poll @p (and nothing else: the peer runs on its own) until its link is up. */
static void wait_link_up(struct tide_port *p, void (*also)(void))
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		tide_port_poll_ctl(p);
		if (also)
			also();
		if (link_up(p))
			return;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 > WAIT_MS)
			fail_msg("the link did not come up within %d ms", WAIT_MS);
		sched_yield();
	}
}

/* The memif server, in a child process that serves until it is killed. */
static void memif_peer_serve(const char *sock)
{
	struct tide_pool *pp;
	struct tide_port *srv;
	char spec[200];
	struct timespec ms = {0, 1000000};

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	snprintf(spec, sizeof(spec), "memif:socket=%s,role=server,id=3", sock);
	if (tide_pktpool_create("peer", 1024, 32, 0, NULL, &pp) != 0 ||
	    tide_port_open(spec, &srv) != 0 || tide_port_configure(srv, 1, 1) != 0 ||
	    tide_rxq_setup(srv, 0, RING, pp, NULL) != 0 || tide_txq_setup(srv, 0, RING, NULL) != 0 ||
	    tide_port_start(srv) != 0)
		_exit(1);
	for (;;) {
		tide_port_poll_ctl(srv);
		nanosleep(&ms, NULL); /* a service loop's pace, not a synchronisation */
	}
}

/* memif: the client (this process) loses its server (another process, killed). */
static void test_memif_barrier_fails(void **state)
{
	char dir[64], sock[96], spec[200];
	pid_t peer;
	int st;

	(void)state;
	snprintf(dir, sizeof(dir), "%s/tide-qsmb-XXXXXX", test_tmp());
	assert_non_null(mkdtemp(dir));
	snprintf(sock, sizeof(sock), "%s/m.sock", dir);
	peer = fork();
	assert_true(peer >= 0);
	if (peer == 0)
		memif_peer_serve(sock);
	mb_world_open();
	snprintf(spec, sizeof(spec), "memif:socket=%s,role=client,id=3", sock);
	assert_int_equal(tide_port_open(spec, &mb_port), 0);
	assert_int_equal(tide_port_configure(mb_port, 1, 1), 0);
	assert_int_equal(tide_rxq_setup(mb_port, 0, RING, pool, NULL), 0);
	assert_int_equal(tide_txq_setup(mb_port, 0, RING, NULL), 0);
	assert_int_equal(tide_port_start(mb_port), 0);
	wait_link_up(mb_port, NULL);
	mb_worker_start();
	assert_int_equal(kill(peer, SIGKILL), 0);
	assert_int_equal(waitpid(peer, &st, 0), peer);
	mb_teardown_while_parked("memif");
	mb_world_close();
	unlink(sock);
	rmdir(dir);
}

static struct tide_port *vh_port;

static void vh_poll(void)
{
	tide_port_poll_ctl(vh_port);
}

/* vhost: the frontend (tests/vhost_front.h, in this process) closes its socket. */
static void test_vhost_barrier_fails(void **state)
{
	char path[108], spec[160];
	struct fe f;

	(void)state;
	snprintf(path, sizeof(path), "%s/tide-qsmb-%d.sock", test_tmp(), (int)getpid());
	snprintf(spec, sizeof(spec), "vhost:socket=%s,role=server", path);
	mb_world_open();
	assert_int_equal(tide_port_open(spec, &mb_port), 0);
	vh_port = mb_port;
	assert_int_equal(tide_port_configure(mb_port, 1, 1), 0);
	assert_int_equal(tide_rxq_setup(mb_port, 0, RING, pool, NULL), 0);
	assert_int_equal(tide_txq_setup(mb_port, 0, RING, NULL), 0);
	assert_int_equal(tide_port_start(mb_port), 0);
	fe_init(&f);
	fe_connect(&f, path);
	fe_handshake(&f, FE_TO_VRINGS,
		     VIRTIO_BIT(VIRTIO_F_VERSION_1) | VIRTIO_BIT(VHOST_USER_F_PROTOCOL_FEATURES),
		     vh_poll);
	wait_link_up(mb_port, NULL);
	mb_worker_start();
	mb_cut_fd = f.sock; /* the frontend goes away once the worker is parked */
	f.sock = -1;
	mb_teardown_while_parked("vhost");
	mb_world_close();
	fe_fini(&f);
	unlink(path);
}

static int setup(void **state)
{
	pthread_condattr_t a;

	(void)state;
	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(&H.cv, &a);
	pthread_condattr_destroy(&a);
	return tide_thread_register() < 0;
}

int main(int argc, char **argv)
{
	const struct CMUnitTest mb_tests[] = {
		cmocka_unit_test(test_memif_barrier_fails),
		cmocka_unit_test(test_vhost_barrier_fails),
	};
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_adopt),
		cmocka_unit_test(test_stop_grace),
		cmocka_unit_test(test_stop_owner),
		cmocka_unit_test(test_stop_straddle),
		cmocka_unit_test(test_stop_entries),
		cmocka_unit_test(test_release),
		cmocka_unit_test(test_link_owner),
		cmocka_unit_test(test_device_step),
		cmocka_unit_test(test_close_grace),
		cmocka_unit_test(test_online),
	};

	if (argc > 1 && strcmp(argv[1], "membarrier") == 0) {
		if (quiesce_kind() == 0) {
			fprintf(stderr, "membarrier() is not available here: no barrier to fail\n");
			return 77;
		}
		return cmocka_run_group_tests(mb_tests, setup, NULL);
	}
	return cmocka_run_group_tests(tests, setup, NULL);
}
