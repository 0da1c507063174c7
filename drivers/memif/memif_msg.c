/* SPDX-License-Identifier: BSD-3-Clause */
/* memif control messages: wire encode/decode with validation, and the control state machine. */
#include <endian.h>
#include <errno.h>
#include <string.h>

#include "memif_msg.h"

/* Every received byte is read through these, at offsets proven in memif_proto.h. */
#define PAYLOAD(buf, wire, field) ((buf) + MEMIF_MSG_PAYLOAD_OFF + offsetof(struct wire, field))
#define FIELD_SIZE(wire, field)	  sizeof(((struct wire *)0)->field)

static uint16_t get16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, sizeof(v));
	return le16toh(v);
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return le32toh(v);
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return le64toh(v);
}

static void put16(uint8_t *p, uint16_t v)
{
	v = htole16(v);
	memcpy(p, &v, sizeof(v));
}

static void put32(uint8_t *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, sizeof(v));
}

static void put64(uint8_t *p, uint64_t v)
{
	v = htole64(v);
	memcpy(p, &v, sizeof(v));
}

/* Copy a wire string of @field bytes into @dst (field + 1 bytes), stopping at the first NUL. */
static void get_str(char *dst, const uint8_t *src, size_t field)
{
	size_t n = strnlen((const char *)src, field);

	memcpy(dst, src, n);
	dst[n] = '\0';
}

/* Write at most @field bytes of @src; the rest of the field stays zero (buffer is cleared). */
static void put_str(uint8_t *dst, const char *src, size_t field)
{
	memcpy(dst, src, strnlen(src, field));
}

#define GET_STR(dst, buf, wire, field)                                                             \
	get_str(dst, PAYLOAD(buf, wire, field), FIELD_SIZE(wire, field))
#define PUT_STR(buf, wire, field, src)                                                             \
	put_str(PAYLOAD(buf, wire, field), src, FIELD_SIZE(wire, field))

int memif_msg_encode(const struct memif_msg *m, uint8_t buf[MEMIF_MSG_SIZE])
{
	if (m->type < MEMIF_MSG_ACK || m->type > MEMIF_MSG_TYPE_MAX)
		return -EINVAL;
	memset(buf, 0, MEMIF_MSG_SIZE);
	put16(buf + MEMIF_MSG_TYPE_OFF, m->type);
	switch (m->type) {
	case MEMIF_MSG_HELLO:
		PUT_STR(buf, memif_wire_hello, name, m->hello.name);
		put16(PAYLOAD(buf, memif_wire_hello, min_version), m->hello.min_version);
		put16(PAYLOAD(buf, memif_wire_hello, max_version), m->hello.max_version);
		put16(PAYLOAD(buf, memif_wire_hello, max_region), m->hello.max_region);
		put16(PAYLOAD(buf, memif_wire_hello, max_s2c_ring), m->hello.max_s2c_ring);
		put16(PAYLOAD(buf, memif_wire_hello, max_c2s_ring), m->hello.max_c2s_ring);
		*PAYLOAD(buf, memif_wire_hello, max_log2_ring_size) = m->hello.max_log2_ring_size;
		break;
	case MEMIF_MSG_INIT:
		put16(PAYLOAD(buf, memif_wire_init, version), m->init.version);
		put32(PAYLOAD(buf, memif_wire_init, id), m->init.id);
		*PAYLOAD(buf, memif_wire_init, mode) = m->init.mode;
		PUT_STR(buf, memif_wire_init, secret, m->init.secret);
		PUT_STR(buf, memif_wire_init, name, m->init.name);
		break;
	case MEMIF_MSG_ADD_REGION:
		put16(PAYLOAD(buf, memif_wire_add_region, index), m->add_region.index);
		put64(PAYLOAD(buf, memif_wire_add_region, size), m->add_region.size);
		break;
	case MEMIF_MSG_ADD_RING:
		put16(PAYLOAD(buf, memif_wire_add_ring, flags), m->add_ring.flags);
		put16(PAYLOAD(buf, memif_wire_add_ring, index), m->add_ring.index);
		put16(PAYLOAD(buf, memif_wire_add_ring, region), m->add_ring.region);
		put32(PAYLOAD(buf, memif_wire_add_ring, offset), m->add_ring.offset);
		*PAYLOAD(buf, memif_wire_add_ring, log2_ring_size) = m->add_ring.log2_ring_size;
		put16(PAYLOAD(buf, memif_wire_add_ring, private_hdr_size),
		      m->add_ring.private_hdr_size);
		break;
	case MEMIF_MSG_CONNECT:
		PUT_STR(buf, memif_wire_connect, if_name, m->connect.if_name);
		break;
	case MEMIF_MSG_CONNECTED:
		PUT_STR(buf, memif_wire_connect, if_name, m->connected.if_name);
		break;
	case MEMIF_MSG_DISCONNECT:
		put32(PAYLOAD(buf, memif_wire_disconnect, code), m->disconnect.code);
		PUT_STR(buf, memif_wire_disconnect, reason, m->disconnect.reason);
		break;
	default: /* ack: no payload */
		break;
	}
	return 0;
}

