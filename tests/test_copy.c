/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The copy helpers of the copy-mode drivers (src/copy.h):
 *  - copy_stream() writes exactly the bytes asked for, at every length 1..4096, and none
 *    around them;
 *  - copy_adapt, the choice tx_stores=auto makes between cached and streaming stores, fed
 *    with made-up burst times: it probes the other way after `interval` epochs, switches
 *    when two probes running sent faster by more than a fifth (one is not enough), goes
 *    back otherwise and probes half as often (down to every 1024 epochs), does not measure
 *    the bursts right after a change of way, compares a probe with the best settled epoch
 *    since the last probe, and never moves under tx_stores=cache or stream.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "copy.h"

static void test_stream_copy(void **state)
{
	static uint8_t src[4096 + 64], dst[4096 + 128] __attribute__((aligned(64)));

	(void)state;
	for (unsigned i = 0; i < sizeof(src); i++)
		src[i] = (uint8_t)(i * 7 + 3);
	for (uint32_t n = 1; n <= 4096; n += (n < 200 ? 1 : 61)) {
		for (unsigned soff = 0; soff < 3; soff++) {
			memset(dst, 0xee, sizeof(dst));
			copy_stream(dst + 64, src + soff, n);
			copy_stream_fence();
			assert_memory_equal(dst + 64, src + soff, n);
			for (unsigned i = 0; i < 64; i++)
				assert_int_equal(dst[i], 0xee);
			for (unsigned i = 64 + n; i < sizeof(dst); i++)
				assert_int_equal(dst[i], 0xee);
		}
	}
}

/* A fake sender: each burst sends 1 KiB and takes @cache or @stream ticks, by the way the
 * adapt says, one right after the other. */
struct feed {
	uint64_t now;
	uint64_t cache, stream;
};

static void bursts(struct copy_adapt *a, struct feed *f, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		uint64_t t0 = f->now;

		f->now += a->stream ? f->stream : f->cache;
		copy_adapt_burst(a, t0, f->now, 1024);
	}
}

/* The bursts up to the end of the next probe, from an epoch's start: what is left of a
 * warm-up, the settled epochs still to run, the probe's warm-up and the probe. */
static unsigned to_probe_end(const struct copy_adapt *a)
{
	return a->warm + ((a->confirming ? 1 : a->interval) - a->epochs) * COPY_EPOCH_BURSTS +
	       COPY_WARM_BURSTS + COPY_EPOCH_BURSTS;
}

/* A queue under tx_stores=auto. Where there is no streaming path the driver's queues are
 * cache whatever the key says; the chooser's logic is the same everywhere and is tested
 * everywhere. */
static void auto_start(struct copy_adapt *a)
{
	copy_adapt_init(a, COPY_STORES_AUTO);
	a->stores = COPY_STORES_AUTO;
}

static void test_adapt_switches(void **state)
{
	struct copy_adapt a;
	struct feed f = {.cache = 1000, .stream = 500};

	(void)state;
	auto_start(&a);
	assert_false(a.stream);
	/* Settled epochs run cached; the last of them starts the probe. */
	bursts(&a, &f, COPY_PROBE_MIN * COPY_EPOCH_BURSTS - 1);
	assert_false(a.stream);
	assert_false(a.probing);
	bursts(&a, &f, 1);
	assert_true(a.stream && a.probing);
	/* The probe: streaming twice as fast; back to cached until a second probe, one epoch
	 * later, says so too. */
	bursts(&a, &f, COPY_WARM_BURSTS + COPY_EPOCH_BURSTS);
	assert_false(a.stream);
	assert_true(a.confirming);
	assert_int_equal(a.switches, 0);
	bursts(&a, &f, to_probe_end(&a));
	assert_true(a.stream);
	assert_false(a.probing);
	assert_true(a.settled);
	assert_int_equal(a.switches, 1);
	assert_int_equal(a.interval, COPY_PROBE_MIN);
	/* Cached becomes the faster way: the next two probes (cached) win, back to it. */
	f.cache = 200;
	bursts(&a, &f, to_probe_end(&a));
	bursts(&a, &f, to_probe_end(&a));
	assert_false(a.stream);
	assert_false(a.settled);
	assert_int_equal(a.switches, 2);
}

