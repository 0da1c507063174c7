/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tide-fwd's forwarding core: every engine through simnic inline ports with the sink checking
 * every output packet and exact counts (count=N), malformed packets through l3fwd (dropped,
 * counted by reason, never forwarded), the l3fwd header checks on exact-size buffers (so the
 * sanitizer build catches any read past the end), and the incremental checksum update.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tide/log.h>
#include <tide/simnic.h>

#include "testutil.h"
#include "fwd.h"
#include "l3fwd.h"
#include "pkt.h"

#define COUNT 4096 /* generated packets per port */

/* ---- helpers ---- */

static bool csum_ok(const uint8_t *ip)
{
	return pkt_csum_sum(ip, (ip[0] & 0xfu) * 4u) == 0xffff;
}

static bool mac_is(const uint8_t *m, uint8_t b4, uint8_t b5)
{
	static const uint8_t z[4] = {0x02, 0, 0, 0};

	return memcmp(m, z, 4) == 0 && m[4] == b4 && m[5] == b5;
}

static void base_config(struct fwd_config *cfg, const char *spec, const char *engine)
{
	fwd_config_init(cfg);
	cfg->specs[0] = spec;
	cfg->nspecs = 1;
	cfg->cpus[0] = -1; /* not pinned: the machine is shared with other builds */
	cfg->engine = engine;
	cfg->rxd = 256;
	cfg->txd = 256;
}

static uint64_t sum_ctr(const struct fwd_ctx *ctx, unsigned port, size_t off)
{
	uint64_t n = 0;

	for (unsigned i = 0; i < ctx->nlcores; i++)
		n += *(const uint64_t *)((const char *)&ctx->lcores[i].ctr[port] + off);
	return n;
}

#define CTR(ctx, port, field) sum_ctr(ctx, port, offsetof(struct fwd_ctr, field))

/* Packets and bytes are the ports' own counters. */
static uint64_t port_stat(const struct fwd_ctx *ctx, unsigned port, size_t off)
{
	struct tide_port_stats st = {.sz = sizeof(st)};

	tide_port_stats_get(ctx->ports[port], &st);
	return *(const uint64_t *)((const char *)&st + off);
}

#define PSTAT(ctx, port, field) port_stat(ctx, port, offsetof(struct tide_port_stats, field))

static uint64_t handled(const struct fwd_ctx *ctx)
{
	uint64_t n = 0;

	for (unsigned p = 0; p < ctx->nports; p++)
		n += ctx->engine->flags & FWD_ENGINE_F_NO_RX ? PSTAT(ctx, p, opackets)
							     : PSTAT(ctx, p, ipackets);
	return n;
}

static uint64_t sink_seen[TIDE_MAX_PORTS];

/* Every packet a port accepted for Tx reached its sink (thread mode delivers later). */
static bool sinks_drained(const struct fwd_ctx *ctx)
{
	for (unsigned p = 0; p < ctx->nports; p++) {
		uint64_t sent = PSTAT(ctx, p, opackets);

		if (__atomic_load_n(&sink_seen[p], __ATOMIC_RELAXED) < sent)
			return false;
	}
	return true;
}

static void pause_1ms(void)
{
	const struct timespec ts = {.tv_nsec = 1000000};

	nanosleep(&ts, NULL);
}

/* Start, wait until @target packets were handled and the sinks took what was sent (bounded
 * by 20 s), stop. */
static void run_until(struct fwd_ctx *ctx, uint64_t target)
{
	char err[256];
	time_t deadline = time(NULL) + 20;

	assert_int_equal(fwd_start(ctx, err, sizeof(err)), 0);
	while (time(NULL) < deadline && !(handled(ctx) >= target && sinks_drained(ctx)))
		pause_1ms();
	fwd_stop(ctx);
	/* A lcore may have sent a last burst after the check above: a threaded device's sink
	 * takes it too (bounded by 2 s) before the counts are compared. */
	for (int i = 0; i < 2000 && !sinks_drained(ctx); i++)
		pause_1ms();
	assert_true(handled(ctx) >= target);
}

