/* SPDX-License-Identifier: BSD-3-Clause */
/* The lcore loop of tide-fwd, its Tx buffers, and the TSC clock used for cycle counts. */
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define FWD_HAVE_TSC 1
#endif

#include "fwd.h"
#include "inline.h" /* src/: the one spelling of a forced inline */

static const char *const drop_names[FWD_DROP_NR] = {
    [FWD_DROP_NOT_IPV4] = "not_ipv4",	      [FWD_DROP_BAD_HEADER] = "bad_header",
    [FWD_DROP_BAD_CHECKSUM] = "bad_checksum", [FWD_DROP_TTL_EXPIRED] = "ttl_expired",
    [FWD_DROP_NO_ROUTE] = "no_route",	      [FWD_DROP_SAME_PORT] = "same_port",
    [FWD_DROP_TX_FULL] = "tx_full",	      [FWD_DROP_NO_TXQ] = "no_txq",
    [FWD_DROP_OFFLOAD] = "offload",
};

const char *fwd_drop_name(enum fwd_drop d)
{
	return (unsigned)d < FWD_DROP_NR ? drop_names[d] : "?";
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t fwd_tsc(void)
{
#ifdef FWD_HAVE_TSC
	return __rdtsc();
#else
	return mono_ns();
#endif
}

/*
 * Calibrated once against CLOCK_MONOTONIC over 50 ms; the first call (made by the main
 * thread before the lcores start) pays for it. Invariant TSC assumed, as on any x86 of the
 * last decade.
 */
double fwd_tsc_hz(void)
{
	static double hz;

	if (hz == 0) {
#ifdef FWD_HAVE_TSC
		uint64_t n0 = mono_ns(), t0 = fwd_tsc(), n1, t1;
		struct timespec d = {.tv_nsec = 50 * 1000 * 1000};

		nanosleep(&d, NULL);
		n1 = mono_ns();
		t1 = fwd_tsc();
		hz = (double)(t1 - t0) * 1e9 / (double)(n1 - n0);
#else
		hz = 1e9;
#endif
	}
	return hz;
}

void fwd_tx_flush(struct fwd_lcore *lc)
{
	for (unsigned i = 0; i < lc->ndirty; i++) {
		uint16_t port = lc->dirty[i];
		struct fwd_txbuf *b = &lc->txb[port];
		struct tide_txq *q = lc->txq[port];
		uint16_t k = tide_likely(q != NULL) ? tide_tx_burst(q, b->pkts, b->n) : 0;

		lc->sent += k;
		/* Packets and bytes sent are the port's own counters (tide_port_stats_get);
		 * only what the queue refused is this program's to count. */
		if (k < b->n) {
			tide_mbuf_free_bulk(b->pkts + k, (unsigned)(b->n - k));
			fwd_stat_add(&lc->ctr[port].drops[q ? FWD_DROP_TX_FULL : FWD_DROP_NO_TXQ],
				     (uint64_t)(b->n - k));
		}
		b->n = 0;
	}
	lc->ndirty = 0;
}

/*
 * --packets: take up to @want packets of the shared budget. Returns how many this burst may
 * handle (0: the budget is spent); fwd_budget_put() gives back what it did not use.
 */
static uint16_t budget_take(struct fwd_ctx *ctx, uint16_t want)
{
	int64_t left = __atomic_fetch_sub(&ctx->budget, want, __ATOMIC_RELAXED);

	if (left <= 0) {
		__atomic_fetch_add(&ctx->budget, want, __ATOMIC_RELAXED);
		return 0;
	}
	return left < want ? (uint16_t)left : want;
}

static void budget_put(struct fwd_ctx *ctx, int64_t unused)
{
	if (unused != 0)
		__atomic_fetch_add(&ctx->budget, unused, __ATOMIC_RELAXED);
}

static uint64_t refused(const struct fwd_lcore *lc)
{
	uint64_t n = 0;

	for (unsigned p = 0; p < lc->ctx->nports; p++)
		n += lc->ctr[p].drops[FWD_DROP_TX_FULL] + lc->ctr[p].drops[FWD_DROP_NO_TXQ];
	return n;
}

/*
 * One stream, once. With a --packets budget a burst takes its size from the budget first
 * and gives back what it did not receive (txonly: did not build, or built but could not
 * send), so the run ends at exactly the count asked for. Returns the packets received, or
 * -1 when the budget is spent and every packet of it handled: the lcore has nothing left to
 * do (and stops, so that it does not spin until the main thread notices: instruction
 * counts stay proportional to packets).
 */
TIDE_ALWAYS_INLINE void tx_flush(struct fwd_lcore *lc, const bool ol)
{
	if (ol)
		fwd_tx_flush_ol(lc);
	else
		fwd_tx_flush(lc);
}

TIDE_ALWAYS_INLINE int
poll_stream(struct fwd_lcore *lc, const struct fwd_stream *s, struct tide_mbuf **pkts,
	    uint16_t burst, const bool no_rx, const bool budgeted, const bool ol)
{
	struct fwd_ctx *ctx = lc->ctx;
	uint16_t want = burst, n;
	uint64_t seq0 = 0, ref0 = 0;
	int64_t unused;

	if (budgeted) {
		want = budget_take(ctx, burst);
		if (want == 0)
			return __atomic_load_n(&ctx->budget_done, __ATOMIC_RELAXED) <
			       (int64_t)ctx->cfg->packets ? 0 : -1;
	}
	if (no_rx) {
		seq0 = lc->seq;
		if (budgeted)
			ref0 = refused(lc);
		ctx->engine->burst(lc, s, pkts, want);
		if (lc->ndirty != 0)
			tx_flush(lc, ol);
		if (budgeted) {
			unused = (int64_t)(burst - (lc->seq - seq0)) + (int64_t)(refused(lc) - ref0);
			budget_put(ctx, unused);
			__atomic_fetch_add(&ctx->budget_done, (int64_t)burst - unused,
					   __ATOMIC_RELAXED);
		}
		return 0;
	}
	n = tide_rx_burst(s->rxq, pkts, want);
	if (budgeted) {
		budget_put(ctx, (int64_t)(burst - n));
		if (n != 0)
			__atomic_fetch_add(&ctx->budget_done, (int64_t)n, __ATOMIC_RELAXED);
	}
	if (n != 0)
		ctx->engine->burst(lc, s, pkts, n);
	if (lc->ndirty != 0)
		tx_flush(lc, ol);
	return n;
}

void fwd_idle(struct fwd_lcore *lc)
{
	for (unsigned p = 0; p < lc->ctx->nports; p++)
		if (lc->txq[p] != NULL)
			tide_txq_done_cleanup(lc->txq[p], 0);
}

TIDE_ALWAYS_INLINE void lcore_loop(struct fwd_lcore *lc, const bool no_rx,
							    const bool budgeted, const bool ol)
{
	struct fwd_ctx *ctx = lc->ctx;
	const uint16_t burst = (uint16_t)ctx->cfg->burst;
	struct tide_mbuf *pkts[FWD_BURST_MAX];
	uint64_t t0 = fwd_tsc(), t1;
	const bool intr = ctx->cfg->rx_intr && !no_rx;
	unsigned idle = 0, got = 0;

	while (!__atomic_load_n(&ctx->stop, __ATOMIC_RELAXED)) {
		const bool was_idle = !got;

		got = 0;
		if (was_idle) {
			if (intr && ++idle >= FWD_IDLE_ROUNDS) {
				fwd_rx_sleep(lc, pkts);
				idle = 0;
			}
			fwd_idle(lc);
		} else {
			idle = 0;
		}
		if (lc->nstreams == 0)
			tide_pause(); /* an lcore left without streams by the mapping */
		for (unsigned i = 0; i < lc->nstreams; i++) {
			const struct fwd_stream *s = &lc->streams[i];
			const uint64_t sent0 = lc->sent;
			int n = poll_stream(lc, s, pkts, burst, no_rx, budgeted, ol);

			got |= (unsigned)(n > 0);
			t1 = fwd_tsc();
			/* Idle: a poll that received nothing (txonly: sent nothing). */
			fwd_ctr_poll(&lc->ctr[s->port], &lc->pend[s->port], t1 - t0,
				     n <= 0 && lc->sent == sent0);
			t0 = t1;
			if (budgeted && n < 0)
				return;
		}
	}
}

int fwd_lcore_main(void *arg)
{
	struct fwd_lcore *lc = arg;
	struct fwd_ctx *ctx = lc->ctx;
	const bool no_rx = ctx->engine->flags & FWD_ENGINE_F_NO_RX;

	/* The variants are chosen once: no per-packet test of the mode. Packets carry Tx
	 * requests only from an Rx queue with offloads enabled (sw_ol): without one, the
	 * flush is the plain one. */
	if (ctx->sw_ol && !no_rx && ctx->cfg->packets == 0)
		lcore_loop(lc, false, false, true);
	else if (ctx->sw_ol && !no_rx)
		lcore_loop(lc, false, true, true);
	else if (ctx->cfg->packets == 0 && !no_rx)
		lcore_loop(lc, false, false, false);
	else if (ctx->cfg->packets == 0)
		lcore_loop(lc, true, false, false);
	else if (!no_rx)
		lcore_loop(lc, false, true, false);
	else
		lcore_loop(lc, true, true, false);
	/* Leave nothing in this thread's cache: the pool must look whole once ports stop. */
	tide_pool_cache_flush(ctx->pool);
	return 0;
}
