/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Port conformance: the same life cycle and accounting checks against every driver, plus
 * the configuration checks every port must make.
 */
#include <stdio.h>
#include <string.h>

#include <tide/lcore.h>
#include <tide/log.h>
#include <tide/port.h>

#include "driver.h"
#include "testutil.h"

static int setup_thread(void **state)
{
	(void)state;
	return tide_thread_register() < 0;
}

/* Specs of every driver that can run without outside help; skipped when not built in. */
static const char *const conformance_specs[] = {
	"simnic:mode=inline,wire=gen",
	"simnic:mode=thread,wire=gen,rate=2000000",
	"simnic:mode=inline,wire=loop",
	"simnic:mode=inline,wire=gen,wb=head",
	"null:size=64",
	NULL,
};

static bool driver_built(const char *spec)
{
	char name[32];
	size_t n = strcspn(spec, ":");

	snprintf(name, sizeof(name), "%.*s", (int)n, spec);
	return tide_driver_find(name) != NULL;
}

static void quiet(enum tide_log_level l, const char *c, const char *m, void *u)
{
	(void)l;
	(void)c;
	(void)m;
	(void)u;
}

/* open -> configure -> setup -> start -> bursts -> stop -> start again -> close. */
static void conformance_one(const char *spec)
{
	struct tide_pool *pool;
	struct tide_port *p;
	struct tide_port_stats st;
	struct tide_mbuf *pkts[32];
	struct tide_rxq *rxq;
	struct tide_txq *txq;
	uint64_t rx = 0, tx = 0, tx_bytes = 0;

	assert_int_equal(tide_pktpool_create("conf", 2048, 64, 0, NULL, &pool), 0);
	assert_int_equal(tide_port_open(spec, &p), 0);
	/* Before start: bursts are no-ops on queues that exist. */
	assert_int_equal(tide_port_configure(p, 1, 1), 0);
	assert_int_equal(tide_rxq_setup(p, 0, 256, pool, NULL), 0);
	assert_int_equal(tide_txq_setup(p, 0, 256, NULL), 0);
	rxq = tide_port_rxq(p, 0);
	txq = tide_port_txq(p, 0);
	assert_int_equal(tide_rx_burst(rxq, pkts, 32), 0);
	for (int round = 0; round < 2; round++) {
		assert_int_equal(tide_port_start(p), 0);
		/* Up to ~2 s of wall time, for the thread-mode device to get going. */
		for (int i = 0; i < 2000000 && (i < 2000 || rx == 0) && rx < 5000; i++) {
			uint16_t n, k;

			/* Inject a few fresh packets (the only source on wire=loop), then
			 * forward whatever arrives. */
			assert_int_equal(tide_mbuf_alloc_bulk(pool, pkts, 4), 0);
			for (unsigned j = 0; j < 4; j++)
				memset(tide_mbuf_append(pkts[j], 64), (int)j, 64);
			k = tide_tx_burst(txq, pkts, 4);
			tide_mbuf_free_bulk(pkts + k, 4u - k);
			tx += k;
			tx_bytes += 64u * k;
			n = tide_rx_burst(rxq, pkts, 32);

			rx += n;
			for (unsigned j = 0; j < n; j++)
				tx_bytes += pkts[j]->pkt_len;
			k = tide_tx_burst(txq, pkts, n);
			for (unsigned j = k; j < n; j++) {
				tx_bytes -= pkts[j]->pkt_len;
				tide_mbuf_free(pkts[j]);
			}
			tx += k;
		}
		if (rx == 0)
			fail_msg("%s: nothing received", spec);
		assert_int_equal(tide_port_stats_get(p, &st), 0);
		assert_int_equal(st.ipackets, rx);
		assert_int_equal(st.opackets, tx);
		assert_int_equal(st.obytes, tx_bytes);
		assert_int_equal(st.tx_hangs, 0);
		/* Stop: bursts become no-ops, every buffer is back. */
		assert_int_equal(tide_port_stop(p), 0);
		assert_int_equal(tide_rx_burst(rxq, pkts, 32), 0);
		assert_int_equal(tide_tx_burst(txq, pkts, 0), 0);
		assert_pool_full(pool);
		tide_port_stats_reset(p);
		assert_int_equal(tide_port_stats_get(p, &st), 0);
		assert_int_equal(st.ipackets + st.opackets, 0);
		rx = tx = tx_bytes = 0;
	}
	/* Close while started gives everything back too. */
	assert_int_equal(tide_port_start(p), 0);
	tide_mbuf_free_bulk(pkts, tide_rx_burst(rxq, pkts, 8));
	tide_port_close(p);
	tide_pool_cache_flush(pool);
	assert_pool_full(pool);
	tide_pool_free(pool);
}