static void check_pool_and_teardown(struct fwd_ctx *ctx)
{
	assert_int_equal(tide_pool_in_use(ctx->pool), 0);
	assert_pool_full(ctx->pool);
	fwd_teardown(ctx);
}

/* ---- every engine, every packet checked at the sink ---- */

typedef int (*verify_fn)(void *arg, unsigned port, const uint8_t *pkt, unsigned len);

struct sink_state {
	unsigned nports;
	unsigned txonly_size, flows;
	uint64_t flow_seen[2]; /* txonly: bit f set once flow f reached port q (atomic) */
};

/*
 * Packets each sink saw, counted here with atomics: with several lcores, two threads may
 * transmit to one port at the same time, and simnic's own sink counter is not atomic then.
 */
static void seen(unsigned q)
{
	__atomic_fetch_add(&sink_seen[q], 1, __ATOMIC_RELAXED);
}

/* io: the generator's packet from the paired port, byte for byte what it made. */
static int verify_io(void *arg, unsigned q, const uint8_t *pkt, unsigned len)
{
	const uint8_t *ip = pkt + ETH_HDR_LEN;

	seen(q);
	(void)arg;
	if (len != 64 || !mac_is(pkt, 0, (uint8_t)(q ^ 1)) || !mac_is(pkt + 6, 1, (uint8_t)(q ^ 1)))
		return 1;
	return !(ip[16] == 10 && ip[17] == q && ip[8] == 64 && ip[14] == (q ^ 1) && csum_ok(ip));
}

static int verify_mac(void *arg, unsigned q, const uint8_t *pkt, unsigned len)
{
	const uint8_t *ip = pkt + ETH_HDR_LEN;

	seen(q);
	(void)arg;
	if (len != 64 || !mac_is(pkt, 1, (uint8_t)q) || !mac_is(pkt + 6, 0, (uint8_t)q))
		return 1;
	return !(ip[16] == 10 && ip[17] == q && ip[8] == 64 && csum_ok(ip));
}

static int verify_macswap(void *arg, unsigned q, const uint8_t *pkt, unsigned len)
{
	const uint8_t *ip = pkt + ETH_HDR_LEN;

	seen(q);
	(void)arg;
	if (len != 64 || !mac_is(pkt, 1, (uint8_t)(q ^ 1)) || !mac_is(pkt + 6, 0, (uint8_t)(q ^ 1)))
		return 1;
	return !(ip[16] == 10 && ip[17] == q && ip[8] == 64 && csum_ok(ip));
}

/* l3fwd: routed by destination (10.q/16 -> q), TTL 63, checksum right, MACs for port q. */
static int verify_l3fwd(void *arg, unsigned q, const uint8_t *pkt, unsigned len)
{
	const uint8_t *ip = pkt + ETH_HDR_LEN;

	seen(q);
	(void)arg;
	if (len < 34 || !mac_is(pkt, 1, (uint8_t)q) || !mac_is(pkt + 6, 0, (uint8_t)q))
		return 1;
	return !(pkt_rd16(pkt + 12) == ETH_TYPE_IPV4 && ip[16] == 10 && ip[17] == q &&
		 ip[8] == 63 && csum_ok(ip));
}

static int verify_txonly(void *arg, unsigned q, const uint8_t *pkt, unsigned len)
{
	struct sink_state *s = arg;
	const uint8_t *ip = pkt + ETH_HDR_LEN;

	seen(q);
	if (len != s->txonly_size || !mac_is(pkt, 1, (uint8_t)q) || !mac_is(pkt + 6, 0, (uint8_t)q))
		return 1;
	if (!(ip[8] == 64 && ip[12] == 198 && ip[13] == 18 && ip[14] == q && ip[16] == 198 &&
	      ip[17] == 19 && pkt_rd16(ip + 18) < s->flows && pkt_rd16(ip + 2) == len - 14 &&
	      csum_ok(ip)))
		return 1;
	if (q < 2 && s->flows <= 64)
		__atomic_fetch_or(&s->flow_seen[q], 1ull << pkt_rd16(ip + 18), __ATOMIC_RELAXED);
	return 0;
}

