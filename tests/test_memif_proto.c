/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * memif protocol layer: wire layout, encode/decode round trips, one rejection per validation
 * rule (with its reason), the control state machine of both roles, and the checks on
 * peer-written descriptors and ring indices.
 */
#include <errno.h>
#include <string.h>

#include "copy.h"
#include "memif_desc.h"
#include "memif_msg.h"

#include "testutil.h"

/* ---- Message builders --------------------------------------------------------------------- */

static struct memif_msg mk(uint16_t type)
{
	struct memif_msg m;

	memset(&m, 0, sizeof(m));
	m.type = type;
	return m;
}

static struct memif_msg mk_hello(void)
{
	struct memif_msg m = mk(MEMIF_MSG_HELLO);

	strcpy(m.hello.name, "server-app");
	m.hello.min_version = MEMIF_VERSION;
	m.hello.max_version = MEMIF_VERSION;
	m.hello.max_region = 3;
	m.hello.max_s2c_ring = 1;
	m.hello.max_c2s_ring = 2;
	m.hello.max_log2_ring_size = 12;
	return m;
}

static struct memif_msg mk_init(void)
{
	struct memif_msg m = mk(MEMIF_MSG_INIT);

	m.init.version = MEMIF_VERSION;
	m.init.id = 0x01020304;
	m.init.mode = MEMIF_MODE_ETHERNET;
	strcpy(m.init.secret, "s3cr3t");
	strcpy(m.init.name, "client-app");
	return m;
}

static struct memif_msg mk_region(uint16_t index, uint64_t size)
{
	struct memif_msg m = mk(MEMIF_MSG_ADD_REGION);

	m.add_region.index = index;
	m.add_region.size = size;
	return m;
}

static struct memif_msg mk_ring(int c2s, uint16_t index, uint16_t region, uint32_t offset,
				uint8_t log2)
{
	struct memif_msg m = mk(MEMIF_MSG_ADD_RING);

	m.add_ring.flags = c2s ? MEMIF_RING_FLAG_C2S : 0;
	m.add_ring.index = index;
	m.add_ring.region = region;
	m.add_ring.offset = offset;
	m.add_ring.log2_ring_size = log2;
	return m;
}

static struct memif_msg mk_connect(uint16_t type)
{
	struct memif_msg m = mk(type);

	strcpy(m.connect.if_name, "memif0/0");
	return m;
}

static struct memif_msg mk_disconnect(void)
{
	struct memif_msg m = mk(MEMIF_MSG_DISCONNECT);

	m.disconnect.code = 7;
	strcpy(m.disconnect.reason, "going away");
	return m;
}

static void encode(const struct memif_msg *m, uint8_t buf[MEMIF_MSG_SIZE])
{
	assert_int_equal(memif_msg_encode(m, buf), 0);
}

/* ---- Wire format -------------------------------------------------------------------------- */

static void test_roundtrip_every_type(void **state)
{
	struct memif_msg in[] = {
	    mk(MEMIF_MSG_ACK),
	    mk_hello(),
	    mk_init(),
	    mk_region(5, 1ull << 33),
	    mk_ring(1, 7, 2, 4096, 14),
	    mk_connect(MEMIF_MSG_CONNECT),
	    mk_connect(MEMIF_MSG_CONNECTED),
	    mk_disconnect(),
	};
	uint8_t buf[MEMIF_MSG_SIZE];

	(void)state;
	assert_int_equal(sizeof(in) / sizeof(in[0]), MEMIF_MSG_TYPE_MAX);
	for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
		struct memif_msg out;
		const char *why = NULL;

		memset(&out, 0xa5, sizeof(out));
		encode(&in[i], buf);
		assert_int_equal(buf[0] | buf[1] << 8, in[i].type);
		assert_int_equal(memif_msg_decode(buf, sizeof(buf), &out, &why), 0);
		assert_null(why);
		assert_memory_equal(&out, &in[i], sizeof(out));
	}
	assert_int_equal(memif_msg_encode(&(struct memif_msg){.type = 0}, buf), -EINVAL);
	assert_int_equal(memif_msg_encode(&(struct memif_msg){.type = 9}, buf), -EINVAL);
}

