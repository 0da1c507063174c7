/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The info and stats structs carry their size (sz, first member, set by the caller): every
 * getter refuses a size below the struct's first version, fills a struct of exactly its
 * size, and leaves a longer caller's tail and sz as they were. One table over the getters.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tide/lcore.h>
#include <tide/memif.h>
#include <tide/pcap.h>
#include <tide/port.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <tide/simnic.h>
#include <tide/telemetry.h>
#include <tide/vhost.h>

#include "driver.h"
#include "testutil.h"
#include "tmp_util.h"

#define TAIL_MAGIC	   0x5a5a5a5a5a5a5a5aull
#define UPTO(type, member) (offsetof(type, member) + sizeof(((type *)0)->member))

static char dir[64];

/* A getter under test, called with a buffer of @len bytes whose first member is sz. */
struct getter {
	const char *name;
	const char *spec; /* %s: the test's directory */
	size_t size;	  /* sizeof its struct */
	size_t min;	  /* its first version's size: up to the end of its last member then */
	int (*get)(struct tide_port *p, void *out);
	size_t field; /* offset of a field the getter fills with non-zero bytes */
};

static int g_port_info(struct tide_port *p, void *o)
{
	return tide_port_info_get(p, o);
}

static int g_port_stats(struct tide_port *p, void *o)
{
	return tide_port_stats_get(p, o);
}

static int g_memif(struct tide_port *p, void *o)
{
	return tide_memif_info_get(p, o);
}

static int g_vhost(struct tide_port *p, void *o)
{
	return tide_vhost_info_get(p, o);
}

static int g_pcap(struct tide_port *p, void *o)
{
	return tide_pcap_replay_get(p, o);
}

static int g_simnic(struct tide_port *p, void *o)
{
	return tide_simnic_stats_get(p, o);
}

/* The pool's and the telemetry server's: the test's own pool (the port's Rx takes from it)
 * and a server one client has connected to. */
static struct tide_pool *sized_pool;
static struct tide_telemetry *sized_tel;

static int g_pool_stats(struct tide_port *p, void *o)
{
	(void)p;
	return tide_pool_stats_get(sized_pool, o);
}

static int g_tel_stats(struct tide_port *p, void *o)
{
	(void)p;
	return tide_telemetry_stats_get(sized_tel, o);
}

static const struct getter getters[] = {
    {"port_info", "null:size=64", sizeof(struct tide_port_info),
     UPTO(struct tide_port_info, tx_offload_capa), g_port_info,
     offsetof(struct tide_port_info, max_frame)},
    {"port_stats", "null:size=64", sizeof(struct tide_port_stats),
     UPTO(struct tide_port_stats, txq), g_port_stats, offsetof(struct tide_port_stats, ipackets)},
    {"memif_info", "memif:socket=%s/m.sock,role=server", sizeof(struct tide_memif_info),
     UPTO(struct tide_memif_info, peer_name), g_memif, offsetof(struct tide_memif_info, server)},
    {"vhost_info", "vhost:socket=%s/v.sock,role=server", sizeof(struct tide_vhost_info),
     UPTO(struct tide_vhost_info, reason), g_vhost, offsetof(struct tide_vhost_info, server)},
    {"pcap_replay", "pcap:rx=%s/in.pcap", sizeof(struct tide_pcap_replay),
     UPTO(struct tide_pcap_replay, ended), g_pcap, offsetof(struct tide_pcap_replay, total)},
    {"simnic_stats", "simnic:mode=inline,wire=gen", sizeof(struct tide_simnic_stats),
     UPTO(struct tide_simnic_stats, device_idle), g_simnic,
     offsetof(struct tide_simnic_stats, gen_packets)},
    {"pool_stats", "null:size=64", sizeof(struct tide_pool_stats),
     UPTO(struct tide_pool_stats, debug_errors), g_pool_stats,
     offsetof(struct tide_pool_stats, gets)},
    {"telemetry_stats", "null:size=64", sizeof(struct tide_telemetry_stats),
     UPTO(struct tide_telemetry_stats, dropped), g_tel_stats,
     offsetof(struct tide_telemetry_stats, clients)},
};

/* A pcap file of one 60-byte record (microsecond format). */
static void write_pcap(const char *path)
{
	static const uint32_t hdr[6] = {0xa1b2c3d4, 0x00040002, 0, 0, 65535, 1};
	uint32_t rec[4] = {0, 0, 60, 60};
	uint8_t frame[60] = {0};
	FILE *f = fopen(path, "wb");

	require_non_null(f);
	assert_int_equal(fwrite(hdr, sizeof(hdr), 1, f), 1);
	assert_int_equal(fwrite(rec, sizeof(rec), 1, f), 1);
	assert_int_equal(fwrite(frame, sizeof(frame), 1, f), 1);
	assert_int_equal(fclose(f), 0);
}

static bool nonzero(const uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (b[i])
			return true;
	return false;
}