static int fail(const char **reason, const char *why, int err)
{
	if (reason)
		*reason = why;
	return err;
}

static int check_add_ring(const struct memif_msg_add_ring *r, const char **reason)
{
	if (r->flags & ~MEMIF_RING_FLAG_C2S)
		return fail(reason, "unknown ring flags", -EINVAL);
	if (r->index >= MEMIF_MAX_RINGS)
		return fail(reason, "ring index out of range", -EINVAL);
	if (r->region >= MEMIF_MAX_REGIONS)
		return fail(reason, "ring region out of range", -EINVAL);
	if (r->offset % MEMIF_RING_ALIGN)
		return fail(reason, "ring offset misaligned", -EINVAL);
	if (r->log2_ring_size > MEMIF_LOG2_RING_SIZE_MAX)
		return fail(reason, "ring size too big", -EINVAL);
	if (r->private_hdr_size != 0)
		return fail(reason, "private header not supported", -EINVAL);
	return 0;
}

int memif_msg_decode(const void *data, size_t len, struct memif_msg *out, const char **reason)
{
	const uint8_t *buf = data;
	struct memif_msg m;
	int ret = 0;

	if (len != MEMIF_MSG_SIZE)
		return fail(reason, "bad message size", -EPROTO);
	memset(&m, 0, sizeof(m));
	m.type = get16(buf + MEMIF_MSG_TYPE_OFF);
	switch (m.type) {
	case MEMIF_MSG_ACK:
		break;
	case MEMIF_MSG_HELLO:
		GET_STR(m.hello.name, buf, memif_wire_hello, name);
		m.hello.min_version = get16(PAYLOAD(buf, memif_wire_hello, min_version));
		m.hello.max_version = get16(PAYLOAD(buf, memif_wire_hello, max_version));
		m.hello.max_region = get16(PAYLOAD(buf, memif_wire_hello, max_region));
		m.hello.max_s2c_ring = get16(PAYLOAD(buf, memif_wire_hello, max_s2c_ring));
		m.hello.max_c2s_ring = get16(PAYLOAD(buf, memif_wire_hello, max_c2s_ring));
		m.hello.max_log2_ring_size = *PAYLOAD(buf, memif_wire_hello, max_log2_ring_size);
		if (m.hello.min_version > MEMIF_VERSION || m.hello.max_version < MEMIF_VERSION)
			return fail(reason, "incompatible version", -EINVAL);
		break;
	case MEMIF_MSG_INIT:
		m.init.version = get16(PAYLOAD(buf, memif_wire_init, version));
		m.init.id = get32(PAYLOAD(buf, memif_wire_init, id));
		m.init.mode = *PAYLOAD(buf, memif_wire_init, mode);
		GET_STR(m.init.secret, buf, memif_wire_init, secret);
		GET_STR(m.init.name, buf, memif_wire_init, name);
		if (m.init.version != MEMIF_VERSION)
			return fail(reason, "incompatible version", -EINVAL);
		if (m.init.mode != MEMIF_MODE_ETHERNET)
			return fail(reason, "only ethernet mode is supported", -EINVAL);
		break;
	case MEMIF_MSG_ADD_REGION:
		m.add_region.index = get16(PAYLOAD(buf, memif_wire_add_region, index));
		m.add_region.size = get64(PAYLOAD(buf, memif_wire_add_region, size));
		if (m.add_region.index >= MEMIF_MAX_REGIONS)
			return fail(reason, "region index out of range", -EINVAL);
		if (m.add_region.size == 0 || m.add_region.size > MEMIF_REGION_SIZE_MAX)
			return fail(reason, "bad region size", -EINVAL);
		break;
	case MEMIF_MSG_ADD_RING:
		m.add_ring.flags = get16(PAYLOAD(buf, memif_wire_add_ring, flags));
		m.add_ring.index = get16(PAYLOAD(buf, memif_wire_add_ring, index));
		m.add_ring.region = get16(PAYLOAD(buf, memif_wire_add_ring, region));
		m.add_ring.offset = get32(PAYLOAD(buf, memif_wire_add_ring, offset));
		m.add_ring.log2_ring_size = *PAYLOAD(buf, memif_wire_add_ring, log2_ring_size);
		m.add_ring.private_hdr_size =
		    get16(PAYLOAD(buf, memif_wire_add_ring, private_hdr_size));
		ret = check_add_ring(&m.add_ring, reason);
		if (ret)
			return ret;
		break;
	case MEMIF_MSG_CONNECT:
		GET_STR(m.connect.if_name, buf, memif_wire_connect, if_name);
		break;
	case MEMIF_MSG_CONNECTED:
		GET_STR(m.connected.if_name, buf, memif_wire_connect, if_name);
		break;
	case MEMIF_MSG_DISCONNECT:
		m.disconnect.code = get32(PAYLOAD(buf, memif_wire_disconnect, code));
		GET_STR(m.disconnect.reason, buf, memif_wire_disconnect, reason);
		break;
	default:
		return fail(reason, "unknown message type", -EPROTO);
	}
	*out = m;
	return 0;
}