static uint32_t le(const uint8_t *p, int n)
{
	uint32_t v = 0;

	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* Byte positions written out by hand from the protocol, independent of the structs. */
static void test_wire_offsets(void **state)
{
	uint8_t b[MEMIF_MSG_SIZE];
	struct memif_msg m;
	const uint8_t *p = b + 2;

	(void)state;
	m = mk_hello();
	encode(&m, b);
	assert_string_equal((const char *)p, "server-app");
	assert_int_equal(le(p + 32, 2), 0x0200);
	assert_int_equal(le(p + 34, 2), 0x0200);
	assert_int_equal(le(p + 36, 2), 3);
	assert_int_equal(le(p + 38, 2), 1); /* S2C ("M2S") before C2S */
	assert_int_equal(le(p + 40, 2), 2);
	assert_int_equal(p[42], 12);

	m = mk_init();
	encode(&m, b);
	assert_int_equal(le(p, 2), 0x0200);
	assert_int_equal(le(p + 2, 4), 0x01020304);
	assert_int_equal(p[6], 0);
	assert_string_equal((const char *)p + 7, "s3cr3t");
	assert_string_equal((const char *)p + 31, "client-app");

	m = mk_region(3, 0x1122334455667788ull);
	encode(&m, b);
	assert_int_equal(le(p, 2), 3);
	assert_int_equal(le(p + 2, 4), 0x55667788);
	assert_int_equal(le(p + 6, 4), 0x11223344);

	m = mk_ring(1, 0x0102, 0x0304, 0x05060708, 9);
	m.add_ring.private_hdr_size = 0x0a0b;
	encode(&m, b);
	assert_int_equal(le(p, 2), 1);
	assert_int_equal(le(p + 2, 2), 0x0102);
	assert_int_equal(le(p + 4, 2), 0x0304);
	assert_int_equal(le(p + 6, 4), 0x05060708);
	assert_int_equal(p[10], 9);
	assert_int_equal(le(p + 11, 2), 0x0a0b);

	m = mk_disconnect();
	encode(&m, b);
	assert_int_equal(le(p, 4), 7);
	assert_string_equal((const char *)p + 4, "going away");
	for (int i = 2 + 4 + 11; i < MEMIF_MSG_SIZE; i++)
		assert_int_equal(b[i], 0);

	assert_int_equal(memif_ring_bytes(10), 128 + 16 * 1024);
}

/* A string that fills its field has no NUL on the wire: read no further, terminate locally. */
static void test_strings_bounded(void **state)
{
	uint8_t b[MEMIF_MSG_SIZE];
	struct memif_msg m = mk_init(), out;

	(void)state;
	encode(&m, b);
	memset(b + 2 + 7, 'S', MEMIF_SECRET_LEN);
	memset(b + 2 + 31, 'N', MEMIF_NAME_LEN);
	memset(b + 2 + 63, 'X', MEMIF_MSG_SIZE - 2 - 63); /* garbage after the payload */
	assert_int_equal(memif_msg_decode(b, sizeof(b), &out, NULL), 0);
	assert_int_equal(strlen(out.init.secret), MEMIF_SECRET_LEN);
	assert_int_equal(strlen(out.init.name), MEMIF_NAME_LEN);
	assert_int_equal(out.init.secret[0], 'S');
	assert_int_equal(out.init.name[MEMIF_NAME_LEN - 1], 'N');

	m = mk_disconnect();
	encode(&m, b);
	memset(b + 2 + 4, 'R', MEMIF_MSG_SIZE - 6);
	assert_int_equal(memif_msg_decode(b, sizeof(b), &out, NULL), 0);
	assert_int_equal(strlen(out.disconnect.reason), MEMIF_REASON_LEN);
}

/* ---- Decode validation: one case per rule ------------------------------------------------- */

struct decode_case {
	const char *what;
	struct memif_msg m;
	size_t len;	   /* 0: MEMIF_MSG_SIZE */
	uint16_t raw_type; /* non-zero: overwrite the type on the wire */
	int err;
	const char *reason;
};

static void test_decode_rejects(void **state)
{
	struct decode_case c[] = {
	    {"short", mk(MEMIF_MSG_ACK), 127, 0, -EPROTO, "bad message size"},
	    {"long", mk(MEMIF_MSG_ACK), 129, 0, -EPROTO, "bad message size"},
	    {"empty", mk(MEMIF_MSG_ACK), 1, 0, -EPROTO, "bad message size"},
	    {"type none", mk(MEMIF_MSG_ACK), 0, 0xff00, -EPROTO, "unknown message type"},
	    {"type 9", mk(MEMIF_MSG_ACK), 0, 9, -EPROTO, "unknown message type"},
	    {"type big", mk(MEMIF_MSG_ACK), 0, 0xffff, -EPROTO, "unknown message type"},
	    {"hello min", mk_hello(), 0, 0, -EINVAL, "incompatible version"},
	    {"hello max", mk_hello(), 0, 0, -EINVAL, "incompatible version"},
	    {"init version", mk_init(), 0, 0, -EINVAL, "incompatible version"},
	    {"init mode", mk_init(), 0, 0, -EINVAL, "only ethernet mode is supported"},
	    {"region index", mk_region(MEMIF_MAX_REGIONS, 4096), 0, 0, -EINVAL,
	     "region index out of range"},
	    {"region size 0", mk_region(0, 0), 0, 0, -EINVAL, "bad region size"},
	    {"region size big", mk_region(0, MEMIF_REGION_SIZE_MAX + 1), 0, 0, -EINVAL,
	     "bad region size"},
	    {"ring flags", mk_ring(1, 0, 0, 0, 10), 0, 0, -EINVAL, "unknown ring flags"},
	    {"ring index", mk_ring(1, MEMIF_MAX_RINGS, 0, 0, 10), 0, 0, -EINVAL,
	     "ring index out of range"},
	    {"ring region", mk_ring(0, 0, MEMIF_MAX_REGIONS, 0, 10), 0, 0, -EINVAL,
	     "ring region out of range"},
	    {"ring offset", mk_ring(0, 0, 0, 2, 10), 0, 0, -EINVAL, "ring offset misaligned"},
	    {"ring log2", mk_ring(0, 0, 0, 0, MEMIF_LOG2_RING_SIZE_MAX + 1), 0, 0, -EINVAL,
	     "ring size too big"},
	    {"ring private", mk_ring(0, 0, 0, 0, 10), 0, 0, -EINVAL,
	     "private header not supported"},
	};

	(void)state;
	c[6].m.hello.min_version = 0x0201;
	c[6].m.hello.max_version = 0x0300;
	c[7].m.hello.min_version = 0x0100;
	c[7].m.hello.max_version = 0x01ff;
	c[8].m.init.version = 0x0201;
	c[9].m.init.mode = MEMIF_MODE_IP;
	c[13].m.add_ring.flags = 0x0002 | MEMIF_RING_FLAG_C2S;
	c[18].m.add_ring.private_hdr_size = 16;
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		uint8_t b[MEMIF_MSG_SIZE + 8];
		struct memif_msg out, before;
		const char *why = NULL;

		memset(b, 0, sizeof(b));
		encode(&c[i].m, b);
		if (c[i].raw_type) {
			uint16_t t = c[i].raw_type == 0xff00 ? 0 : c[i].raw_type;

			b[0] = t & 0xff;
			b[1] = t >> 8;
		}
		memset(&out, 0x5a, sizeof(out));
		before = out;
		assert_int_equal(
		    memif_msg_decode(b, c[i].len ? c[i].len : MEMIF_MSG_SIZE, &out, &why),
		    c[i].err);
		assert_non_null(why);
		if (strcmp(why, c[i].reason))
			fail_msg("%s: reason \"%s\", expected \"%s\"", c[i].what, why, c[i].reason);
		assert_memory_equal(&out, &before, sizeof(out));
		assert_true(strlen(why) < MEMIF_REASON_LEN);
	}
}