/* A lone port's macswap: the generator's addresses swapped, back on the same port. */
static int verify_swap_self(void *arg, unsigned q, const uint8_t *pkt, unsigned len)
{
	(void)arg;
	seen(q);
	return !(len == 64 && q == 0 && mac_is(pkt, 1, 0) && mac_is(pkt + 6, 0, 0));
}

static int verify_none(void *arg, unsigned q, const uint8_t *pkt, unsigned len)
{
	(void)arg;
	(void)q;
	(void)pkt;
	(void)len;
	seen(q);
	return 1; /* nothing may be sent */
}

static void attach_sinks(struct fwd_ctx *ctx, verify_fn fn, void *arg)
{
	memset(sink_seen, 0, sizeof(sink_seen));
	for (unsigned p = 0; p < ctx->nports; p++)
		assert_int_equal(tide_simnic_set_verify(ctx->ports[p], fn, arg), 0);
}

static void check_sinks(const struct fwd_ctx *ctx, const uint64_t *expect)
{
	for (unsigned p = 0; p < ctx->nports; p++) {
		struct tide_simnic_stats ss = {.sz = sizeof(ss)};

		assert_int_equal(tide_simnic_stats_get(ctx->ports[p], &ss), 0);
		assert_int_equal(ss.verify_failed, 0);
		assert_int_equal(sink_seen[p], expect[p]);
		if (ctx->nlcores == 1)
			assert_int_equal(ss.sink_packets, expect[p]);
		assert_int_equal(PSTAT(ctx, p, opackets), expect[p]);
		assert_int_equal(ss.tx_hangs, 0);
	}
}

struct engine_case {
	const char *engine;
	unsigned nports;
	verify_fn verify;
};

static void run_engine_case(const struct engine_case *c)
{
	struct fwd_config cfg;
	struct fwd_ctx ctx;
	struct sink_state ss = {.nports = c->nports};
	char spec[128], err[256];
	uint64_t expect[TIDE_MAX_PORTS];

	snprintf(spec, sizeof(spec), "simnic:ports=%u,mode=inline,wire=gen,size=64,count=%u",
		 c->nports, COUNT);
	base_config(&cfg, spec, c->engine);
	assert_int_equal(fwd_setup(&ctx, &cfg, err, sizeof(err)), 0);
	attach_sinks(&ctx, c->verify, &ss);
	run_until(&ctx, (uint64_t)c->nports * COUNT);
	for (unsigned p = 0; p < c->nports; p++) {
		assert_int_equal(PSTAT(&ctx, p, ipackets), COUNT);
		assert_int_equal(PSTAT(&ctx, p, ibytes), COUNT * 64ull);
		for (unsigned d = 0; d < FWD_DROP_NR; d++)
			assert_int_equal(CTR(&ctx, p, drops[d]), 0);
		expect[p] = strcmp(c->engine, "rxonly") == 0 ? 0 : COUNT;
	}
	check_sinks(&ctx, expect);
	check_pool_and_teardown(&ctx);
}

static void test_engines(void **state)
{
	static const struct engine_case cases[] = {
	    {"io", 2, verify_io},	{"mac", 2, verify_mac},	    {"macswap", 2, verify_macswap},
	    {"l3fwd", 2, verify_l3fwd}, {"l3fwd", 3, verify_l3fwd}, {"l3fwd", 4, verify_l3fwd},
	    {"rxonly", 2, verify_none},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		print_message("engine %s, %u ports\n", cases[i].engine, cases[i].nports);
		run_engine_case(&cases[i]);
	}
}