static void test_adapt_stays(void **state)
{
	struct copy_adapt a;
	struct feed f = {.cache = 1000, .stream = 2000};
	uint32_t want = COPY_PROBE_MIN;

	(void)state;
	auto_start(&a);
	/* Each losing probe goes back to cached and doubles the interval, up to the most. */
	for (unsigned p = 0; p < 10; p++) {
		bursts(&a, &f, to_probe_end(&a));
		assert_false(a.stream);
		assert_false(a.probing);
		want = want * 2 > COPY_PROBE_MAX ? COPY_PROBE_MAX : want * 2;
		assert_int_equal(a.interval, want);
	}
	assert_int_equal(a.switches, 0);
	assert_false(a.settled);
}

/* The threshold: a probe must take under 4/5 of the settled way's time. */
static void test_adapt_threshold(void **state)
{
	struct copy_adapt a;
	struct feed f = {.cache = 1000, .stream = 810};

	(void)state;
	auto_start(&a);
	bursts(&a, &f, to_probe_end(&a));
	assert_false(a.stream || a.confirming); /* 0.81: not a win */
	f.stream = 780;
	bursts(&a, &f, to_probe_end(&a));
	bursts(&a, &f, to_probe_end(&a));
	assert_true(a.stream); /* 0.78, twice: switched */
	assert_int_equal(a.switches, 1);
}

/* The bursts right after a change of way are not measured: the probe's first
 * COPY_WARM_BURSTS bursts are slow (the peer is still on the other way's frames), the
 * rest fast, and the probe wins. */
static void test_adapt_warm(void **state)
{
	struct copy_adapt a;
	struct feed f = {.cache = 1000, .stream = 500};

	(void)state;
	auto_start(&a);
	bursts(&a, &f, COPY_PROBE_MIN * COPY_EPOCH_BURSTS);
	for (int p = 0; p < 2; p++) {
		if (p == 1) /* the first probe's warm-up back, one settled epoch */
			bursts(&a, &f, COPY_WARM_BURSTS + COPY_EPOCH_BURSTS);
		assert_true(a.probing);
		f.stream = 100000;
		bursts(&a, &f, COPY_WARM_BURSTS);
		f.stream = 500;
		bursts(&a, &f, COPY_EPOCH_BURSTS);
	}
	assert_true(a.stream && !a.probing);
	assert_int_equal(a.switches, 1);
}

/* One lucky probe does not switch: the second one must win too. */
static void test_adapt_lucky(void **state)
{
	struct copy_adapt a;
	struct feed f = {.cache = 1000, .stream = 500};

	(void)state;
	auto_start(&a);
	bursts(&a, &f, to_probe_end(&a));
	assert_true(a.confirming);
	f.stream = 1000;
	bursts(&a, &f, to_probe_end(&a));
	assert_false(a.stream || a.confirming || a.settled);
	assert_int_equal(a.switches, 0);
	assert_int_equal(a.interval, 2 * COPY_PROBE_MIN);
}

/* One settled epoch made long (a preemption: one burst 100 times as long) does not let a
 * probe that is no faster than the others win. */
static void test_adapt_noise(void **state)
{
	struct copy_adapt a;
	struct feed f = {.cache = 1000, .stream = 900};

	(void)state;
	auto_start(&a);
	bursts(&a, &f, (COPY_PROBE_MIN - 1) * COPY_EPOCH_BURSTS);
	f.cache = 100 * 1000;
	bursts(&a, &f, 1);
	f.cache = 1000;
	bursts(&a, &f, COPY_EPOCH_BURSTS - 1 + COPY_WARM_BURSTS + COPY_EPOCH_BURSTS);
	assert_false(a.probing);
	assert_false(a.stream || a.confirming); /* the probe did not even win once */
	assert_int_equal(a.switches, 0);
}

static void test_adapt_fixed(void **state)
{
	struct feed f = {.cache = 1000, .stream = 10};
	struct copy_adapt a;

	(void)state;
	copy_adapt_init(&a, COPY_STORES_CACHE);
	bursts(&a, &f, 100 * COPY_EPOCH_BURSTS);
	assert_false(a.stream || a.settled);
	assert_int_equal(a.switches, 0);
	f = (struct feed){.cache = 10, .stream = 1000};
	copy_adapt_init(&a, COPY_STORES_STREAM);
	bursts(&a, &f, 100 * COPY_EPOCH_BURSTS);
	assert_true(a.stream == (bool)COPY_HAVE_STREAM);
	assert_int_equal(a.switches, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stream_copy),   cmocka_unit_test(test_adapt_switches),
		cmocka_unit_test(test_adapt_stays),   cmocka_unit_test(test_adapt_threshold),
		cmocka_unit_test(test_adapt_warm),    cmocka_unit_test(test_adapt_noise),
		cmocka_unit_test(test_adapt_fixed),   cmocka_unit_test(test_adapt_lucky),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