/* Decoding a re-encoded decoded message gives the same message (random wire bytes). */
static void test_decode_random(void **state)
{
	uint64_t seed = 0x6d656d6966ull;
	unsigned int ok = 0;

	(void)state;
	for (int i = 0; i < 200000; i++) {
		uint8_t b[MEMIF_MSG_SIZE], b2[MEMIF_MSG_SIZE];
		struct memif_msg m, m2;

		for (int j = 0; j < MEMIF_MSG_SIZE; j += 8) {
			uint64_t r = test_rand(&seed);

			memcpy(b + j, &r, 8);
		}
		b[0] = (uint8_t)(b[0] % 10); /* mostly known types */
		b[1] = (b[1] & 0xf0) ? 0 : b[1];
		if (i & 1) { /* valid versions half of the time */
			b[2] = 0;
			b[3] = 2;
			b[2 + 32] = 0;
			b[2 + 33] = 1;
			b[2 + 34] = 0;
			b[2 + 35] = 3;
		}
		if (memif_msg_decode(b, sizeof(b), &m, NULL))
			continue;
		ok++;
		encode(&m, b2);
		assert_int_equal(memif_msg_decode(b2, sizeof(b2), &m2, NULL), 0);
		assert_memory_equal(&m, &m2, sizeof(m));
	}
	assert_true(ok > 1000);
}

static void test_secret(void **state)
{
	struct memif_msg m = mk_init();
	const char *why = NULL;

	(void)state;
	assert_int_equal(memif_msg_secret_check(NULL, &m.init, &why), 0);
	assert_int_equal(memif_msg_secret_check("", &m.init, &why), 0);
	assert_int_equal(memif_msg_secret_check("s3cr3t", &m.init, &why), 0);
	assert_int_equal(memif_msg_secret_check("s3cr3", &m.init, &why), -EINVAL);
	assert_string_equal(why, "incorrect secret");
	assert_int_equal(memif_msg_secret_check("s3cr3t!", &m.init, &why), -EINVAL);
	m.init.secret[0] = '\0';
	assert_int_equal(memif_msg_secret_check("s3cr3t", &m.init, &why), -EINVAL);
	/* Only the first MEMIF_SECRET_LEN bytes count, as on the wire. */
	memset(m.init.secret, 'k', MEMIF_SECRET_LEN);
	assert_int_equal(memif_msg_secret_check("kkkkkkkkkkkkkkkkkkkkkkkkEXTRA", &m.init, &why), 0);
}

/* ---- Server state machine ----------------------------------------------------------------- */

static const struct memif_limits server_lim = {
    .regions = 2, .c2s_rings = 2, .s2c_rings = 1, .max_log2_ring_size = 12};

#define RING_BYTES_10 (128 + 16 * 1024)