/* A single port forwards to itself (io); l3fwd sends nothing back where it came from. */
static void test_single_port(void **state)
{
	struct fwd_config cfg;
	struct fwd_ctx ctx;
	char err[256];
	uint64_t expect[1] = {COUNT};

	(void)state;
	base_config(&cfg, "simnic:ports=1,mode=inline,count=4096", "macswap");
	assert_int_equal(fwd_setup(&ctx, &cfg, err, sizeof(err)), 0);
	assert_int_equal(ctx.pair[0], 0);
	attach_sinks(&ctx, verify_swap_self, NULL);
	run_until(&ctx, COUNT);
	check_sinks(&ctx, expect);
	check_pool_and_teardown(&ctx);

	/* Generated traffic on a 1-port device goes to 10.0/16: routed back, so dropped. */
	base_config(&cfg, "simnic:ports=1,mode=inline,count=4096", "l3fwd");
	assert_int_equal(fwd_setup(&ctx, &cfg, err, sizeof(err)), 0);
	attach_sinks(&ctx, verify_none, NULL);
	run_until(&ctx, COUNT);
	expect[0] = 0;
	check_sinks(&ctx, expect);
	assert_int_equal(CTR(&ctx, 0, drops[FWD_DROP_SAME_PORT]), COUNT);
	check_pool_and_teardown(&ctx);
}

static void test_txonly(void **state)
{
	struct fwd_config cfg;
	struct fwd_ctx ctx;
	/* More flows than a burst holds: the flow sequence runs on across bursts. */
	struct sink_state ss = {.nports = 2, .txonly_size = 128, .flows = 40};
	char err[256];
	uint64_t expect[2];

	(void)state;
	base_config(&cfg, "simnic:ports=2,mode=inline", "txonly");
	cfg.txonly_size = 128;
	cfg.flows = 40;
	assert_int_equal(fwd_setup(&ctx, &cfg, err, sizeof(err)), 0);
	attach_sinks(&ctx, verify_txonly, &ss);
	run_until(&ctx, 20000);
	for (unsigned p = 0; p < 2; p++) {
		expect[p] = PSTAT(&ctx, p, opackets);
		assert_true(expect[p] > 0);
		assert_int_equal(PSTAT(&ctx, p, obytes), expect[p] * 128);
		assert_int_equal(PSTAT(&ctx, p, ipackets), 0);
	}
	check_sinks(&ctx, expect);
	/* Every flow went out on each port, each with its own address and checksum. */
	for (unsigned p = 0; p < 2; p++)
		assert_int_equal(ss.flow_seen[p], (1ull << 40) - 1);
	check_pool_and_teardown(&ctx);
}

/*
 * txonly with a pool the Tx queue can hold entirely: 512 Tx descriptors, 64 Rx, 600 buffers,
 * no cache. Once the queue holds 512 the next burst's allocation fails, and the buffers come
 * back only when the queue reclaims its completed ones: txonly must make it do so rather
 * than wait for a Tx burst it can no longer build. Finishes its --packets count.
 */
static void test_txonly_small_pool(void **state)
{
	static const char *const specs[] = {"simnic:ports=1", "simnic:ports=1,mode=inline"};
	struct sink_state ss = {.nports = 1, .txonly_size = 64, .flows = 16};
	const uint64_t expect[1] = {20000};
	struct fwd_config cfg;
	struct fwd_ctx ctx;
	char err[256];

	(void)state;
	for (unsigned i = 0; i < 2; i++) {
		base_config(&cfg, specs[i], "txonly");
		cfg.rxd = 64;
		cfg.txd = 512;
		cfg.pool_n = 600;
		cfg.cache = 0;
		cfg.packets = expect[0];
		cfg.txonly_size = ss.txonly_size;
		cfg.flows = ss.flows;
		assert_int_equal(fwd_setup(&ctx, &cfg, err, sizeof(err)), 0);
		attach_sinks(&ctx, verify_txonly, &ss);
		run_until(&ctx, expect[0]);
		check_sinks(&ctx, expect);
		check_pool_and_teardown(&ctx);
	}
}

