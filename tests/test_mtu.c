/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MTU and frame limits, over every driver that opens in-process (one table): the limits in
 * the port info, tide_port_mtu_get/set with their refusals (out of range, a driver that
 * cannot change it, one that changes it only while stopped), the MTU a virtio frontend
 * states to a vhost-user backend, and the Rx rule for frames above the MTU: delivered
 * whole up to max_frame; above max_frame the sender drops and counts them.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <tide/lcore.h>
#include <tide/port.h>
#include <tide/vhost.h>

#include "driver.h"
#include "testutil.h"
#include "vhost_front.h"
#include "proc_util.h"
#include "tmp_util.h"

#define DEADLINE_S 10.0

static char dir[64];
static struct tide_pool *pool; /* shared: the virtio rows need it */

static int group_setup(void **state)
{
	struct tide_pktpool_opts o = {.sz = sizeof(o), .pool_flags = TIDE_POOL_F_SHARED};

	(void)state;
	if (tide_thread_register() < 0)
		return -1;
	snprintf(dir, sizeof(dir), "%s/tide-mtu-XXXXXX", test_tmp());
	if (mkdtemp(dir) == NULL)
		return -1;
	return tide_pktpool_create("mtu", 4096, 64, 2048, &o, &pool);
}

static int group_teardown(void **state)
{
	char p[96];

	(void)state;
	tide_pool_free(pool);
	for (unsigned i = 0; i < 3; i++) {
		snprintf(p, sizeof(p), "%s/%s", dir,
			 (const char *[]){"m.sock", "v.sock", "t.pcap"}[i]);
		unlink(p);
	}
	rmdir(dir);
	return 0;
}

enum change { CHANGE_ANY, CHANGE_STOPPED, CHANGE_NEVER };

struct row {
	const char *name;
	const char *spec; /* %s: the test's directory */
	unsigned nrx, ntx;
	unsigned max_frame;
	enum change change;
};

static const struct row rows[] = {
    {"simnic", "simnic:mode=inline,wire=loop", 1, 1, 65535, CHANGE_ANY},
    {"null", "null:size=64", 1, 1, 65535 + 18, CHANGE_ANY},
    {"ring", "ring:name=mtu", 1, 1, 65535 + 18, CHANGE_ANY},
    {"pcap", "pcap:tx=%s/t.pcap", 0, 1, 65535, CHANGE_ANY},
    /* buffer x max_chain */
    {"memif", "memif:socket=%s/m.sock,role=server,buffer=2048,max_chain=4", 1, 1, 8192, CHANGE_ANY},
    /* VHOST_MAX_PKT; the frontend states the MTU */
    {"vhost", "vhost:socket=%s/v.sock,role=server", 1, 1, 16384, CHANGE_NEVER},
    /* stated to the backend when it connects: only while stopped */
    {"virtio", "virtio:path=%s/v.sock,role=client", 1, 1, 65535 + 18, CHANGE_STOPPED},
};

static struct tide_port *row_open(const struct row *r)
{
	char spec[160];
	struct tide_port *p;

	snprintf(spec, sizeof(spec), r->spec, dir);
	if (tide_port_open(spec, &p) != 0)
		fail_msg("%s: cannot open %s", r->name, spec);
	assert_int_equal(tide_port_configure(p, r->nrx, r->ntx), 0);
	for (unsigned q = 0; q < r->nrx; q++)
		assert_int_equal(tide_rxq_setup(p, q, 256, pool, NULL), 0);
	for (unsigned q = 0; q < r->ntx; q++)
		assert_int_equal(tide_txq_setup(p, q, 256, NULL), 0);
	return p;
}

static void expect_mtu(const struct row *r, struct tide_port *p, unsigned want)
{
	struct tide_port_info pi = {.sz = sizeof(pi)};
	unsigned mtu = 0;

	assert_int_equal(tide_port_mtu_get(p, &mtu), 0);
	assert_int_equal(tide_port_info_get(p, &pi), 0);
	if (mtu != want || pi.mtu != want)
		fail_msg("%s: mtu_get %u, info %u, want %u", r->name, mtu, pi.mtu, want);
}