static void check_getter(const struct getter *g, struct tide_pool *pool)
{
	size_t big = g->size + sizeof(uint64_t);
	uint8_t *buf = calloc(1, big);
	struct tide_port *p;
	char spec[128];
	uint64_t tail;

	require_non_null(buf);
	snprintf(spec, sizeof(spec), g->spec, dir);
	if (tide_port_open(spec, &p) != 0)
		fail_msg("%s: cannot open %s", g->name, spec);
	if (strncmp(spec, "memif", 5) != 0 && strncmp(spec, "vhost", 5) != 0) {
		/* Something to count: the getters fill these only from a started port. */
		struct tide_mbuf *m[4];
		unsigned n = 0;

		assert_int_equal(tide_port_configure(p, 1, 0), 0);
		assert_int_equal(tide_rxq_setup(p, 0, 64, pool, NULL), 0);
		assert_int_equal(tide_port_start(p), 0);
		for (int i = 0; i < 1000 && n == 0; i++) {
			n = tide_rx_burst(tide_port_rxq(p, 0), m, 4);
			tide_mbuf_free_bulk(m, n);
		}
	}
	/* Too small: 0, and one byte short of the struct's first version. */
	*(size_t *)buf = 0;
	assert_int_equal(g->get(p, buf), -EINVAL);
	*(size_t *)buf = g->min - 1;
	if (g->get(p, buf) != -EINVAL)
		fail_msg("%s: sz %zu (one short) accepted", g->name, g->min - 1);
	assert_false(nonzero(buf + sizeof(size_t), g->size - sizeof(size_t)));
	/* The first version's size: filled that far, not a byte further. */
	*(size_t *)buf = g->min;
	buf[g->min] = 0xa5;
	assert_int_equal(g->get(p, buf), 0);
	assert_int_equal(*(size_t *)buf, g->min);
	assert_int_equal(buf[g->min], 0xa5);
	/* Exactly its size. */
	*(size_t *)buf = g->size;
	assert_int_equal(g->get(p, buf), 0);
	assert_int_equal(*(size_t *)buf, g->size);
	if (!nonzero(buf + g->field, 4))
		fail_msg("%s: the field at offset %zu was not filled", g->name, g->field);
	/* A newer caller's longer struct: filled as far as the library knows, tail and sz kept. */
	memset(buf, 0, big);
	*(size_t *)buf = big;
	tail = TAIL_MAGIC;
	memcpy(buf + g->size, &tail, sizeof(tail));
	assert_int_equal(g->get(p, buf), 0);
	assert_int_equal(*(size_t *)buf, big);
	memcpy(&tail, buf + g->size, sizeof(tail));
	if (tail != TAIL_MAGIC)
		fail_msg("%s: the caller's tail changed: 0x%llx", g->name,
			 (unsigned long long)tail);
	assert_true(nonzero(buf + g->field, 4));
	/* NULL out. */
	assert_int_equal(g->get(p, NULL), -EINVAL);
	tide_port_close(p);
	free(buf);
}

static void test_getters(void **state)
{
	struct tide_pool *pool;
	char path[96];

	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int cl;

	(void)state;
	assert_int_equal(tide_pktpool_create("sized", 1024, 0, 0, NULL, &pool), 0);
	sized_pool = pool;
	snprintf(path, sizeof(path), "%s/in.pcap", dir);
	write_pcap(path);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/t.sock", dir);
	assert_int_equal(tide_telemetry_open(sa.sun_path, &sized_tel), 0);
	cl = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	assert_true(cl >= 0);
	assert_int_equal(connect(cl, (struct sockaddr *)&sa, sizeof(sa)), 0);
	for (int i = 0; i < 1000; i++) {
		struct tide_telemetry_stats st = {.sz = sizeof(st)};

		tide_telemetry_poll(sized_tel);
		assert_int_equal(tide_telemetry_stats_get(sized_tel, &st), 0);
		if (st.clients == 1)
			break;
		usleep(1000);
	}
	for (size_t i = 0; i < sizeof(getters) / sizeof(getters[0]); i++) {
		char drv[16];

		/* pcap is optional (libpcap); the rest are in every build of this test. */
		snprintf(drv, sizeof(drv), "%.*s", (int)strcspn(getters[i].spec, ":"),
			 getters[i].spec);
		if (tide_driver_find(drv) == NULL) {
			printf("%s: the %s driver is not in this build\n", getters[i].name, drv);
			continue;
		}
		check_getter(&getters[i], pool);
	}
	close(cl);
	tide_telemetry_close(sized_tel);
	assert_pool_full(pool);
	tide_pool_free(pool);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_getters),
	};
	int rc;

	if (tide_thread_register() < 0)
		return 1;
	snprintf(dir, sizeof(dir), "%s/tide-sized-XXXXXX", test_tmp());
	if (mkdtemp(dir) == NULL)
		return 1;
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	/* Also after a failure: what the ports and the test made in the directory. */
	for (unsigned i = 0; i < 4; i++) {
		char path[96];

		snprintf(path, sizeof(path), "%s/%s", dir,
			 (const char *[]){"m.sock", "v.sock", "in.pcap", "t.sock"}[i]);
		unlink(path);
	}
	rmdir(dir);
	return rc;
}