static void step_ok(struct memif_conn *c, struct memif_msg m, unsigned int fds,
		    enum memif_state want)
{
	const char *why = NULL;
	int ret = memif_conn_step(c, &m, fds, &why);

	if (ret)
		fail_msg("type %u rejected: %s", m.type, why);
	assert_int_equal(c->state, want);
}

static void step_err(struct memif_conn *c, struct memif_msg m, unsigned int fds, int err,
		     const char *reason)
{
	struct memif_conn before = *c;
	const char *why = NULL;

	assert_int_equal(memif_conn_step(c, &m, fds, &why), err);
	assert_non_null(why);
	if (strcmp(why, reason))
		fail_msg("type %u: reason \"%s\", expected \"%s\"", m.type, why, reason);
	assert_memory_equal(c, &before, sizeof(before));
}

static void server_new(struct memif_conn *c)
{
	assert_int_equal(memif_conn_init(c, MEMIF_ROLE_SERVER, &server_lim), 0);
	assert_int_equal(c->state, MEMIF_STATE_WAIT_INIT);
	assert_int_equal(memif_conn_sent(c, MEMIF_MSG_HELLO), 0);
}

/* Server after init and one region of 1 MiB. */
static void server_configuring(struct memif_conn *c)
{
	server_new(c);
	step_ok(c, mk_init(), 0, MEMIF_STATE_CONFIG);
	step_ok(c, mk_region(0, 1 << 20), 1, MEMIF_STATE_CONFIG);
}

static void test_server_happy_path(void **state)
{
	struct memif_conn c;

	(void)state;
	server_new(&c);
	step_ok(&c, mk_init(), 0, MEMIF_STATE_CONFIG);
	assert_int_equal(memif_conn_sent(&c, MEMIF_MSG_ACK), 0);
	step_ok(&c, mk_region(0, 1 << 20), 1, MEMIF_STATE_CONFIG);
	step_ok(&c, mk_region(1, 4096), 1, MEMIF_STATE_CONFIG);
	/* Rings in any order, each inside a region already added. */
	step_ok(&c, mk_ring(1, 1, 0, RING_BYTES_10, 10), 1, MEMIF_STATE_CONFIG);
	step_ok(&c, mk_ring(0, 0, 0, 2 * RING_BYTES_10, 10), 1, MEMIF_STATE_CONFIG);
	step_ok(&c, mk_ring(1, 0, 1, 4096 - 128 - 16 * 16, 4), 1, MEMIF_STATE_CONFIG);
	assert_int_equal(c.n_regions, 2);
	assert_int_equal(c.region_size[0], 1 << 20);
	assert_int_equal(c.n_rings[MEMIF_DIR_C2S], 2);
	assert_int_equal(c.n_rings[MEMIF_DIR_S2C], 1);
	step_ok(&c, mk_connect(MEMIF_MSG_CONNECT), 0, MEMIF_STATE_CONNECTED);
	assert_int_equal(memif_conn_sent(&c, MEMIF_MSG_CONNECTED), 0);
	assert_int_equal(memif_conn_sent(&c, MEMIF_MSG_ACK), -EINVAL);
	step_err(&c, mk(MEMIF_MSG_ACK), 0, -EPROTO, "unexpected message");
	step_ok(&c, mk_disconnect(), 0, MEMIF_STATE_CLOSED);
	step_err(&c, mk_disconnect(), 0, -EPROTO, "connection closed");
	step_err(&c, mk_init(), 0, -EPROTO, "connection closed");
	assert_int_equal(memif_conn_sent(&c, MEMIF_MSG_DISCONNECT), -EINVAL);
}