/*
 * Several lcores, an explicit map, a Tx queue per lcore, and the knobs passed through. The
 * device runs on its own thread: simnic's inline mode steps a port's generator from whichever
 * thread polls it, and its count= budget is per port, so two lcores polling two queues of one
 * port inline would race on it.
 */
static void test_two_lcores_map(void **state)
{
	struct fwd_config cfg;
	struct fwd_ctx ctx;
	char err[256];
	uint64_t expect[2];

	(void)state;
	base_config(&cfg, "simnic:ports=2,queues=2,mode=thread,count=4096", "l3fwd");
	cfg.cpus[1] = -1;
	cfg.nlcores = 2;
	cfg.map[0] = (struct fwd_map_entry){0, 0, 0};
	cfg.map[1] = (struct fwd_map_entry){0, 1, 1};
	cfg.map[2] = (struct fwd_map_entry){1, 1, 0};
	cfg.map[3] = (struct fwd_map_entry){1, 0, 1};
	cfg.nmap = 4;
	cfg.txd = 1024;
	cfg.txconf.txfree = TIDE_TXFREE_FAST;
	cfg.txconf.flags = TIDE_TXQ_F_FAST_FREE;
	cfg.txconf.rs = TIDE_RS_BURST;
	assert_int_equal(fwd_setup(&ctx, &cfg, err, sizeof(err)), 0);
	assert_int_equal(ctx.nb_txq, 2);
	assert_int_equal(ctx.nb_rxq[0], 2);
	assert_int_equal(ctx.lcores[1].nstreams, 2);
	attach_sinks(&ctx, verify_l3fwd, NULL);
	run_until(&ctx, 2 * COUNT);
	for (unsigned p = 0; p < 2; p++) {
		expect[p] = PSTAT(&ctx, p, opackets);
		assert_int_equal(PSTAT(&ctx, p, ipackets), COUNT);
		assert_int_equal(expect[p] + CTR(&ctx, p, drops[FWD_DROP_TX_FULL]), COUNT);
	}
	check_sinks(&ctx, expect);
	check_pool_and_teardown(&ctx);
}

/* Configuration errors: -EINVAL, a message, nothing left open. */
static void test_setup_errors(void **state)
{
	static const struct {
		const char *spec, *engine, *msg;
		unsigned nlcores, txd, rs_thresh;
	} cases[] = {
	    {"nosuch:x=1", "io", "cannot open", 1, 256, 32},
	    {"simnic:ports=2", "io", "Tx queues", 2, 256, 32},
	    {"simnic:ports=2", "io", "Tx queue 0", 1, 100, 32},
	    {"simnic:ports=2", "io", "Tx queue 0", 1, 256, 64},
	    {"simnic:ports=2", "nosuch", "unknown engine", 1, 256, 32},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct fwd_config cfg;
		struct fwd_ctx ctx;
		char err[256] = "";

		base_config(&cfg, cases[i].spec, cases[i].engine);
		cfg.nlcores = cases[i].nlcores;
		cfg.cpus[1] = -1;
		cfg.txd = cases[i].txd;
		cfg.txconf.rs_thresh = (uint16_t)cases[i].rs_thresh;
		assert_int_equal(fwd_setup(&ctx, &cfg, err, sizeof(err)), -EINVAL);
		print_message("error: %s\n", err);
		assert_non_null(strstr(err, cases[i].msg));
		assert_null(ctx.pool);
		assert_int_equal(ctx.nports, 0);
		fwd_teardown(&ctx); /* still safe */
	}
}

/* ---- malformed packets through l3fwd ---- */