int memif_msg_secret_check(const char *configured, const struct memif_msg_init *init,
			   const char **reason)
{
	unsigned int diff = 0;
	size_t n;

	if (!configured || !configured[0])
		return 0;
	/* Both strings padded with NULs to the field size; only the total difference counts. */
	n = strnlen(configured, MEMIF_SECRET_LEN);
	for (size_t i = 0; i < MEMIF_SECRET_LEN; i++)
		diff |= (unsigned char)(i < n ? configured[i] : 0) ^ (unsigned char)init->secret[i];
	if (diff)
		return fail(reason, "incorrect secret", -EINVAL);
	return 0;
}

/* ---- State machine ------------------------------------------------------------------------ */

static int limits_valid(const struct memif_limits *l)
{
	return l->regions >= 1 && l->regions <= MEMIF_MAX_REGIONS && l->c2s_rings >= 1 &&
	       l->c2s_rings <= MEMIF_MAX_RINGS && l->s2c_rings >= 1 &&
	       l->s2c_rings <= MEMIF_MAX_RINGS && l->max_log2_ring_size <= MEMIF_LOG2_RING_SIZE_MAX;
}

int memif_conn_init(struct memif_conn *c, enum memif_role role, const struct memif_limits *lim)
{
	if (role == MEMIF_ROLE_SERVER) {
		if (!lim || !limits_valid(lim))
			return -EINVAL;
	} else if (role != MEMIF_ROLE_CLIENT || lim) {
		return -EINVAL;
	}
	memset(c, 0, sizeof(*c));
	c->role = role;
	if (role == MEMIF_ROLE_SERVER) {
		c->state = MEMIF_STATE_WAIT_INIT;
		c->limits = *lim;
	} else {
		c->state = MEMIF_STATE_WAIT_HELLO;
	}
	return 0;
}