static void test_server_rejects(void **state)
{
	struct memif_conn c;

	(void)state;
	/* Message before init, and the wrong role's messages. */
	server_new(&c);
	step_err(&c, mk_region(0, 4096), 1, -EPROTO, "expected init");
	step_err(&c, mk_connect(MEMIF_MSG_CONNECT), 0, -EPROTO, "expected init");
	step_err(&c, mk_hello(), 0, -EPROTO, "expected init");
	step_err(&c, mk_init(), 1, -EPROTO, "unexpected file descriptor");
	step_ok(&c, mk_init(), 0, MEMIF_STATE_CONFIG);
	step_err(&c, mk_init(), 0, -EPROTO, "unexpected message");
	step_err(&c, mk(MEMIF_MSG_ACK), 0, -EPROTO, "unexpected message");
	step_err(&c, mk_connect(MEMIF_MSG_CONNECTED), 0, -EPROTO, "unexpected message");

	/* Regions: in order from 0, one fd each, below the advertised count. */
	step_err(&c, mk_region(1, 4096), 1, -EPROTO, "region index out of order");
	step_err(&c, mk_region(0, 4096), 0, -EPROTO, "missing file descriptor");
	step_err(&c, mk_region(0, 4096), 2, -EPROTO, "unexpected file descriptor");
	step_err(&c, mk_connect(MEMIF_MSG_CONNECT), 0, -EPROTO, "no region");
	step_ok(&c, mk_region(0, 1 << 20), 1, MEMIF_STATE_CONFIG);
	step_err(&c, mk_region(0, 4096), 1, -EPROTO, "region index out of order");
	step_ok(&c, mk_region(1, 4096), 1, MEMIF_STATE_CONFIG);
	step_err(&c, mk_region(2, 4096), 1, -EINVAL, "region index out of range");

	/* Rings. */
	server_configuring(&c);
	step_err(&c, mk_ring(1, 0, 0, 0, 10), 0, -EPROTO, "missing file descriptor");
	step_err(&c, mk_ring(1, 0, 0, 0, 10), 3, -EPROTO, "unexpected file descriptor");
	step_err(&c, mk_ring(1, 2, 0, 0, 10), 1, -EINVAL, "ring index out of range");
	step_err(&c, mk_ring(0, 1, 0, 0, 10), 1, -EINVAL, "ring index out of range");
	step_err(&c, mk_ring(1, 0, 1, 0, 10), 1, -EINVAL, "ring region not added");
	step_err(&c, mk_ring(1, 0, 0, 0, 13), 1, -EINVAL, "ring size above the advertised maximum");
	step_err(&c, mk_ring(1, 0, 0, (1 << 20) - RING_BYTES_10 + 4, 10), 1, -EINVAL,
		 "ring beyond its region");
	step_err(&c, mk_ring(1, 0, 0, 0xfffffffc, 12), 1, -EINVAL, "ring beyond its region");
	step_ok(&c, mk_ring(1, 0, 0, (1 << 20) - RING_BYTES_10, 10), 1, MEMIF_STATE_CONFIG);
	step_err(&c, mk_ring(1, 0, 0, 0, 10), 1, -EPROTO, "duplicate ring index");
	step_err(&c, mk_connect(MEMIF_MSG_CONNECT), 0, -EPROTO, "missing rings");
	step_ok(&c, mk_ring(0, 0, 0, 0, 10), 1, MEMIF_STATE_CONFIG);
	step_err(&c, mk_connect(MEMIF_MSG_CONNECT), 1, -EPROTO, "unexpected file descriptor");
	step_ok(&c, mk_connect(MEMIF_MSG_CONNECT), 0, MEMIF_STATE_CONNECTED);
	step_err(&c, mk_region(1, 4096), 1, -EPROTO, "unexpected message");

	/* A hole in the ring indices: C2S 1 without C2S 0. */
	server_configuring(&c);
	step_ok(&c, mk_ring(1, 1, 0, 0, 10), 1, MEMIF_STATE_CONFIG);
	step_ok(&c, mk_ring(0, 0, 0, RING_BYTES_10, 10), 1, MEMIF_STATE_CONFIG);
	step_err(&c, mk_connect(MEMIF_MSG_CONNECT), 0, -EPROTO, "missing rings");
	assert_int_equal(memif_conn_sent(&c, MEMIF_MSG_INIT), -EINVAL);
}

static void test_disconnect_any_state(void **state)
{
	(void)state;
	for (int role = 0; role < 2; role++) {
		for (int depth = 0; depth < 3; depth++) {
			struct memif_conn c;

			if (role == 0) {
				server_new(&c);
				if (depth > 0)
					step_ok(&c, mk_init(), 0, MEMIF_STATE_CONFIG);
				if (depth > 1) {
					step_ok(&c, mk_region(0, 1 << 20), 1, MEMIF_STATE_CONFIG);
					step_ok(&c, mk_ring(1, 0, 0, 0, 10), 1, MEMIF_STATE_CONFIG);
					step_ok(&c, mk_ring(0, 0, 0, RING_BYTES_10, 10), 1,
						MEMIF_STATE_CONFIG);
					step_ok(&c, mk_connect(MEMIF_MSG_CONNECT), 0,
						MEMIF_STATE_CONNECTED);
				}
			} else {
				assert_int_equal(memif_conn_init(&c, MEMIF_ROLE_CLIENT, NULL), 0);
				if (depth > 0)
					step_ok(&c, mk_hello(), 0, MEMIF_STATE_SETUP);
				if (depth > 1) {
					assert_int_equal(memif_conn_sent(&c, MEMIF_MSG_INIT), 0);
					assert_int_equal(memif_conn_sent(&c, MEMIF_MSG_DISCONNECT),
							 0);
					assert_int_equal(c.state, MEMIF_STATE_CLOSED);
					continue;
				}
			}
			step_err(&c, mk_disconnect(), 1, -EPROTO, "unexpected file descriptor");
			step_ok(&c, mk_disconnect(), 0, MEMIF_STATE_CLOSED);
		}
	}
}