static void test_conformance(void **state)
{
	(void)state;
	for (unsigned i = 0; conformance_specs[i]; i++) {
		if (!driver_built(conformance_specs[i]))
			continue;
		conformance_one(conformance_specs[i]);
	}
}

/* Every bad configuration is refused with -EINVAL and changes nothing. */
static void test_bad_config(void **state)
{
	struct tide_pool *pool;
	struct tide_port *p, *ports[4];
	struct tide_txq_conf c = {.sz = sizeof(c)};

	(void)state;
	tide_log_set_handler(quiet, NULL);
	assert_int_equal(tide_pktpool_create("bad", 1024, 0, 0, NULL, &pool), 0);
	assert_int_equal(tide_port_open("nosuch:x=1", &p), -EINVAL);
	assert_int_equal(tide_port_open("simnic:bogus=1", &p), -EINVAL);
	assert_int_equal(tide_port_open("simnic:mode=fast", &p), -EINVAL);
	assert_int_equal(tide_port_open("simnic:size=10", &p), -EINVAL);
	assert_int_equal(tide_port_open("simnic:size=64,size=65", &p), -EINVAL);
	assert_int_equal(tide_port_open(":x", &p), -EINVAL);
	assert_int_equal(tide_port_open("simnic:ports=2", &p), -EINVAL); /* two ports */
	assert_int_equal(tide_ports_open("simnic:ports=2", ports, 1), -ENOSPC);
	assert_int_equal(tide_port_open("simnic:ondie=40", &p), 0);
	assert_int_equal(tide_port_configure(p, 2, 1), -EINVAL);
	assert_int_equal(tide_port_configure(p, 0, 0), -EINVAL);
	assert_int_equal(tide_port_configure(p, 1, 1), 0);
	assert_int_equal(tide_rxq_setup(p, 0, 100, pool, NULL), -EINVAL);  /* not a power of 2 */
	assert_int_equal(tide_rxq_setup(p, 0, 32, pool, NULL), -EINVAL);   /* below the range */
	assert_int_equal(tide_rxq_setup(p, 0, 8192, pool, NULL), -EINVAL); /* above the range */
	assert_int_equal(tide_rxq_setup(p, 1, 256, pool, NULL), -EINVAL);  /* queue id */
	assert_int_equal(tide_rxq_setup(p, 0, 256, NULL, NULL), -EINVAL);  /* no pool */
	c.rs_thresh = 24; /* does not divide 256 */
	assert_int_equal(tide_txq_setup(p, 0, 256, &c), -EINVAL);
	c.rs_thresh = 64;
	c.free_thresh = 32; /* rs_thresh > free_thresh */
	assert_int_equal(tide_txq_setup(p, 0, 256, &c), -EINVAL);
	c.rs_thresh = 64;
	c.free_thresh = 64; /* above ondie=40: the queue would hang */
	assert_int_equal(tide_txq_setup(p, 0, 256, &c), -EINVAL);
	c.rs_thresh = 32;
	c.free_thresh = 64; /* 32 + 64 > 64 descriptors */
	assert_int_equal(tide_txq_setup(p, 0, 64, &c), -EINVAL);
	c = (struct tide_txq_conf){.sz = sizeof(c), .txfree = TIDE_TXFREE_FAST};
	assert_int_equal(tide_txq_setup(p, 0, 256, &c), -EINVAL); /* fast without contract */
	c.rs = (enum tide_rs)7;
	c.txfree = TIDE_TXFREE_AUTO;
	assert_int_equal(tide_txq_setup(p, 0, 256, &c), -EINVAL);
	/* Nothing set up: start refuses. */
	assert_int_equal(tide_port_start(p), -EINVAL);
	assert_null(tide_port_txq(p, 0));
	tide_port_close(p);
	tide_log_set_handler(NULL, NULL);
	assert_pool_full(pool);
	tide_pool_free(pool);
}

static void test_knob_names(void **state)
{
	enum tide_rs rs;
	enum tide_txfree f;

	(void)state;
	for (int i = 0; i <= TIDE_RS_BURST; i++) {
		assert_int_equal(tide_rs_parse(tide_rs_name((enum tide_rs)i), &rs), 0);
		assert_int_equal(rs, i);
	}
	for (int i = 0; i <= TIDE_TXFREE_RECYCLE; i++) {
		assert_int_equal(tide_txfree_parse(tide_txfree_name((enum tide_txfree)i), &f), 0);
		assert_int_equal(f, i);
	}
	assert_int_equal(tide_rs_parse("sometimes", &rs), -EINVAL);
	assert_int_equal(tide_txfree_parse("never", &f), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_conformance),
		cmocka_unit_test(test_bad_config),
		cmocka_unit_test(test_knob_names),
	};

	return cmocka_run_group_tests(tests, setup_thread, NULL);
}