enum mcase {
	M_VALID,
	M_VALID_OPTS,
	M_LEN10,
	M_LEN13,
	M_LEN20,
	M_LEN33,
	M_ARP,
	M_IPV6_SHORT,
	M_IHL4,
	M_VERSION6,
	M_IHL15,
	M_TOTLEN_BIG,
	M_TOTLEN_SMALL,
	M_BAD_CSUM,
	M_TTL1,
	M_TTL0,
	M_NO_ROUTE,
	M_SAME_PORT,
	M_NR,
};

static const enum fwd_drop mcase_drop[M_NR] = {
    [M_VALID] = FWD_DROP_NR,
    [M_VALID_OPTS] = FWD_DROP_NR,
    [M_LEN10] = FWD_DROP_BAD_HEADER,
    [M_LEN13] = FWD_DROP_BAD_HEADER,
    [M_LEN20] = FWD_DROP_BAD_HEADER,
    [M_LEN33] = FWD_DROP_BAD_HEADER,
    [M_ARP] = FWD_DROP_NOT_IPV4,
    [M_IPV6_SHORT] = FWD_DROP_NOT_IPV4,
    [M_IHL4] = FWD_DROP_BAD_HEADER,
    [M_VERSION6] = FWD_DROP_BAD_HEADER,
    [M_IHL15] = FWD_DROP_BAD_HEADER,
    [M_TOTLEN_BIG] = FWD_DROP_BAD_HEADER,
    [M_TOTLEN_SMALL] = FWD_DROP_BAD_HEADER,
    [M_BAD_CSUM] = FWD_DROP_BAD_CHECKSUM,
    [M_TTL1] = FWD_DROP_TTL_EXPIRED,
    [M_TTL0] = FWD_DROP_TTL_EXPIRED,
    [M_NO_ROUTE] = FWD_DROP_NO_ROUTE,
    [M_SAME_PORT] = FWD_DROP_SAME_PORT,
};

/* Write test packet @c for ingress port @p of a 2-port setup into @buf; returns its length. */
static unsigned make_packet(enum mcase c, unsigned p, uint8_t *buf)
{
	uint8_t *ip = buf + ETH_HDR_LEN;
	unsigned len = 64, hlen = 20;

	memset(buf, 0, 128);
	buf[0] = 0x02;
	buf[5] = (uint8_t)p;
	buf[6] = 0x02;
	buf[11] = 0x77;
	pkt_wr16(buf + 12, ETH_TYPE_IPV4);
	if (c == M_VALID_OPTS) {
		hlen = 24;
		len = 68;
	}
	ip[0] = (uint8_t)(0x40 | hlen / 4);
	pkt_wr16(ip + 2, (uint16_t)(len - ETH_HDR_LEN));
	ip[8] = 64;
	ip[9] = 17;
	ip[12] = 192;
	ip[13] = 0;
	ip[14] = 2;
	ip[15] = 1;
	ip[16] = 10;
	ip[17] = (uint8_t)(p ^ 1);
	ip[18] = 3;
	ip[19] = 4;
	switch (c) {
	case M_LEN10:
		len = 10;
		break;
	case M_LEN13:
		len = 13;
		break;
	case M_LEN20:
		len = 20;
		break;
	case M_LEN33:
		len = 33;
		break;
	case M_ARP:
		pkt_wr16(buf + 12, 0x0806);
		break;
	case M_IPV6_SHORT:
		pkt_wr16(buf + 12, 0x86dd);
		len = 14;
		break;
	case M_IHL4:
		ip[0] = 0x44;
		break;
	case M_VERSION6:
		ip[0] = 0x65;
		break;
	case M_IHL15:
		ip[0] = 0x4f;
		break;
	case M_TOTLEN_BIG:
		pkt_wr16(ip + 2, 1000);
		break;
	case M_TOTLEN_SMALL:
		pkt_wr16(ip + 2, 19);
		break;
	case M_TTL1:
		ip[8] = 1;
		break;
	case M_TTL0:
		ip[8] = 0;
		break;
	case M_NO_ROUTE:
		ip[16] = 172;
		ip[17] = 16;
		break;
	case M_SAME_PORT:
		ip[17] = (uint8_t)p;
		break;
	default:
		break;
	}
	if ((ip[0] & 0xf) * 4u <= 60 && len >= ETH_HDR_LEN + 20 && (ip[0] & 0xf) >= 5 &&
	    ETH_HDR_LEN + (ip[0] & 0xfu) * 4u <= 128)
		pkt_wr16(ip + IPV4_OFF_CSUM, pkt_ipv4_csum(ip, (ip[0] & 0xfu) * 4u));
	if (c == M_BAD_CSUM)
		ip[IPV4_OFF_CSUM] ^= 0x5a;
	return len;
}