static void test_conn_init_errors(void **state)
{
	struct memif_conn c;
	struct memif_limits l = server_lim;

	(void)state;
	assert_int_equal(memif_conn_init(&c, MEMIF_ROLE_SERVER, NULL), -EINVAL);
	assert_int_equal(memif_conn_init(&c, MEMIF_ROLE_CLIENT, &l), -EINVAL);
	assert_int_equal(memif_conn_init(&c, (enum memif_role)7, NULL), -EINVAL);
	l.regions = 0;
	assert_int_equal(memif_conn_init(&c, MEMIF_ROLE_SERVER, &l), -EINVAL);
	l = server_lim;
	l.c2s_rings = MEMIF_MAX_RINGS + 1;
	assert_int_equal(memif_conn_init(&c, MEMIF_ROLE_SERVER, &l), -EINVAL);
	l = server_lim;
	l.max_log2_ring_size = MEMIF_LOG2_RING_SIZE_MAX + 1;
	assert_int_equal(memif_conn_init(&c, MEMIF_ROLE_SERVER, &l), -EINVAL);
}

/* ---- Client state machine ----------------------------------------------------------------- */

static void test_client_happy_path(void **state)
{
	struct memif_conn c;
	struct memif_msg hello;
	uint8_t b[MEMIF_MSG_SIZE];

	(void)state;
	assert_int_equal(memif_conn_init(&c, MEMIF_ROLE_CLIENT, NULL), 0);
	assert_int_equal(c.state, MEMIF_STATE_WAIT_HELLO);
	/* The server's hello, through the wire. */
	memif_msg_hello_from_limits(&hello, &server_lim, "a-server-name-longer-than-32-bytes!");
	assert_int_equal(strlen(hello.hello.name), MEMIF_NAME_LEN - 1);
	encode(&hello, b);
	assert_int_equal(memif_msg_decode(b, sizeof(b), &hello, NULL), 0);
	step_ok(&c, hello, 0, MEMIF_STATE_SETUP);
	assert_int_equal(c.limits.regions, server_lim.regions);
	assert_int_equal(c.limits.c2s_rings, server_lim.c2s_rings);
	assert_int_equal(c.limits.s2c_rings, server_lim.s2c_rings);
	assert_int_equal(c.limits.max_log2_ring_size, server_lim.max_log2_ring_size);

	const uint16_t plan[] = {MEMIF_MSG_INIT, MEMIF_MSG_ADD_REGION, MEMIF_MSG_ADD_RING,
				 MEMIF_MSG_ADD_RING};
	for (size_t i = 0; i < sizeof(plan) / sizeof(plan[0]); i++) {
		assert_int_equal(memif_conn_sent(&c, plan[i]), 0);
		assert_int_equal(memif_conn_sent(&c, MEMIF_MSG_ADD_RING), -EINVAL); /* lock-step */
		step_ok(&c, mk(MEMIF_MSG_ACK), 0, MEMIF_STATE_SETUP);
	}
	assert_int_equal(memif_conn_sent(&c, MEMIF_MSG_CONNECT), 0);
	step_err(&c, mk(MEMIF_MSG_ACK), 0, -EPROTO, "unexpected ack");
	step_ok(&c, mk_connect(MEMIF_MSG_CONNECTED), 0, MEMIF_STATE_CONNECTED);
	step_err(&c, mk_connect(MEMIF_MSG_CONNECTED), 0, -EPROTO, "unexpected message");
	assert_int_equal(memif_conn_sent(&c, MEMIF_MSG_ADD_RING), -EINVAL);
	step_ok(&c, mk_disconnect(), 0, MEMIF_STATE_CLOSED);
}

static void test_client_rejects(void **state)
{
	struct memif_conn c;
	struct memif_msg big = mk_hello();

	(void)state;
	assert_int_equal(memif_conn_init(&c, MEMIF_ROLE_CLIENT, NULL), 0);
	step_err(&c, mk(MEMIF_MSG_ACK), 0, -EPROTO, "expected hello");
	step_err(&c, mk_init(), 0, -EPROTO, "expected hello");
	step_err(&c, mk_hello(), 1, -EPROTO, "unexpected file descriptor");
	assert_int_equal(memif_conn_sent(&c, MEMIF_MSG_INIT), -EINVAL); /* before hello */
	step_ok(&c, mk_hello(), 0, MEMIF_STATE_SETUP);
	step_err(&c, mk(MEMIF_MSG_ACK), 0, -EPROTO, "unexpected ack");
	step_err(&c, mk_connect(MEMIF_MSG_CONNECTED), 0, -EPROTO, "unexpected connected");
	step_err(&c, mk_hello(), 0, -EPROTO, "unexpected message");
	step_err(&c, mk_region(0, 4096), 1, -EPROTO, "unexpected message");
	/* Region before init, unknown or server-only message types. */
	assert_int_equal(memif_conn_sent(&c, MEMIF_MSG_ADD_REGION), -EINVAL);
	assert_int_equal(memif_conn_sent(&c, MEMIF_MSG_ACK), -EINVAL);
	assert_int_equal(memif_conn_sent(&c, MEMIF_MSG_HELLO), -EINVAL);
	assert_int_equal(memif_conn_sent(&c, MEMIF_MSG_INIT), 0);
	step_ok(&c, mk(MEMIF_MSG_ACK), 0, MEMIF_STATE_SETUP);
	assert_int_equal(memif_conn_sent(&c, MEMIF_MSG_INIT), -EINVAL); /* init twice */

	/* A hello advertising more than we support is clamped to our maxima. */
	big.hello.max_region = 0xffff;
	big.hello.max_c2s_ring = 0xffff;
	big.hello.max_s2c_ring = 1000;
	big.hello.max_log2_ring_size = 200;
	assert_int_equal(memif_conn_init(&c, MEMIF_ROLE_CLIENT, NULL), 0);
	step_ok(&c, big, 0, MEMIF_STATE_SETUP);
	assert_int_equal(c.limits.regions, MEMIF_MAX_REGIONS);
	assert_int_equal(c.limits.c2s_rings, MEMIF_MAX_RINGS);
	assert_int_equal(c.limits.s2c_rings, MEMIF_MAX_RINGS);
	assert_int_equal(c.limits.max_log2_ring_size, MEMIF_LOG2_RING_SIZE_MAX);
}