void memif_msg_hello_from_limits(struct memif_msg *m, const struct memif_limits *lim,
				 const char *name)
{
	memset(m, 0, sizeof(*m));
	m->type = MEMIF_MSG_HELLO;
	/* Leave a NUL on the wire: DPDK reads the name with strlcpy. */
	memcpy(m->hello.name, name, strnlen(name, MEMIF_NAME_LEN - 1));
	m->hello.min_version = MEMIF_VERSION;
	m->hello.max_version = MEMIF_VERSION;
	m->hello.max_region = lim->regions - 1;
	m->hello.max_c2s_ring = lim->c2s_rings - 1;
	m->hello.max_s2c_ring = lim->s2c_rings - 1;
	m->hello.max_log2_ring_size = lim->max_log2_ring_size;
}

static uint16_t clamp_count(uint16_t max_index, uint16_t cap)
{
	return max_index >= cap ? cap : max_index + 1;
}

/* Rings 0..n-1 of one direction, nothing else: the map is a prefix of n ones. */
static int rings_complete(const struct memif_conn *c, int dir)
{
	unsigned int n = c->n_rings[dir];

	if (n == 0)
		return 0;
	for (unsigned int i = 0; i < n; i++)
		if (!(c->ring_map[dir][i / 64] & (UINT64_C(1) << (i % 64))))
			return 0;
	return 1;
}

static int server_add_region(struct memif_conn *c, const struct memif_msg_add_region *r,
			     const char **reason)
{
	if (r->index != c->n_regions)
		return fail(reason, "region index out of order", -EPROTO);
	if (r->index >= c->limits.regions)
		return fail(reason, "region index out of range", -EINVAL);
	c->region_size[c->n_regions++] = r->size;
	return 0;
}

static int server_add_ring(struct memif_conn *c, const struct memif_msg_add_ring *r,
			   const char **reason)
{
	int dir = (r->flags & MEMIF_RING_FLAG_C2S) ? MEMIF_DIR_C2S : MEMIF_DIR_S2C;
	uint16_t max = dir == MEMIF_DIR_C2S ? c->limits.c2s_rings : c->limits.s2c_rings;
	uint64_t bit = UINT64_C(1) << (r->index % 64);
	uint64_t *word;

	if (r->index >= max)
		return fail(reason, "ring index out of range", -EINVAL);
	word = &c->ring_map[dir][r->index / 64];
	if (*word & bit)
		return fail(reason, "duplicate ring index", -EPROTO);
	if (r->region >= c->n_regions)
		return fail(reason, "ring region not added", -EINVAL);
	if (r->log2_ring_size > c->limits.max_log2_ring_size)
		return fail(reason, "ring size above the advertised maximum", -EINVAL);
	/* 32-bit offset plus at most 128 + 16 << 14: no overflow in 64 bits. */
	if ((uint64_t)r->offset + memif_ring_bytes(r->log2_ring_size) > c->region_size[r->region])
		return fail(reason, "ring beyond its region", -EINVAL);
	*word |= bit;
	c->n_rings[dir]++;
	return 0;
}

static int server_step(struct memif_conn *c, const struct memif_msg *m, const char **reason)
{
	if (c->state == MEMIF_STATE_WAIT_INIT) {
		if (m->type != MEMIF_MSG_INIT)
			return fail(reason, "expected init", -EPROTO);
		c->state = MEMIF_STATE_CONFIG;
		return 0;
	}
	if (c->state != MEMIF_STATE_CONFIG)
		return fail(reason, "unexpected message", -EPROTO);
	switch (m->type) {
	case MEMIF_MSG_ADD_REGION:
		return server_add_region(c, &m->add_region, reason);
	case MEMIF_MSG_ADD_RING:
		return server_add_ring(c, &m->add_ring, reason);
	case MEMIF_MSG_CONNECT:
		if (c->n_regions == 0)
			return fail(reason, "no region", -EPROTO);
		if (!rings_complete(c, MEMIF_DIR_C2S) || !rings_complete(c, MEMIF_DIR_S2C))
			return fail(reason, "missing rings", -EPROTO);
		c->state = MEMIF_STATE_CONNECTED;
		return 0;
	default:
		return fail(reason, "unexpected message", -EPROTO);
	}
}