static unsigned gen_malformed(void *arg, unsigned port, unsigned qid, uint64_t seq, uint8_t *buf,
			      unsigned room)
{
	(void)arg;
	(void)qid;
	assert_true(room >= 128);
	return make_packet((enum mcase)(seq % M_NR), port, buf);
}

static void test_malformed_l3fwd(void **state)
{
	struct fwd_config cfg;
	struct fwd_ctx ctx;
	char spec[128], err[256];
	const unsigned rounds = 200, count = rounds * M_NR;
	uint64_t expect[2];

	(void)state;
	snprintf(spec, sizeof(spec), "simnic:ports=2,mode=inline,count=%u", count);
	base_config(&cfg, spec, "l3fwd");
	assert_int_equal(fwd_setup(&ctx, &cfg, err, sizeof(err)), 0);
	attach_sinks(&ctx, verify_l3fwd, NULL);
	for (unsigned p = 0; p < 2; p++)
		assert_int_equal(tide_simnic_set_gen(ctx.ports[p], gen_malformed, NULL), 0);
	run_until(&ctx, 2ull * count);
	for (unsigned p = 0; p < 2; p++) {
		uint64_t want[FWD_DROP_NR] = {0};

		for (unsigned c = 0; c < M_NR; c++)
			if (mcase_drop[c] != FWD_DROP_NR)
				want[mcase_drop[c]] += rounds;
		assert_int_equal(PSTAT(&ctx, p, ipackets), count);
		for (unsigned d = 0; d < FWD_DROP_NR; d++) {
			print_message("port %u %s: %llu\n", p, fwd_drop_name((enum fwd_drop)d),
				      (unsigned long long)CTR(&ctx, p, drops[d]));
			assert_int_equal(CTR(&ctx, p, drops[d]), want[d]);
		}
		expect[p] = 2 * rounds; /* M_VALID and M_VALID_OPTS from the other port */
	}
	check_sinks(&ctx, expect);
	check_pool_and_teardown(&ctx);
}

/*
 * The header checks on buffers of exactly the frame's length (malloc'd, so the sanitizer
 * build traps any read past the end), for every case and every truncation of a valid packet.
 */
static void test_l3fwd_check_bounds(void **state)
{
	uint8_t full[128];

	(void)state;
	for (unsigned c = 0; c < M_NR; c++) {
		unsigned len = make_packet((enum mcase)c, 0, full);
		uint8_t *b = malloc(len);
		enum fwd_drop want = mcase_drop[c];

		assert_non_null(b);
		memcpy(b, full, len);
		if (want == FWD_DROP_NO_ROUTE || want == FWD_DROP_SAME_PORT)
			want = FWD_DROP_NR; /* routing happens after the checks */
		assert_int_equal(l3fwd_check(b, len, len), want);
		free(b);
	}
	for (unsigned len = 0; len < 64; len++) {
		uint8_t *b = malloc(len ? len : 1);
		enum fwd_drop got;

		make_packet(M_VALID, 0, full);
		memcpy(b, full, len);
		got = l3fwd_check(b, len, len);
		if (len < 34)
			assert_int_equal(got, FWD_DROP_BAD_HEADER);
		else if (len < 64)
			assert_int_equal(got,
					 FWD_DROP_BAD_HEADER); /* total length past the frame */
		free(b);
	}
	/* Header in a short first segment of a longer packet: still refused. */
	make_packet(M_VALID, 0, full);
	assert_int_equal(l3fwd_check(full, 30, 64), FWD_DROP_BAD_HEADER);
	assert_int_equal(l3fwd_check(full, 34, 64), FWD_DROP_NR);
}