/* ---- Descriptors -------------------------------------------------------------------------- */

static const uint64_t regions[] = {1 << 20, 4096, UINT32_MAX};
static const struct memif_desc_limits dlim = {
    .region_size = regions, .n_regions = 3, .buffer_size = 2048, .max_chain = 4};

static struct memif_desc d(uint16_t flags, uint16_t region, uint32_t len, uint32_t off)
{
	return (struct memif_desc){
	    .flags = flags, .region = region, .length = len, .offset = off, .metadata = 9};
}

static void desc_err(struct memif_desc x, const struct memif_desc_limits *lim, const char *reason)
{
	struct memif_desc out;
	const char *why = NULL;

	assert_int_equal(memif_desc_read(&x, lim, &out, &why), -EINVAL);
	assert_non_null(why);
	assert_string_equal(why, reason);
}

static void test_desc_check(void **state)
{
	struct memif_desc out, x = d(0, 1, 2048, 2048);
	struct memif_desc_limits big = dlim;

	(void)state;
	assert_int_equal(memif_desc_read(&x, &dlim, &out, NULL), 0);
	assert_memory_equal(&out, &x, sizeof(x));
	x = d(0, 0, 0, 1 << 20); /* empty, at the very end */
	assert_int_equal(memif_desc_read(&x, &dlim, &out, NULL), 0);

	desc_err(d(0, 3, 64, 0), &dlim, "descriptor region out of range");
	desc_err(d(0, 0xffff, 64, 0), &dlim, "descriptor region out of range");
	desc_err(d(0, 0, 2049, 0), &dlim, "descriptor length exceeds buffer size");
	desc_err(d(0, 1, 2048, 2049), &dlim, "descriptor beyond its region");
	desc_err(d(0, 1, 1, 4096), &dlim, "descriptor beyond its region");
	/* offset + length wraps in 32 bits (to 0xfe) but not in 64. */
	big.buffer_size = UINT32_MAX;
	desc_err(d(0, 2, 0xff, 0xffffffff), &big, "descriptor beyond its region");
	desc_err(d(0, 2, 0xffffffff, 0xffffffff), &big, "descriptor beyond its region");
	x = d(0, 2, 0xfffffff0, 0xf);
	assert_int_equal(memif_desc_read(&x, &big, &out, NULL), 0);
}

static void test_desc_chain(void **state)
{
	struct memif_desc ring[8], out[4];
	const char *why = NULL;
	uint16_t skip = 0;

	(void)state;
	for (int i = 0; i < 8; i++)
		ring[i] = d(MEMIF_DESC_FLAG_NEXT, 0, 64, (uint32_t)i * 2048);
	/* A chain of 3 that wraps around the end of the ring: slots 6, 7, 0. */
	ring[0].flags = 0;
	assert_int_equal(memif_desc_chain_read(ring, 7, 0xfffe, 5, &dlim, out, &skip, &why), 3);
	assert_int_equal(out[0].offset, 6 * 2048);
	assert_int_equal(out[2].offset, 0);
	assert_int_equal(memif_desc_chain_read(ring, 7, 0xfffe, 0, &dlim, out, &skip, &why), 0);
	/* Single descriptor packet. */
	assert_int_equal(memif_desc_chain_read(ring, 7, 8, 1, &dlim, out, &skip, &why), 1);

	/* A terminated chain of 6 above max_chain 4: dropped as one packet, not a violation. */
	ring[0].flags = MEMIF_DESC_FLAG_NEXT;
	ring[5].flags = 0;
	assert_int_equal(memif_desc_chain_read(ring, 7, 0, 8, &dlim, out, &skip, &why), -E2BIG);
	assert_int_equal(skip, 6);
	assert_string_equal(why, "descriptor chain too long");
	/* ... but one that ends beyond the published slots is. */
	assert_int_equal(memif_desc_chain_read(ring, 7, 0, 5, &dlim, out, &skip, &why), -EINVAL);
	assert_string_equal(why, "descriptor chain not terminated");
	/* Endless chain: every slot says "continues". */
	ring[5].flags = MEMIF_DESC_FLAG_NEXT;
	assert_int_equal(memif_desc_chain_read(ring, 7, 0, 8, &dlim, out, &skip, &why), -EINVAL);
	assert_string_equal(why, "descriptor chain not terminated");
	/* Chain still open at the last published slot. */
	assert_int_equal(memif_desc_chain_read(ring, 7, 0, 2, &dlim, out, &skip, &why), -EINVAL);
	assert_string_equal(why, "descriptor chain not terminated");
	/* A bad descriptor in the middle of a chain. */
	ring[3] = d(0, 9, 64, 0);
	assert_int_equal(memif_desc_chain_read(ring, 7, 2, 4, &dlim, out, &skip, &why), -EINVAL);
	assert_string_equal(why, "descriptor region out of range");
}