/* One row: the limits, the refusals, a change stopped and one while running. */
static void check_row(const struct row *r)
{
	struct tide_port *p = row_open(r);
	struct tide_port_info pi = {.sz = sizeof(pi)};
	unsigned changed;

	assert_int_equal(tide_port_info_get(p, &pi), 0);
	if (pi.max_frame != r->max_frame)
		fail_msg("%s: max_frame %u, want %u", r->name, pi.max_frame, r->max_frame);
	assert_int_equal(pi.max_mtu, r->max_frame - TIDE_FRAME_OVERHEAD);
	assert_int_equal(pi.min_mtu, TIDE_MIN_MTU);
	expect_mtu(r, p, TIDE_DEFAULT_MTU);

	/* Out of range: refused whatever the driver, nothing changes. */
	assert_int_equal(tide_port_mtu_set(p, TIDE_MIN_MTU - 1), -EINVAL);
	assert_int_equal(tide_port_mtu_set(p, pi.max_mtu + 1), -EINVAL);
	assert_int_equal(tide_port_mtu_set(p, 0), -EINVAL);
	expect_mtu(r, p, TIDE_DEFAULT_MTU);
	/* The value it has: fine everywhere. */
	assert_int_equal(tide_port_mtu_set(p, TIDE_DEFAULT_MTU), 0);

	/* Stopped: the edges of the range. */
	if (r->change == CHANGE_NEVER) {
		assert_int_equal(tide_port_mtu_set(p, pi.max_mtu), -ENOTSUP);
		expect_mtu(r, p, TIDE_DEFAULT_MTU);
	} else {
		assert_int_equal(tide_port_mtu_set(p, pi.max_mtu), 0);
		expect_mtu(r, p, pi.max_mtu);
		assert_int_equal(tide_port_mtu_set(p, TIDE_MIN_MTU), 0);
		expect_mtu(r, p, TIDE_MIN_MTU);
	}
	changed = r->change == CHANGE_NEVER ? TIDE_DEFAULT_MTU : TIDE_MIN_MTU;

	/* Running. */
	assert_int_equal(tide_port_start(p), 0);
	switch (r->change) {
	case CHANGE_ANY:
		assert_int_equal(tide_port_mtu_set(p, 1400), 0);
		expect_mtu(r, p, 1400);
		break;
	case CHANGE_STOPPED:
		assert_int_equal(tide_port_mtu_set(p, 1400), -EBUSY);
		expect_mtu(r, p, changed);
		break;
	case CHANGE_NEVER:
		assert_int_equal(tide_port_mtu_set(p, 1400), -ENOTSUP);
		expect_mtu(r, p, changed);
		break;
	}
	assert_int_equal(tide_port_mtu_set(p, pi.max_mtu + 1), -EINVAL);
	assert_int_equal(tide_port_stop(p), 0);
	if (r->change == CHANGE_STOPPED) {
		assert_int_equal(tide_port_mtu_set(p, 1400), 0);
		expect_mtu(r, p, 1400);
	}
	tide_port_close(p);
	assert_pool_full(pool);
}

static void test_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		/* pcap is optional (libpcap); the rest are in every build of this test. */
		if (tide_driver_find(rows[i].name) == NULL) {
			printf("row %s: the driver is not in this build\n", rows[i].name);
			continue;
		}
		check_row(&rows[i]);
	}
}

/* A frame of @len bytes whose bytes depend on @seed, a chain when it exceeds the data room. */
static struct tide_mbuf *frame(unsigned len, unsigned seed)
{
	struct tide_mbuf *m = tide_mbuf_alloc(pool), *seg = m;
	unsigned off = 0;

	require_non_null(m);
	while (off < len) {
		unsigned k =
		    len - off < tide_mbuf_tailroom(seg) ? len - off : tide_mbuf_tailroom(seg);
		uint8_t *d;

		if (k == 0) {
			seg = tide_mbuf_alloc(pool);
			require_non_null(seg);
			assert_int_equal(tide_mbuf_chain(m, seg), 0);
			continue;
		}
		d = (uint8_t *)tide_mbuf_append(m, (uint16_t)k);
		require_non_null(d);
		for (unsigned i = 0; i < k; i++)
			d[i] = (uint8_t)(seed + off + i);
		off += k;
	}
	return m;
}