/* RFC 1624 incremental update agrees with a full recompute for every TTL and random headers. */
static void test_csum_update(void **state)
{
	uint64_t seed = 0x1234567;
	uint8_t ip[20];

	(void)state;
	for (unsigned i = 0; i < 200000; i++) {
		uint16_t old, new_word, inc, full;

		for (unsigned j = 0; j < 20; j++)
			ip[j] = (uint8_t)test_rand(&seed);
		ip[0] = 0x45;
		ip[8] = (uint8_t)(2 + i % 254);
		pkt_wr16(ip + 10, 0);
		pkt_wr16(ip + 10, pkt_ipv4_csum(ip, 20));
		old = pkt_rd16(ip + 8);
		new_word = (uint16_t)(old - 0x100);
		inc = pkt_csum_update16(pkt_rd16(ip + 10), old, new_word);
		ip[8]--;
		pkt_wr16(ip + 10, 0);
		full = pkt_ipv4_csum(ip, 20);
		assert_int_equal(inc, full);
	}
}

/*
 * The active window: idle polls before the first moving poll and after the last are left out,
 * idle polls between moving ones are in (once the next moving poll comes), and the whole-run
 * counters see everything.
 */
static void test_active_window(void **state)
{
	static const struct {
		uint64_t dt;
		bool idle;
	} polls[] = {
	    {10, true}, {10, true}, {10, true}, /* the lead: no peer yet */
	    {5, false},			      /* the window opens */
	    {7, true},	{8, true},	      /* a wait inside the window */
	    {4, false},			      /* the window's last moving poll */
	    {100, true}, {50, true},	      /* the tail: the peer has stopped */
	};
	struct fwd_ctr c = {0};
	struct fwd_pend pd = {0};

	(void)state;
	for (size_t i = 0; i < sizeof(polls) / sizeof(polls[0]); i++)
		fwd_ctr_poll(&c, &pd, polls[i].dt, polls[i].idle);
	assert_int_equal(c.cycles, 204);
	assert_int_equal(c.idle_cycles, 195);
	assert_int_equal(c.active_cycles, 24);
	assert_int_equal(c.active_idle_cycles, 15);
	assert_int_equal(c.active_polls, 4);
	assert_int_equal(c.active_idle_polls, 2);
	/* The tail waits outside the window until packets move again. */
	assert_int_equal(pd.cycles, 150);
	assert_int_equal(pd.polls, 2);
	fwd_ctr_poll(&c, &pd, 1, false);
	assert_int_equal(c.active_cycles, 175);
	assert_int_equal(c.active_idle_cycles, 165);
	assert_int_equal(c.active_polls, 7);
	assert_int_equal(c.active_idle_polls, 4);
}

static void quiet(enum tide_log_level l, const char *c, const char *m, void *u)
{
	(void)l;
	(void)c;
	(void)m;
	(void)u;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_csum_update),	    cmocka_unit_test(test_l3fwd_check_bounds),
	    cmocka_unit_test(test_engines),	    cmocka_unit_test(test_single_port),
	    cmocka_unit_test(test_txonly),	    cmocka_unit_test(test_two_lcores_map),
	    cmocka_unit_test(test_txonly_small_pool),
	    cmocka_unit_test(test_malformed_l3fwd), cmocka_unit_test(test_setup_errors),
	    cmocka_unit_test(test_active_window),
	};

	tide_log_set_handler(quiet, NULL);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