static void test_ring_index(void **state)
{
	uint16_t moved = 0xdead;
	const char *why = NULL;

	(void)state;
	assert_int_equal(memif_ring_index_check(10, 10, 1024, &moved, &why), 0);
	assert_int_equal(moved, 0);
	assert_int_equal(memif_ring_index_check(10, 1034, 1024, &moved, &why), 0);
	assert_int_equal(moved, 1024);
	assert_int_equal(memif_ring_index_check(0xfffe, 3, 1024, &moved, &why), 0);
	assert_int_equal(moved, 5);
	moved = 0xbeef;
	assert_int_equal(memif_ring_index_check(10, 1035, 1024, &moved, &why), -EINVAL);
	assert_string_equal(why, "ring index moved too far");
	assert_int_equal(memif_ring_index_check(0xfff0, 0x4000, 16384, &moved, &why), -EINVAL);
	assert_string_equal(why, "ring index moved too far");
	assert_int_equal(memif_ring_index_check(10, 9, 1024, &moved, &why), -EINVAL);
	assert_string_equal(why, "ring index moved backwards");
	assert_int_equal(memif_ring_index_check(3, 0xfffe, 1024, &moved, &why), -EINVAL);
	assert_string_equal(why, "ring index moved backwards");
	/* A producer whose consumer index may not pass what was produced: window 0. */
	assert_int_equal(memif_ring_index_check(7, 8, 0, &moved, &why), -EINVAL);
	assert_int_equal(moved, 0xbeef);
}

static void test_ring_cookie(void **state)
{
	static struct memif_ring ring;
	const char *why = NULL;

	(void)state;
	assert_int_equal(memif_ring_check_cookie(&ring, &why), -EINVAL);
	assert_string_equal(why, "bad ring cookie");
	ring.cookie = MEMIF_COOKIE;
	assert_int_equal(memif_ring_check_cookie(&ring, &why), 0);
}

/*
 * copy_bytes (src/copy.h), the copy of the memif and vhost data paths: every length 0..300
 * at every source and destination misalignment 0..15, against a byte loop; the bytes
 * around the destination stay untouched.
 */
static void test_copy_bytes(void **state)
{
	static uint8_t src[512], dst[512], ref[512];
	uint64_t seed = 3;

	(void)state;
	for (unsigned i = 0; i < sizeof(src); i++)
		src[i] = (uint8_t)test_rand(&seed);
	for (uint32_t n = 0; n <= 300; n++)
		for (unsigned so = 0; so < 16; so++)
			for (unsigned d0 = 0; d0 < 16; d0++) {
				memset(dst, 0xa5, sizeof(dst));
				memset(ref, 0xa5, sizeof(ref));
				for (uint32_t k = 0; k < n; k++)
					ref[32 + d0 + k] = src[so + k];
				copy_bytes(dst + 32 + d0, src + so, n);
				if (memcmp(dst, ref, sizeof(dst)) != 0)
					fail_msg("copy_bytes: length %u, source +%u, destination +%u", n,
						 so, d0);
			}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_roundtrip_every_type),
	    cmocka_unit_test(test_wire_offsets),
	    cmocka_unit_test(test_strings_bounded),
	    cmocka_unit_test(test_decode_rejects),
	    cmocka_unit_test(test_decode_random),
	    cmocka_unit_test(test_secret),
	    cmocka_unit_test(test_server_happy_path),
	    cmocka_unit_test(test_server_rejects),
	    cmocka_unit_test(test_disconnect_any_state),
	    cmocka_unit_test(test_conn_init_errors),
	    cmocka_unit_test(test_client_happy_path),
	    cmocka_unit_test(test_client_rejects),
	    cmocka_unit_test(test_desc_check),
	    cmocka_unit_test(test_desc_chain),
	    cmocka_unit_test(test_ring_index),
	    cmocka_unit_test(test_ring_cookie),
	    cmocka_unit_test(test_copy_bytes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