static void frame_check(struct tide_mbuf *m, unsigned len, unsigned seed)
{
	uint8_t buf[16384];

	assert_int_equal(m->pkt_len, len);
	assert_int_equal(tide_mbuf_read(m, 0, len, buf), 0);
	for (unsigned i = 0; i < len; i++)
		if (buf[i] != (uint8_t)(seed + i))
			fail_msg("byte %u of a %u-byte frame: 0x%02x, want 0x%02x", i, len, buf[i],
				 (uint8_t)(seed + i));
}

/* Send one frame on @a and receive it on @b within the deadline (both ports polled). */
static void pass(struct tide_port *a, struct tide_port *b, unsigned len, unsigned seed)
{
	struct tide_mbuf *m = frame(len, seed), *got = NULL;
	double end = now_s() + DEADLINE_S;

	assert_int_equal(tide_tx_burst(tide_port_txq(a, 0), &m, 1), 1);
	while (got == NULL) {
		if (now_s() > end)
			fail_msg("a %u-byte frame did not arrive", len);
		tide_port_poll_ctl(a);
		tide_port_poll_ctl(b);
		tide_txq_done_cleanup(tide_port_txq(a, 0), 0);
		tide_rx_burst(tide_port_rxq(b, 0), &got, 1);
	}
	frame_check(got, len, seed);
	tide_mbuf_free(got);
}

static void up(struct tide_port *a, struct tide_port *b)
{
	double end = now_s() + DEADLINE_S;
	struct tide_link la, lb;

	do {
		tide_port_poll_ctl(a);
		tide_port_poll_ctl(b);
		assert_int_equal(tide_port_link_get(a, &la), 0);
		assert_int_equal(tide_port_link_get(b, &lb), 0);
		if (now_s() > end)
			fail_msg("link not up: %d %d", la.up, lb.up);
		usleep(1000);
	} while (!la.up || !lb.up);
}

static struct tide_port *open_started(const char *fmt)
{
	char spec[160];
	struct tide_port *p;

	snprintf(spec, sizeof(spec), fmt, dir);
	if (tide_port_open(spec, &p) != 0)
		fail_msg("cannot open %s", spec);
	assert_int_equal(tide_port_configure(p, 1, 1), 0);
	assert_int_equal(tide_rxq_setup(p, 0, 256, pool, NULL), 0);
	assert_int_equal(tide_txq_setup(p, 0, 256, NULL), 0);
	return p;
}

/* Rx of frames above the MTU: delivered whole, no error, on ring and memif; above memif's
 * max_frame the sender drops the frame and counts it. */
static void test_rx_oversize(void **state)
{
	struct tide_port *a, *b;
	struct tide_port_stats st = {.sz = sizeof(st)};
	struct tide_port_info pi = {.sz = sizeof(pi)};
	struct tide_mbuf *m;

	(void)state;
	a = open_started("ring:name=ov");
	b = open_started("ring:name=ov,peer=1");
	assert_int_equal(tide_port_mtu_set(a, 1500), 0);
	assert_int_equal(tide_port_mtu_set(b, 1000), 0);
	assert_int_equal(tide_port_start(a), 0);
	assert_int_equal(tide_port_start(b), 0);
	pass(a, b, 1000 + TIDE_FRAME_OVERHEAD, 1);
	pass(a, b, 1000 + TIDE_FRAME_OVERHEAD + 1, 2);
	pass(a, b, 9000, 3);
	assert_int_equal(tide_port_stats_get(b, &st), 0);
	assert_int_equal(st.ipackets, 3);
	assert_int_equal(st.ierrors, 0);
	tide_port_close(a);
	tide_port_close(b);
	assert_pool_full(pool);

	/* memif: 4 buffers of 1024 bytes, a 4096-byte frame at most. */
	a = open_started("memif:socket=%s/m.sock,role=server,buffer=1024,max_chain=4");
	b = open_started("memif:socket=%s/m.sock,role=client,buffer=1024,max_chain=4");
	assert_int_equal(tide_port_info_get(b, &pi), 0);
	assert_int_equal(pi.max_frame, 4096);
	assert_int_equal(tide_port_mtu_set(a, 1500), 0);
	assert_int_equal(tide_port_mtu_set(b, 1500), 0);
	assert_int_equal(tide_port_start(a), 0);
	assert_int_equal(tide_port_start(b), 0);
	up(a, b);
	pass(a, b, 1500 + TIDE_FRAME_OVERHEAD + 1, 4);
	pass(b, a, 4096, 5);
	m = frame(4097, 6);
	assert_int_equal(tide_tx_burst(tide_port_txq(a, 0), &m, 1), 1);
	tide_txq_done_cleanup(tide_port_txq(a, 0), 0);
	assert_int_equal(tide_port_stats_get(a, &st), 0);
	assert_int_equal(st.oerrors, 1);
	assert_int_equal(st.ipackets, 1);
	assert_int_equal(st.ierrors, 0);
	assert_int_equal(tide_port_stats_get(b, &st), 0);
	assert_int_equal(st.ipackets, 1);
	assert_int_equal(st.ierrors, 0);
	tide_port_close(b);
	tide_port_close(a);
	assert_pool_full(pool);
}