static int client_step(struct memif_conn *c, const struct memif_msg *m, const char **reason)
{
	if (c->state == MEMIF_STATE_WAIT_HELLO) {
		const struct memif_msg_hello *h = &m->hello;

		if (m->type != MEMIF_MSG_HELLO)
			return fail(reason, "expected hello", -EPROTO);
		c->limits.regions = clamp_count(h->max_region, MEMIF_MAX_REGIONS);
		c->limits.c2s_rings = clamp_count(h->max_c2s_ring, MEMIF_MAX_RINGS);
		c->limits.s2c_rings = clamp_count(h->max_s2c_ring, MEMIF_MAX_RINGS);
		c->limits.max_log2_ring_size = h->max_log2_ring_size < MEMIF_LOG2_RING_SIZE_MAX
						   ? h->max_log2_ring_size
						   : MEMIF_LOG2_RING_SIZE_MAX;
		c->state = MEMIF_STATE_SETUP;
		return 0;
	}
	if (c->state != MEMIF_STATE_SETUP)
		return fail(reason, "unexpected message", -EPROTO);
	switch (m->type) {
	case MEMIF_MSG_ACK:
		if (c->awaiting != MEMIF_MSG_INIT && c->awaiting != MEMIF_MSG_ADD_REGION &&
		    c->awaiting != MEMIF_MSG_ADD_RING)
			return fail(reason, "unexpected ack", -EPROTO);
		c->awaiting = 0;
		return 0;
	case MEMIF_MSG_CONNECTED:
		if (c->awaiting != MEMIF_MSG_CONNECT)
			return fail(reason, "unexpected connected", -EPROTO);
		c->awaiting = 0;
		c->state = MEMIF_STATE_CONNECTED;
		return 0;
	default:
		return fail(reason, "unexpected message", -EPROTO);
	}
}

static unsigned int fds_expected(uint16_t type)
{
	return type == MEMIF_MSG_ADD_REGION || type == MEMIF_MSG_ADD_RING;
}

int memif_conn_step(struct memif_conn *c, const struct memif_msg *m, unsigned int n_fds,
		    const char **reason)
{
	struct memif_conn next;
	int ret;

	if (c->state == MEMIF_STATE_CLOSED)
		return fail(reason, "connection closed", -EPROTO);
	if (n_fds != fds_expected(m->type))
		return fail(reason,
			    n_fds ? "unexpected file descriptor" : "missing file descriptor",
			    -EPROTO);
	if (m->type == MEMIF_MSG_DISCONNECT) {
		c->state = MEMIF_STATE_CLOSED;
		return 0;
	}
	/*
	 * Work on a copy so that a rejected message leaves the connection as it was. The copy
	 * is about 2.2 KiB and happens a few times per connection setup.
	 */
	next = *c;
	ret = c->role == MEMIF_ROLE_SERVER ? server_step(&next, m, reason)
					   : client_step(&next, m, reason);
	if (ret == 0)
		*c = next;
	return ret;
}

int memif_conn_sent(struct memif_conn *c, uint16_t type)
{
	if (c->state == MEMIF_STATE_CLOSED)
		return -EINVAL;
	if (type == MEMIF_MSG_DISCONNECT) {
		c->state = MEMIF_STATE_CLOSED;
		return 0;
	}
	if (c->role == MEMIF_ROLE_SERVER) {
		/* The server only answers: hello first, then acks and connected. */
		if (type == MEMIF_MSG_HELLO && c->state == MEMIF_STATE_WAIT_INIT)
			return 0;
		if ((type == MEMIF_MSG_ACK && c->state == MEMIF_STATE_CONFIG) ||
		    (type == MEMIF_MSG_CONNECTED && c->state == MEMIF_STATE_CONNECTED))
			return 0;
		return -EINVAL;
	}
	if (c->state != MEMIF_STATE_SETUP || c->awaiting)
		return -EINVAL;
	switch (type) {
	case MEMIF_MSG_INIT:
		if (c->init_sent)
			return -EINVAL;
		c->init_sent = 1;
		break;
	case MEMIF_MSG_ADD_REGION:
	case MEMIF_MSG_ADD_RING:
	case MEMIF_MSG_CONNECT:
		if (!c->init_sent)
			return -EINVAL;
		break;
	default:
		return -EINVAL;
	}
	c->awaiting = (uint8_t)type;
	return 0;
}