/* A virtio frontend states its MTU to tide's vhost-user backend (NET_SET_MTU), which
 * reports it; a value the backend refuses fails the handshake, and the backend keeps its
 * MTU. */
static void test_virtio_states_mtu(void **state)
{
	struct tide_port *h, *v;
	uint64_t d0, d;
	unsigned mtu;
	double end;

	(void)state;
	h = open_started("vhost:socket=%s/v.sock,role=server");
	v = open_started("virtio:path=%s/v.sock,role=client");
	assert_int_equal(tide_port_mtu_set(v, 9000), 0);
	assert_int_equal(tide_port_start(h), 0);
	assert_int_equal(tide_port_start(v), 0);
	up(v, h);
	assert_int_equal(tide_port_mtu_get(h, &mtu), 0);
	assert_int_equal(mtu, 9000);
	{
		struct tide_port_info pi = {.sz = sizeof(pi)};

		assert_int_equal(tide_port_info_get(h, &pi), 0);
		assert_int_equal(pi.mtu, 9000);
	}
	assert_int_equal(tide_port_stop(v), 0);

	/* Above vhost's max_mtu (16366): refused, so the handshake fails (the frontend drops
	 * the connection) and the link stays down; the backend keeps its MTU. */
	assert_int_equal(tide_port_mtu_set(v, 20000), 0);
	assert_int_equal(tide_xstats_get_by_name(v, "virtio_disconnects", &d0), 0);
	assert_int_equal(tide_port_start(v), 0);
	end = now_s() + DEADLINE_S;
	do {
		struct tide_link l;

		assert_int_equal(tide_port_link_get(v, &l), 0);
		assert_int_equal(l.up, 0);
		if (now_s() > end)
			fail_msg("the refused handshake did not end the connection");
		usleep(1000);
		assert_int_equal(tide_xstats_get_by_name(v, "virtio_disconnects", &d), 0);
	} while (d == d0);
	assert_int_equal(tide_port_mtu_get(h, &mtu), 0);
	assert_int_equal(mtu, 9000);
	tide_port_close(v);
	tide_port_close(h);
	assert_pool_full(pool);
}

/* One message that asks for the backend's reply (REPLY_ACK): returns the reply's value. */
static uint64_t fe_acked_u64(struct fe *f, uint32_t req, uint64_t v)
{
	uint64_t r = ~0ull;

	fe_send_raw(f, req, VHOST_USER_VERSION | VHOST_USER_NEED_REPLY, 8, &v, 8, NULL, 0);
	if (fe_reply(f, &r, 8) < 0)
		fail_msg("request %u: the backend closed the connection", req);
	return r;
}

/*
 * vhost offers VIRTIO_NET_F_MTU unless mtu=no. A frontend that shows its MTU to the guest
 * only when the backend offers the bit (QEMU with x-mtu-bypass-backend=off, the machine
 * types before 2.10) then states it (NET_SET_MTU before SET_FEATURES, as QEMU does) and
 * acknowledges the bit; the port reports that MTU. With mtu=no the bit is not offered, the
 * frontend keeps its MTU to itself and the port keeps its own; a frontend that takes the
 * bit anyway is refused like any feature not offered.
 */
static void test_vhost_offers_mtu(void **state)
{
	static const char *const specs[] = {"vhost:socket=%s/v.sock,role=server",
					    "vhost:socket=%s/v.sock,role=server,mtu=no"};
	const uint64_t base =
	    VIRTIO_BIT(VIRTIO_F_VERSION_1) | VIRTIO_BIT(VHOST_USER_F_PROTOCOL_FEATURES);
	char path[96];

	(void)state;
	snprintf(path, sizeof(path), "%s/v.sock", dir);
	for (unsigned i = 0; i < 2; i++) {
		struct tide_vhost_info vi = {.sz = sizeof(vi)};
		struct tide_port *h = open_started(specs[i]);
		bool want = i == 0, offered;
		uint64_t u = 0, v0;
		unsigned mtu;
		struct fe f;

		assert_int_equal(tide_port_start(h), 0);
		fe_init(&f);
		fe_connect(&f, path);
		fe_send(&f, VHOST_USER_GET_FEATURES, NULL, 0, NULL, 0);
		assert_int_equal(fe_reply(&f, &u, 8), 0);
		offered = u & VIRTIO_BIT(VIRTIO_NET_F_MTU);
		if (offered != want)
			fail_msg("%s: VIRTIO_NET_F_MTU %soffered (features 0x%llx)",
				 i ? "mtu=no" : "default", offered ? "" : "not ",
				 (unsigned long long)u);
		fe_send(&f, VHOST_USER_GET_PROTOCOL_FEATURES, NULL, 0, NULL, 0);
		assert_int_equal(fe_reply(&f, &u, 8), 0);
		assert_true(u & VIRTIO_BIT(VHOST_USER_PROTOCOL_F_NET_MTU));
		fe_send_u64(&f, VHOST_USER_SET_PROTOCOL_FEATURES,
			    VIRTIO_BIT(VHOST_USER_PROTOCOL_F_MQ) |
				VIRTIO_BIT(VHOST_USER_PROTOCOL_F_REPLY_ACK) |
				VIRTIO_BIT(VHOST_USER_PROTOCOL_F_NET_MTU));
		fe_send(&f, VHOST_USER_SET_OWNER, NULL, 0, NULL, 0);
		if (offered) /* the guest got the bit: the frontend states its MTU */
			assert_int_equal(fe_acked_u64(&f, VHOST_USER_NET_SET_MTU, 9000), 0);
		assert_int_equal(fe_acked_u64(&f, VHOST_USER_SET_FEATURES,
					      base | (offered ? VIRTIO_BIT(VIRTIO_NET_F_MTU) : 0)),
				 0);
		assert_int_equal(tide_vhost_info_get(h, &vi), 0);
		assert_int_equal(!!(vi.features & VIRTIO_BIT(VIRTIO_NET_F_MTU)), want);
		assert_int_equal(tide_port_mtu_get(h, &mtu), 0);
		assert_int_equal(mtu, want ? 9000 : TIDE_DEFAULT_MTU);
		if (!want) {
			/* Taken although not offered: the frontend is dropped. */
			v0 = vi.violations;
			fe_send_u64(&f, VHOST_USER_SET_FEATURES,
				    base | VIRTIO_BIT(VIRTIO_NET_F_MTU));
			assert_int_equal(fe_reply(&f, &u, 8), -1);
			assert_int_equal(tide_vhost_info_get(h, &vi), 0);
			assert_int_equal(vi.violations, v0 + 1);
			assert_non_null(strstr(vi.reason, "not offered"));
		}
		fe_fini(&f);
		tide_port_close(h);
	}
	assert_pool_full(pool);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_table),
	    cmocka_unit_test(test_rx_oversize),
	    cmocka_unit_test(test_virtio_states_mtu),
	    cmocka_unit_test(test_vhost_offers_mtu),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
