/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Offloads: the software checksum fill/verify and TSO (tide/offload.h), the virtio-net
 * header both ways (src/offload_vnet.h), the capability check of queue setup. Checksums are
 * checked against a byte-by-byte reference written here; a randomized test segments
 * thousands of packets; `test_offload tshark` has Wireshark's dissectors check a capture of
 * the fallback's output.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <tide/lcore.h>
#include <tide/offload.h>
#include <tide/port.h>

#include "driver.h"
#include "offload_pkt.h"
#include "offload_vnet.h"
#include "testutil.h"
#include "tmp_util.h"

/* ---- reference arithmetic: big-endian words, one at a time ---- */

static uint32_t ref_add(uint32_t s, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i += 2)
		s += (uint32_t)p[i] << 8 | (i + 1 < n ? p[i + 1] : 0);
	return s;
}

static uint16_t ref_fold(uint32_t s)
{
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)s;
}

/* The L4 checksum of a flat packet is right (the sum over pseudo-header and data is ~0). */
static int ref_l4_ok(const uint8_t *pkt, uint32_t l2, uint32_t l3, int v6, uint8_t proto,
		     uint32_t l4len)
{
	const uint8_t *ip = pkt + l2;
	uint8_t ph[8] = {0, 0, 0, 0, 0, 0, 0, proto};
	uint32_t s;

	if (v6) {
		s = ref_add(0, ip + 8, 32);
		ph[0] = (uint8_t)(l4len >> 24);
		ph[1] = (uint8_t)(l4len >> 16);
		ph[2] = (uint8_t)(l4len >> 8);
		ph[3] = (uint8_t)l4len;
		s = ref_add(s, ph, 8);
	} else {
		s = ref_add(0, ip + 12, 8);
		ph[0] = 0;
		ph[1] = proto;
		ph[2] = (uint8_t)(l4len >> 8);
		ph[3] = (uint8_t)l4len;
		s = ref_add(s, ph, 4);
	}
	return ref_fold(ref_add(s, pkt + l2 + l3, l4len)) == 0xffff;
}

static int ref_ip_ok(const uint8_t *ip, uint32_t l3)
{
	return ref_fold(ref_add(0, ip, l3)) == 0xffff;
}

/* ---- packets ---- */

struct spec {
	int v6, vlan, ext; /* IPv6; one VLAN tag; an IPv6 destination options header */
	uint8_t proto;     /* 6 or 17 */
	uint32_t payload;
	uint32_t tcp_opts; /* bytes of TCP options (multiple of 4) */
	uint8_t tcp_flags;
	uint32_t seq;
};

struct lens {
	uint32_t l2, l3, l4, len;
};

static void put16(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static uint32_t get16(const uint8_t *p)
{
	return (uint32_t)p[0] << 8 | p[1];
}

static uint32_t get32(const uint8_t *p)
{
	return get16(p) << 16 | get16(p + 2);
}

/* Build the packet @s describes in @buf (checksum fields 0); payload bytes from @rnd. */
static struct lens build(uint8_t *buf, const struct spec *s, uint64_t *rnd)
{
	struct lens L = {14, 0, 0, 0};
	uint8_t *p = buf, *ip, *l4;
	uint32_t l4len;

	memset(buf, 0, 128);
	memcpy(p, "\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01", 12);
	if (s->vlan) {
		put16(p + 12, 0x8100);
		put16(p + 14, 42);
		L.l2 = 18;
	}
	put16(p + L.l2 - 2, s->v6 ? 0x86dd : 0x0800);
	ip = p + L.l2;
	L.l4 = s->proto == 6 ? 20 + s->tcp_opts : 8;
	l4len = L.l4 + s->payload;
	if (s->v6) {
		L.l3 = 40 + (s->ext ? 8 : 0);
		ip[0] = 0x60;
		put16(ip + 4, L.l3 - 40 + l4len);
		ip[6] = s->ext ? 60 : s->proto;
		ip[7] = 64;
		memcpy(ip + 8, "\x20\x01\x0d\xb8\0\0\0\0\0\0\0\0\0\0\0\x01", 16);
		memcpy(ip + 24, "\x20\x01\x0d\xb8\0\0\0\0\0\0\0\0\0\0\0\x02", 16);
		if (s->ext) /* next header, length 0 (8 bytes), PadN of 4 */
			memcpy(ip + 40, (uint8_t[]){s->proto, 0, 1, 4, 0, 0, 0, 0}, 8);
	} else {
		L.l3 = 20;
		ip[0] = 0x45;
		put16(ip + 2, 20 + l4len);
		put16(ip + 4, 0x1234);
		ip[6] = 0x40; /* DF */
		ip[8] = 64;
		ip[9] = s->proto;
		memcpy(ip + 12, "\x0a\x00\x00\x01\x0a\x00\x00\x02", 8);
	}
	l4 = ip + L.l3;
	put16(l4, 40000);
	put16(l4 + 2, s->proto == 6 ? 80 : 4789);
	if (s->proto == 6) {
		l4[4] = (uint8_t)(s->seq >> 24);
		l4[5] = (uint8_t)(s->seq >> 16);
		l4[6] = (uint8_t)(s->seq >> 8);
		l4[7] = (uint8_t)s->seq;
		l4[12] = (uint8_t)((L.l4 / 4) << 4);
		l4[13] = s->tcp_flags;
		put16(l4 + 14, 65535);
		memset(l4 + 20, 1, s->tcp_opts); /* NOPs */
	} else {
		put16(l4 + 4, l4len);
	}
	for (uint32_t i = 0; i < s->payload; i++)
		l4[L.l4 + i] = (uint8_t)test_rand(rnd);
	L.len = L.l2 + L.l3 + l4len;
	return L;
}

/* The same within TIDE_OFFLOAD_MAX_SEGS segments (longer pieces until it fits). */
static struct tide_mbuf *to_mbuf(struct tide_pool *p, const uint8_t *buf, uint32_t len,
				 uint32_t first, uint32_t piece, uint64_t *rnd)
{
	if (len > first && piece < 4 * (len - first) / TIDE_OFFLOAD_MAX_SEGS + 1)
		piece = 4 * (len - first) / TIDE_OFFLOAD_MAX_SEGS + 1; /* about MAX/2 pieces */
	for (;;) {
		struct tide_mbuf *m = test_chain(p, buf, len, first, piece, rnd);

		if (m->nb_segs <= TIDE_OFFLOAD_MAX_SEGS)
			return m;
		tide_mbuf_free(m);
		piece *= 2;
	}
}

static void flat(const struct tide_mbuf *m, uint8_t *out)
{
	assert_int_equal(tide_mbuf_read(m, 0, m->pkt_len, out), 0);
}

static void set_tx(struct tide_mbuf *m, const struct spec *s, const struct lens *L, uint32_t fl)
{
	m->ol_flags = fl | (s->v6 ? TIDE_MBUF_F_TX_IPV6 : TIDE_MBUF_F_TX_IPV4);
	m->l2_len = (uint8_t)L->l2;
	m->l3_len = (uint16_t)L->l3;
	m->l4_len = (uint8_t)L->l4;
}

static struct tide_pool *pool;
static uint8_t A[70000], B[70000];

static int setup(void **state)
{
	(void)state;
	if (tide_thread_register() < 0)
		return -1;
	return tide_pktpool_create("offload", 2048, 0, 0, NULL, &pool);
}

static int teardown(void **state)
{
	(void)state;
	tide_pool_free(pool);
	return 0;
}

/* ---- checksum fill ---- */

/* The IPv4 header of RFC 1071's usual worked example: 4500 0073 0000 4000 4011 .... c0a8
 * 0001 c0a8 00c7 has the checksum b861. */
static void test_ip_known_answer(void **state)
{
	static const uint8_t hdr[20] = {0x45, 0, 0, 0x73, 0, 0, 0x40, 0, 0x40, 0x11, 0, 0,
					0xc0, 0xa8, 0, 1, 0xc0, 0xa8, 0, 0xc7};
	uint8_t pkt[14 + 0x73] = {0};
	struct tide_mbuf *m = tide_mbuf_alloc(pool);

	(void)state;
	require_non_null(m);
	put16(pkt + 12, 0x0800);
	memcpy(pkt + 14, hdr, 20);
	memcpy(tide_mbuf_append(m, sizeof(pkt)), pkt, sizeof(pkt));
	m->ol_flags = TIDE_MBUF_F_TX_IPV4 | TIDE_MBUF_F_TX_IP_CKSUM;
	m->l2_len = 14;
	m->l3_len = 20;
	assert_int_equal(tide_offload_cksum_fill(m), 0);
	assert_int_equal(get16(tide_mbuf_mtod_offset(m, uint8_t *, 24)), 0xb861);
	assert_int_equal(m->ol_flags, TIDE_MBUF_F_TX_IPV4); /* the request is done */
	/* and the verify side agrees (UDP: a zero checksum over IPv4 is "none", GOOD) */
	assert_int_equal(tide_offload_cksum_verify(m), 0);
	assert_int_equal(m->ol_flags & TIDE_MBUF_F_RX_IP_CKSUM_MASK, TIDE_MBUF_F_RX_IP_CKSUM_GOOD);
	assert_int_equal(m->ol_flags & TIDE_MBUF_F_RX_L4_CKSUM_MASK, TIDE_MBUF_F_RX_L4_CKSUM_GOOD);
	tide_mbuf_free(m);
	assert_pool_full(pool);
}

/* Every variant (v4/v6, VLAN, IPv6 extension, TCP/UDP, odd lengths, chains split at odd
 * offsets) is filled right, and verify says GOOD; one flipped payload bit makes it BAD. */
static void test_cksum_fill_variants(void **state)
{
	uint64_t rnd = 7;

	(void)state;
	for (int v = 0; v < 64; v++) {
		struct spec s = {.v6 = v & 1, .vlan = !!(v & 2), .ext = (v & 1) && (v & 4),
				 .proto = (v & 8) ? 17 : 6, .payload = 1 + (uint32_t)(test_rand(&rnd) % 5000),
				 .tcp_opts = (v & 16) ? 12 : 0, .seq = 1};
		struct lens L = build(A, &s, &rnd);
		struct tide_mbuf *m = to_mbuf(pool, A, L.len, L.l2 + L.l3 + L.l4 + (v & 32 ? 1 : 0),
					      (v & 32) ? 7 : 1500, &rnd);
		uint32_t fl = (s.proto == 6 ? TIDE_MBUF_F_TX_TCP_CKSUM : TIDE_MBUF_F_TX_UDP_CKSUM) |
			      (s.v6 ? 0 : TIDE_MBUF_F_TX_IP_CKSUM);

		set_tx(m, &s, &L, fl);
		assert_int_equal(tide_offload_cksum_fill(m), 0);
		assert_int_equal(m->ol_flags & (TIDE_MBUF_F_TX_L4_MASK | TIDE_MBUF_F_TX_IP_CKSUM), 0);
		flat(m, B);
		if (!s.v6)
			assert_true(ref_ip_ok(B + L.l2, L.l3));
		assert_true(ref_l4_ok(B, L.l2, L.l3, s.v6, s.proto, L.len - L.l2 - L.l3));
		assert_int_equal(tide_offload_cksum_verify(m), 0);
		assert_int_equal(m->ol_flags & TIDE_MBUF_F_RX_L4_CKSUM_MASK,
				 TIDE_MBUF_F_RX_L4_CKSUM_GOOD);
		assert_int_equal(m->ol_flags & TIDE_MBUF_F_RX_IP_CKSUM_MASK,
				 s.v6 ? TIDE_MBUF_F_RX_IP_CKSUM_UNKNOWN : TIDE_MBUF_F_RX_IP_CKSUM_GOOD);
		/* Flip one bit of the last byte (in the last segment). */
		{
			struct tide_mbuf *t = tide_mbuf_last_seg(m);

			tide_mbuf_mtod(t, uint8_t *)[t->data_len - 1] ^= 0x10;
		}
		assert_int_equal(tide_offload_cksum_verify(m), 0);
		assert_int_equal(m->ol_flags & TIDE_MBUF_F_RX_L4_CKSUM_MASK, TIDE_MBUF_F_RX_L4_CKSUM_BAD);
		/* A bad IPv4 header checksum is BAD too. */
		if (!s.v6) {
			tide_mbuf_mtod(m, uint8_t *)[L.l2 + 8] ^= 1; /* TTL */
			assert_int_equal(tide_offload_cksum_verify(m), 0);
			assert_int_equal(m->ol_flags & TIDE_MBUF_F_RX_IP_CKSUM_MASK,
					 TIDE_MBUF_F_RX_IP_CKSUM_BAD);
		}
		tide_mbuf_free(m);
	}
	assert_pool_full(pool);
}

/* A UDP checksum that computes to 0 goes out as ffff (0 would mean "none"). */
static void test_udp_zero(void **state)
{
	struct spec s = {.proto = 17, .payload = 16};
	uint64_t rnd = 3;
	struct lens L = build(A, &s, &rnd);
	struct tide_mbuf *m;
	uint32_t sum;

	(void)state;
	/* Make the sum over everything but the last payload word 0 + that word = ffff. */
	put16(A + L.len - 2, 0);
	sum = ref_fold(ref_add(ref_add(ref_add(0, A + L.l2 + 12, 8), (uint8_t[]){0, 17, 0, 24}, 4),
			       A + L.l2 + L.l3, 24));
	put16(A + L.len - 2, 0xffff - sum);
	m = to_mbuf(pool, A, L.len, L.len, 1, &rnd);
	set_tx(m, &s, &L, TIDE_MBUF_F_TX_UDP_CKSUM);
	assert_int_equal(tide_offload_cksum_fill(m), 0);
	assert_int_equal(get16(tide_mbuf_mtod_offset(m, uint8_t *, L.l2 + L.l3 + 6)), 0xffff);
	tide_mbuf_free(m);
	assert_pool_full(pool);
}

/* What verify cannot check is UNKNOWN: not IP, a fragment, another protocol, truncated. */
/* ---- the parser's reads stay inside what it was given ---- */

/*
 * offload_parse() on every prefix of a frame, each laid against an inaccessible page so
 * that a read past @avail faults: below the bytes the parser needs it refuses, from there
 * on it finds the frame's headers. And headers whose lengths disagree, refused.
 */
struct parse_case {
	const char *name;
	uint8_t f[96];
	uint32_t len, need;	/* frame length; the bytes the parser must have */
	uint32_t l2, l3, l4len; /* what it must find */
	uint8_t proto, v6;
};

static const struct parse_case parse_cases[] = {
	{"ipv4/udp",
	 {[12] = 0x08, [13] = 0x00, [14] = 0x45, [17] = 28, [23] = 17},
	 42, 14 + 20, 14, 20, 8, 17, 0},
	/* Two tags (802.1ad outer, 802.1Q inner); IPv4 with one word of options. */
	{"qinq/ipv4-options/udp",
	 {[12] = 0x88, [13] = 0xa8, [16] = 0x81, [17] = 0x00, [20] = 0x08, [21] = 0x00,
	  [22] = 0x46, [25] = 32, [31] = 17},
	 54, 22 + 20, 22, 24, 8, 17, 0},
	/* IPv6 with hop-by-hop options (8 bytes). */
	{"ipv6-hbh/udp",
	 {[12] = 0x86, [13] = 0xdd, [14] = 0x60, [19] = 16, [20] = 0, [54] = 17, [55] = 0},
	 70, 14 + 48, 14, 48, 8, 17, 1},
	/* A tag; IPv6 with routing (8 bytes) then destination options (16): the last header's
	 * end is beyond the point where its first 8 bytes are. */
	{"vlan/ipv6-rh-dst/tcp",
	 {[12] = 0x81, [13] = 0x00, [16] = 0x86, [17] = 0xdd, [18] = 0x60, [23] = 44, [24] = 43,
	  [58] = 60, [59] = 0, [66] = 6, [67] = 1},
	 102, 18 + 64, 18, 64, 20, 6, 1},
};

static uint8_t *guarded(uint8_t **map, size_t *maplen)
{
	long pg = sysconf(_SC_PAGESIZE);

	*maplen = 2 * (size_t)pg;
	*map = mmap(NULL, *maplen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(*map != MAP_FAILED);
	assert_int_equal(mprotect(*map + pg, (size_t)pg, PROT_NONE), 0);
	return *map + pg; /* the first byte that faults */
}

static void test_parse_bounds(void **state)
{
	struct offload_pkt o;
	size_t maplen;
	uint8_t *map, *end = guarded(&map, &maplen);

	(void)state;
	for (size_t c = 0; c < sizeof(parse_cases) / sizeof(parse_cases[0]); c++) {
		const struct parse_case *pc = &parse_cases[c];

		for (uint32_t avail = 0; avail <= pc->len; avail++) {
			uint8_t *h = end - avail;
			int rc;

			memcpy(h, pc->f, avail);
			rc = offload_parse(h, avail, pc->len, &o);
			if (avail < pc->need) {
				if (rc != -EINVAL)
					fail_msg("%s, %u bytes of %u: %d, expected -EINVAL",
						 pc->name, avail, pc->need, rc);
				continue;
			}
			if (rc != 0 || o.l2 != pc->l2 || o.l3 != pc->l3 || o.l4len != pc->l4len ||
			    o.proto != pc->proto || o.v6 != pc->v6 || !o.ip || o.frag)
				fail_msg("%s, %u bytes: %d, l2 %u l3 %u l4len %u proto %u v6 %u",
					 pc->name, avail, rc, o.l2, o.l3, o.l4len, o.proto, o.v6);
		}
	}
	/* The lengths of an IPv4 header that disagree: a header length below 20, a total
	 * length below the header's. */
	{
		uint8_t f[42];

		memcpy(f, parse_cases[0].f, sizeof(f));
		f[14] = 0x44;
		assert_int_equal(offload_parse(f, sizeof(f), sizeof(f), &o), -EINVAL);
		f[14] = 0x45;
		f[17] = 19;
		assert_int_equal(offload_parse(f, sizeof(f), sizeof(f), &o), -EINVAL);
		f[17] = 20;
		assert_int_equal(offload_parse(f, sizeof(f), sizeof(f), &o), 0);
		assert_int_equal(o.l4len, 0);
	}
	munmap(map, maplen);
}

static void test_verify_unknown(void **state)
{
	struct spec s = {.proto = 6, .payload = 100};
	uint64_t rnd = 5;
	struct lens L = build(A, &s, &rnd);
	struct tide_mbuf *m;
	const uint32_t both = TIDE_MBUF_F_RX_IP_CKSUM_MASK | TIDE_MBUF_F_RX_L4_CKSUM_MASK;

	(void)state;
	m = to_mbuf(pool, A, L.len, L.len, 1, &rnd);
	set_tx(m, &s, &L, TIDE_MBUF_F_TX_IP_CKSUM | TIDE_MBUF_F_TX_TCP_CKSUM);
	assert_int_equal(tide_offload_cksum_fill(m), 0);
	m->ol_flags = TIDE_MBUF_F_RX_IP_CKSUM_BAD | TIDE_MBUF_F_RX_L4_CKSUM_BAD;
	tide_mbuf_mtod(m, uint8_t *)[12] = 0x88; /* ARP-ish ethertype */
	assert_int_equal(tide_offload_cksum_verify(m), 0);
	assert_int_equal(m->ol_flags & both, 0);
	tide_mbuf_mtod(m, uint8_t *)[12] = 0x08;
	tide_mbuf_mtod(m, uint8_t *)[L.l2 + 6] |= 0x20; /* MF: a fragment */
	assert_int_equal(tide_offload_cksum_verify(m), 0);
	assert_int_equal(m->ol_flags & TIDE_MBUF_F_RX_L4_CKSUM_MASK, 0);
	tide_mbuf_mtod(m, uint8_t *)[L.l2 + 6] &= (uint8_t)~0x20;
	assert_int_equal(tide_offload_cksum_verify(m), 0);
	assert_int_equal(m->ol_flags & both,
			 TIDE_MBUF_F_RX_IP_CKSUM_GOOD | TIDE_MBUF_F_RX_L4_CKSUM_GOOD);
	assert_int_equal(tide_mbuf_trim(m, 1), 0); /* the IP length is now beyond the frame */
	assert_int_equal(tide_offload_cksum_verify(m), 0);
	assert_int_equal(m->ol_flags & both, 0);
	tide_mbuf_free(m);
	assert_pool_full(pool);
}

/* Bad requests are refused and leave the packet as it was. */
static void test_cksum_fill_refused(void **state)
{
	struct spec s = {.proto = 6, .payload = 300};
	uint64_t rnd = 9;
	struct lens L = build(A, &s, &rnd);
	const uint32_t v4 = TIDE_MBUF_F_TX_IPV4, tcp = TIDE_MBUF_F_TX_TCP_CKSUM;
	struct {
		const char *what;
		uint32_t flags;
		int l2, l3, first, trim, totlen, at, byte;
		int rc;
	} cases[] = {
		{"no IP version", tcp, 14, 20, 0, 0, 0, 0, 0, -EINVAL},
		{"both IP versions", v4 | TIDE_MBUF_F_TX_IPV6 | tcp, 14, 20, 0, 0, 0, 0, 0, -EINVAL},
		{"IP cksum on IPv6", TIDE_MBUF_F_TX_IPV6 | TIDE_MBUF_F_TX_IP_CKSUM, 14, 40, 0, 0, 0,
		 0, 0, -EINVAL},
		{"TCP and UDP", v4 | TIDE_MBUF_F_TX_L4_MASK, 14, 20, 0, 0, 0, 0, 0, -EINVAL},
		{"l3 != IHL", v4 | tcp, 14, 24, 0, 0, 0, 0, 0, -EINVAL},
		{"l3 < 20", v4 | TIDE_MBUF_F_TX_IP_CKSUM, 14, 16, 0, 0, 0, 14, 0x44, -EINVAL},
		{"IPv6 claimed, IPv4 there", TIDE_MBUF_F_TX_IPV6 | tcp, 14, 40, 0, 0, 0, 0, 0, -EINVAL},
		{"IPv4 header beyond the first segment", v4 | TIDE_MBUF_F_TX_IP_CKSUM, 14, 20, 30, 0,
		 0, 0, 0, -EINVAL},
		{"TCP field beyond the first segment", v4 | tcp, 14, 20, 50, 0, 0, 0, 0, -EINVAL},
		{"IP length beyond the frame", v4 | tcp, 14, 20, 0, 1, 0, 0, 0, -EINVAL},
		{"IP length shorter than the header", v4 | TIDE_MBUF_F_TX_IP_CKSUM, 14, 20, 0, 0, 19,
		 0, 0, -EINVAL},
		{"TCP header beyond the IP length", v4 | tcp, 14, 20, 0, 0, 39, 0, 0, -EINVAL},
		{"UDP header beyond the IP length", v4 | TIDE_MBUF_F_TX_UDP_CKSUM, 14, 20, 0, 0, 27,
		 14 + 9, 17, -EINVAL},
		{"not TCP", v4 | tcp, 14, 20, 0, 0, 0, 14 + 9, 17, -EINVAL},
		{"not UDP", v4 | TIDE_MBUF_F_TX_UDP_CKSUM, 14, 20, 0, 0, 0, 0, 0, -EINVAL},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct tide_mbuf *m;

		build(A, &s, &rnd);
		if (cases[i].totlen)
			put16(A + 16, (uint32_t)cases[i].totlen);
		if (cases[i].at)
			A[cases[i].at] = (uint8_t)cases[i].byte;
		m = to_mbuf(pool, A, L.len, cases[i].first ? (uint32_t)cases[i].first : L.len, 2000, &rnd);
		if (cases[i].trim)
			assert_int_equal(tide_mbuf_trim(m, (uint16_t)cases[i].trim), 0);
		m->ol_flags = cases[i].flags;
		m->l2_len = (uint8_t)cases[i].l2;
		m->l3_len = (uint16_t)cases[i].l3;
		flat(m, B);
		if (tide_offload_cksum_fill(m) != cases[i].rc)
			fail_msg("%s: not refused", cases[i].what);
		assert_int_equal(m->ol_flags, cases[i].flags);
		assert_memory_equal(tide_mbuf_mtod(m, uint8_t *), B, m->data_len);
		tide_mbuf_free(m);
	}
	/* IPv6: the version, and l3_len beyond the extension headers there are. */
	{
		struct spec s6 = {.v6 = 1, .proto = 6, .payload = 300};
		struct lens L6 = build(A, &s6, &rnd);
		const struct {
			const char *what;
			uint32_t l3;
			uint8_t ver;
			uint32_t flags;
		} v6c[] = {{"IPv6 flag, version 4", 40, 0x40, TIDE_MBUF_F_TX_TCP_CKSUM},
			   {"l3 48, no extension", 48, 0x60, TIDE_MBUF_F_TX_TCP_CKSUM},
			   {"IPv4 header checksum on IPv6", 40, 0x60, TIDE_MBUF_F_TX_IP_CKSUM}};

		for (size_t i = 0; i < sizeof(v6c) / sizeof(v6c[0]); i++) {
			struct tide_mbuf *m;

			build(A, &s6, &rnd);
			A[L6.l2] = v6c[i].ver;
			m = to_mbuf(pool, A, L6.len, L6.len, 1, &rnd);
			set_tx(m, &s6, &L6, v6c[i].flags);
			m->l3_len = (uint16_t)v6c[i].l3;
			if (tide_offload_cksum_fill(m) != -EINVAL)
				fail_msg("%s: not refused", v6c[i].what);
			flat(m, B);
			assert_memory_equal(B, A, L6.len);
			tide_mbuf_free(m);
		}
	}
	assert_pool_full(pool);
}

/* A chain longer than TIDE_OFFLOAD_MAX_SEGS is refused by all three calls. */
static void test_long_chain(void **state)
{
	struct spec s = {.proto = 6, .payload = TIDE_OFFLOAD_MAX_SEGS * 2};
	uint64_t rnd = 11;
	struct lens L = build(A, &s, &rnd);
	uint32_t hdr = L.l2 + L.l3 + L.l4;
	struct tide_mbuf *m, *out[256];

	(void)state;
	for (int extra = 0; extra < 2; extra++) {
		/* headers + MAX-1 (+extra) pieces of 2 bytes */
		uint32_t len = hdr + (TIDE_OFFLOAD_MAX_SEGS - 1 + (uint32_t)extra) * 2;
		int rc;

		s.payload = len - hdr;
		L = build(A, &s, &rnd);
		{
			struct tide_mbuf *h = tide_mbuf_alloc(pool);

			require_non_null(h);
			memcpy(tide_mbuf_append(h, (uint16_t)hdr), A, hdr);
			for (uint32_t o = hdr; o < L.len; o += 2) {
				struct tide_mbuf *t = tide_mbuf_alloc(pool);

				require_non_null(t);
				memcpy(tide_mbuf_append(t, 2), A + o, 2);
				assert_int_equal(tide_mbuf_chain(h, t), 0);
			}
			m = h;
		}
		assert_int_equal(m->nb_segs, TIDE_OFFLOAD_MAX_SEGS + extra);
		set_tx(m, &s, &L, TIDE_MBUF_F_TX_IP_CKSUM | TIDE_MBUF_F_TX_TCP_CKSUM);
		assert_int_equal(tide_offload_cksum_fill(m), extra ? -E2BIG : 0);
		assert_int_equal(tide_offload_cksum_verify(m), extra ? -E2BIG : 0);
		m->ol_flags |= TIDE_MBUF_F_TX_TCP_SEG;
		m->tso_segsz = 16;
		rc = tide_offload_segment(m, pool, out, 256);
		if (extra) {
			assert_int_equal(rc, -E2BIG);
			tide_mbuf_free(m);
		} else {
			assert_true(rc > 0);
			for (int i = 0; i < rc; i++)
				tide_mbuf_free(out[i]);
		}
	}
	assert_pool_full(pool);
}

/* ---- segmentation ---- */

/* Check the outputs of segmenting the packet in A (@L, @s) by @mss: headers, lengths, ids,
 * sequence numbers, flags, checksums (reference and verify), and the payload. */
static void check_segments(struct tide_mbuf **out, int n, const struct spec *s,
			   const struct lens *L, uint32_t mss)
{
	uint32_t hdr = L->l2 + L->l3 + L->l4, payload = L->len - hdr, pos = 0;

	assert_int_equal(n, (payload + mss - 1) / mss);
	for (int i = 0; i < n; i++) {
		struct tide_mbuf *o = out[i];
		uint32_t plen = i + 1 < n ? mss : payload - (uint32_t)i * mss;
		const uint8_t *d = tide_mbuf_mtod(o, const uint8_t *), *ip = d + L->l2,
			      *tcp = ip + L->l3;
		uint8_t fl = s->tcp_flags;

		assert_int_equal(o->nb_segs, 1);
		assert_int_equal(o->pkt_len, hdr + plen);
		assert_int_equal(o->data_len, hdr + plen);
		assert_int_equal(o->ol_flags & (TIDE_MBUF_F_TX_L4_MASK | TIDE_MBUF_F_TX_IP_CKSUM |
						TIDE_MBUF_F_TX_TCP_SEG | TIDE_MBUF_F_TX_IPV4 |
						TIDE_MBUF_F_TX_IPV6), 0);
		assert_int_equal(o->l2_len, L->l2);
		assert_int_equal(o->l3_len, L->l3);
		assert_int_equal(o->l4_len, L->l4);
		assert_memory_equal(d, A, L->l2); /* Ethernet as it was */
		if (s->v6) {
			assert_int_equal(get16(ip + 4), L->l3 - 40 + L->l4 + plen);
			assert_memory_equal(ip + 6, A + L->l2 + 6, L->l3 - 6);
		} else {
			assert_int_equal(get16(ip + 2), L->l3 + L->l4 + plen);
			assert_int_equal(get16(ip + 4), (0x1234 + (uint32_t)i) & 0xffff);
			assert_true(ref_ip_ok(ip, L->l3));
		}
		assert_int_equal(get32(tcp + 4), s->seq + (uint32_t)i * mss);
		if (i + 1 < n)
			fl &= (uint8_t)~0x09;
		if (i > 0)
			fl &= (uint8_t)~0x80;
		assert_int_equal(tcp[13], fl);
		assert_memory_equal(tcp + 20, A + L->l2 + L->l3 + 20, L->l4 - 20); /* options */
		assert_true(ref_l4_ok(d, L->l2, L->l3, s->v6, 6, L->l4 + plen));
		assert_memory_equal(tcp + L->l4, A + hdr + pos, plen);
		pos += plen;
		assert_int_equal(tide_offload_cksum_verify(o), 0);
		assert_int_equal(o->ol_flags & TIDE_MBUF_F_RX_L4_CKSUM_MASK,
				 TIDE_MBUF_F_RX_L4_CKSUM_GOOD);
	}
	assert_int_equal(pos, payload);
}

/* Known cases: 3000 bytes by 1000 (IPv4, FIN|PSH|CWR|ACK), 2500 by 1000 (IPv6 with an
 * extension header, chained input), one output when mss equals the payload. */
static void test_segment_known(void **state)
{
	const struct {
		struct spec s;
		uint32_t mss, first, piece;
	} cases[] = {
		{{.proto = 6, .payload = 3000, .tcp_flags = 0x80 | 0x10 | 0x08 | 0x01, .seq = 0xfffffc00},
		 1000, 2000, 2000},
		{{.v6 = 1, .ext = 1, .vlan = 1, .proto = 6, .payload = 2500, .tcp_opts = 12,
		  .tcp_flags = 0x18, .seq = 77}, 1000, 0, 333},
		{{.proto = 6, .payload = 1460, .tcp_flags = 0x19, .seq = 5}, 1460, 0, 1000},
	};

	(void)state;
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		uint64_t rnd = 100 + c;
		struct lens L = build(A, &cases[c].s, &rnd);
		uint32_t hdr = L.l2 + L.l3 + L.l4;
		struct tide_mbuf *m = to_mbuf(pool, A, L.len, cases[c].first ? cases[c].first : hdr,
					      cases[c].piece, &rnd);
		struct tide_mbuf *out[8];
		int n;

		set_tx(m, &cases[c].s, &L, TIDE_MBUF_F_TX_TCP_SEG | TIDE_MBUF_F_TX_TCP_CKSUM);
		m->tso_segsz = (uint16_t)cases[c].mss;
		m->port = 3;
		n = tide_offload_segment(m, pool, out, 8);
		check_segments(out, n, &cases[c].s, &L, cases[c].mss);
		for (int i = 0; i < n; i++) {
			assert_int_equal(out[i]->port, 3);
			tide_mbuf_free(out[i]);
		}
	}
	assert_pool_full(pool);
}

/* Every bad input is refused, nothing allocated, the input unchanged and still the
 * caller's; a pool that runs dry midway gives back what was taken. */
static void test_segment_refused(void **state)
{
	struct spec s = {.proto = 6, .payload = 3000, .seq = 1};
	uint64_t rnd = 13;
	struct lens L = build(A, &s, &rnd);
	const uint32_t hdr = L.l2 + L.l3 + L.l4;
	struct {
		const char *what;
		uint32_t flags;
		int l4, segsz, first, max_out, at, byte;
		int rc;
	} cases[] = {
		{"no TCP_SEG", TIDE_MBUF_F_TX_IPV4, 20, 1000, 0, 8, 0, 0, -EINVAL},
		{"UDP_SEG", TIDE_MBUF_F_TX_IPV4 | TIDE_MBUF_F_TX_TCP_SEG | TIDE_MBUF_F_TX_UDP_SEG,
		 20, 1000, 0, 8, 0, 0, -ENOTSUP},
		{"no IP version", TIDE_MBUF_F_TX_TCP_SEG, 20, 1000, 0, 8, 0, 0, -EINVAL},
		{"segsz 0", TIDE_MBUF_F_TX_IPV4 | TIDE_MBUF_F_TX_TCP_SEG, 20, 0, 0, 8, 0, 0, -EINVAL},
		{"segsz > payload", TIDE_MBUF_F_TX_IPV4 | TIDE_MBUF_F_TX_TCP_SEG, 20, 3001, 0, 8, 0, 0, -EINVAL},
		{"segsz + headers > data room", TIDE_MBUF_F_TX_IPV4 | TIDE_MBUF_F_TX_TCP_SEG, 20,
		 TIDE_MBUF_DATAROOM - 53, 0, 8, 0, 0, -EINVAL},
		{"l4_len < 20 (data offset 4)", TIDE_MBUF_F_TX_IPV4 | TIDE_MBUF_F_TX_TCP_SEG, 16, 1000, 0,
		 8, 34 + 12, 0x40, -EINVAL},
		{"l4_len != data offset", TIDE_MBUF_F_TX_IPV4 | TIDE_MBUF_F_TX_TCP_SEG, 24, 1000, 0, 8, 0, 0, -EINVAL},
		{"not TCP", TIDE_MBUF_F_TX_IPV4 | TIDE_MBUF_F_TX_TCP_SEG, 20, 1000, 0, 8, 14 + 9, 17, -EINVAL},
		{"IP length != packet", TIDE_MBUF_F_TX_IPV4 | TIDE_MBUF_F_TX_TCP_SEG, 20, 1000, 0, 8, 14 + 3, 0, -EINVAL},
		{"TCP header beyond first segment", TIDE_MBUF_F_TX_IPV4 | TIDE_MBUF_F_TX_TCP_SEG, 20,
		 1000, 40, 8, 0, 0, -EINVAL},
		{"too many outputs", TIDE_MBUF_F_TX_IPV4 | TIDE_MBUF_F_TX_TCP_SEG, 20, 1000, 0, 2, 0, 0, -ENOSPC},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct tide_mbuf *m, *out[8] = {NULL};
		unsigned avail;

		build(A, &s, &rnd);
		if (cases[i].at)
			A[cases[i].at] = (uint8_t)cases[i].byte;
		m = to_mbuf(pool, A, L.len, cases[i].first ? (uint32_t)cases[i].first : 2000, 2000, &rnd);
		/* Past a short first segment's data, the buffer holds the rest of the headers:
		 * only the length check can tell they are not part of the packet. */
		if (cases[i].first)
			memcpy(tide_mbuf_mtod(m, uint8_t *) + m->data_len, A + m->data_len,
			       hdr - m->data_len);
		m->ol_flags = cases[i].flags;
		m->l2_len = 14;
		m->l3_len = 20;
		m->l4_len = (uint8_t)cases[i].l4;
		m->tso_segsz = (uint16_t)cases[i].segsz;
		avail = tide_pool_avail(pool);
		if (tide_offload_segment(m, pool, out, (unsigned)cases[i].max_out) != cases[i].rc)
			fail_msg("%s: not refused with %d", cases[i].what, cases[i].rc);
		assert_int_equal(tide_pool_avail(pool), avail);
		assert_int_equal(m->refcnt, 1);
		flat(m, B);
		assert_memory_equal(B, A, L.len);
		tide_mbuf_free(m);
	}
	assert_pool_full(pool);

	/* tso_segsz one more than a small payload (the data room is not what refuses it). */
	{
		struct spec t = {.proto = 6, .payload = 100, .seq = 1};
		struct lens tl = build(A, &t, &rnd);
		struct tide_mbuf *m = to_mbuf(pool, A, tl.len, tl.len, 1, &rnd), *out[2];

		set_tx(m, &t, &tl, TIDE_MBUF_F_TX_TCP_SEG);
		m->tso_segsz = 101;
		assert_int_equal(tide_offload_segment(m, pool, out, 2), -EINVAL);
		m->tso_segsz = 100;
		assert_int_equal(tide_offload_segment(m, pool, out, 2), 1);
		tide_mbuf_free(out[0]);
	}
	build(A, &s, &rnd);

	/* A pool that runs dry at the fourth output. */
	{
		struct tide_pool *small;
		struct tide_mbuf *m, *out[8] = {NULL};

		assert_int_equal(tide_pktpool_create("small", 5, 0, 0, NULL, &small), 0);
		m = to_mbuf(pool, A, L.len, 2000, 2000, &rnd);
		build(A, &s, &rnd);
		tide_mbuf_free(m);
		m = to_mbuf(pool, A, L.len, 2000, 2000, &rnd);
		set_tx(m, &s, &L, TIDE_MBUF_F_TX_TCP_SEG);
		m->tso_segsz = 500; /* 6 outputs, 5 buffers */
		assert_int_equal(tide_offload_segment(m, small, out, 8), -ENOBUFS);
		assert_pool_full(small);
		for (int i = 0; i < 8; i++)
			assert_null(out[i]);
		flat(m, B);
		assert_memory_equal(B, A, L.len);
		m->tso_segsz = 600; /* 5 outputs: fits exactly */
		assert_int_equal(tide_offload_segment(m, small, out, 8), 5);
		for (int i = 0; i < 5; i++)
			tide_mbuf_free(out[i]);
		assert_pool_full(small);
		tide_pool_free(small);
	}
	assert_pool_full(pool);
}

/* The input's reference is dropped, not the buffer: a shared input survives. (A shared
 * chain has a reference on every segment; one segment here.) */
static void test_segment_shared_input(void **state)
{
	struct spec s = {.proto = 6, .payload = 1900, .seq = 9};
	uint64_t rnd = 17;
	struct lens L = build(A, &s, &rnd);
	struct tide_mbuf *m = to_mbuf(pool, A, L.len, L.len, 1, &rnd), *out[4];

	(void)state;
	set_tx(m, &s, &L, TIDE_MBUF_F_TX_TCP_SEG);
	m->tso_segsz = 1000;
	tide_mbuf_refcnt_update(m, 1);
	assert_int_equal(tide_offload_segment(m, pool, out, 4), 2);
	assert_int_equal(tide_mbuf_refcnt_read(m), 1);
	flat(m, B);
	assert_memory_equal(B, A, L.len);
	tide_mbuf_free(m);
	tide_mbuf_free(out[0]);
	tide_mbuf_free(out[1]);
	assert_pool_full(pool);
}

/* Thousands of random packets (sizes, IP versions, options, chains, flags, MSS), fixed
 * seed: every output checked against the reference, the payload put back together. */
static void test_segment_random(void **state)
{
	uint64_t rnd = 0x5eed;
	static struct tide_mbuf *out[256];

	(void)state;
	for (int it = 0; it < 4000; it++) {
		struct spec s = {.v6 = (int)(test_rand(&rnd) & 1), .proto = 6};
		struct lens L;
		struct tide_mbuf *m;
		uint32_t hdr, mss, min;
		int n;

		s.vlan = (int)(test_rand(&rnd) & 1);
		s.ext = s.v6 && (test_rand(&rnd) & 1);
		s.tcp_opts = 4 * (uint32_t)(test_rand(&rnd) % 11);
		s.tcp_flags = (uint8_t)test_rand(&rnd);
		s.seq = (uint32_t)test_rand(&rnd);
		s.payload = 1 + (uint32_t)(test_rand(&rnd) % 20000);
		L = build(A, &s, &rnd);
		hdr = L.l2 + L.l3 + L.l4;
		min = (s.payload + 255) / 256; /* at most 256 outputs */
		mss = min + (uint32_t)(test_rand(&rnd) % 1460);
		if (mss > s.payload)
			mss = s.payload;
		m = to_mbuf(pool, A, L.len, hdr + (uint32_t)(test_rand(&rnd) % 64),
			    1 + (uint32_t)(test_rand(&rnd) % 2048), &rnd);
		set_tx(m, &s, &L, TIDE_MBUF_F_TX_TCP_SEG | TIDE_MBUF_F_TX_TCP_CKSUM |
					  (s.v6 ? 0 : TIDE_MBUF_F_TX_IP_CKSUM));
		m->tso_segsz = (uint16_t)mss;
		n = tide_offload_segment(m, pool, out, 256);
		if (n < 0)
			fail_msg("packet %d (%u bytes, mss %u, v6 %d): %d", it, L.len, mss, s.v6, n);
		check_segments(out, n, &s, &L, mss);
		for (int i = 0; i < n; i++)
			tide_mbuf_free(out[i]);
	}
	assert_pool_full(pool);
}

/* ---- the virtio-net header ---- */

struct hdr_case {
	const char *what;
	struct virtio_net_hdr_mrg h;
	unsigned reason;
};

/* A guest's TSO packet (IPv4 or IPv6, as gso says) with the header a guest writes for it. */
static struct tide_mbuf *guest_tso(int v6, uint32_t payload, struct virtio_net_hdr_mrg *h,
				   struct spec *s, struct lens *L, uint64_t *rnd)
{
	memset(s, 0, sizeof(*s));
	s->v6 = v6;
	s->proto = 6;
	s->payload = payload;
	s->tcp_opts = 12;
	s->tcp_flags = 0x18;
	s->seq = 1000;
	*L = build(A, s, rnd);
	memset(h, 0, sizeof(*h));
	h->flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
	h->gso_type = v6 ? VIRTIO_NET_HDR_GSO_TCPV6 : VIRTIO_NET_HDR_GSO_TCPV4;
	h->gso_size = 1448;
	h->hdr_len = (uint16_t)(L->l2 + L->l3 + L->l4);
	h->csum_start = (uint16_t)(L->l2 + L->l3);
	h->csum_offset = 16;
	return to_mbuf(pool, A, L->len, 2048, 2048, rnd);
}

/* A guest's TSO packet comes in, the software fallback segments it, and every piece is a
 * correct TCP segment; the header written back for the unsegmented packet is the guest's. */
static void test_vnet_tso_both_ways(void **state)
{
	(void)state;
	for (int v6 = 0; v6 < 2; v6++) {
		uint64_t rnd = 21 + (uint64_t)v6;
		struct virtio_net_hdr_mrg h, back;
		struct spec s;
		struct lens L;
		struct tide_mbuf *m = guest_tso(v6, 10000, &h, &s, &L, &rnd), *out[16];
		unsigned why = 99;
		int n;

		assert_int_equal(offload_vnet_to_mbuf(&h, m, &why), 0);
		assert_int_equal(why, OFFLOAD_VNET_OK);
		assert_int_equal(m->ol_flags, (v6 ? TIDE_MBUF_F_TX_IPV6 : TIDE_MBUF_F_TX_IPV4) |
						      TIDE_MBUF_F_TX_TCP_CKSUM | TIDE_MBUF_F_TX_TCP_SEG |
						      TIDE_MBUF_F_RX_L4_CKSUM_NONE);
		assert_int_equal(m->l2_len, L.l2);
		assert_int_equal(m->l3_len, L.l3);
		assert_int_equal(m->l4_len, L.l4);
		assert_int_equal(m->tso_segsz, 1448);

		memset(&back, 0xaa, sizeof(back));
		assert_int_equal(offload_vnet_from_mbuf(m, &back), 0);
		assert_int_equal(back.flags, h.flags);
		assert_int_equal(back.gso_type, h.gso_type);
		assert_int_equal(back.gso_size, h.gso_size);
		assert_int_equal(back.hdr_len, h.hdr_len);
		assert_int_equal(back.csum_start, h.csum_start);
		assert_int_equal(back.csum_offset, h.csum_offset);
		assert_int_equal(back.num_buffers, 0xaaaa); /* the caller's */
		/* The field holds the pseudo-header's sum, as the peer expects: adding the data
		 * and complementing gives the right checksum. */
		{
			uint8_t *c = tide_mbuf_mtod_offset(m, uint8_t *, L.l2 + L.l3 + 16);
			uint32_t part = get16(c);

			flat(m, B);
			B[L.l2 + L.l3 + 16] = B[L.l2 + L.l3 + 17] = 0;
			put16(B + L.l2 + L.l3 + 16,
			      (uint16_t)~ref_fold(ref_add(part, B + L.l2 + L.l3, L.len - L.l2 - L.l3)));
			assert_true(ref_l4_ok(B, L.l2, L.l3, v6, 6, L.len - L.l2 - L.l3));
		}

		n = tide_offload_segment(m, pool, out, 16);
		check_segments(out, n, &s, &L, 1448);
		for (int i = 0; i < n; i++) {
			/* Each piece goes to a guest with DATA_VALID. */
			assert_int_equal(offload_vnet_from_mbuf(out[i], &back), 0);
			assert_int_equal(back.flags, VIRTIO_NET_HDR_F_DATA_VALID);
			assert_int_equal(back.gso_type, VIRTIO_NET_HDR_GSO_NONE);
			tide_mbuf_free(out[i]);
		}
	}
	assert_pool_full(pool);
}

/* Checksum-only headers: UDP and TCP NEEDS_CSUM, DATA_VALID, none; ECN; a GSO packet that
 * fits in one piece keeps only the checksum request. */
static void test_vnet_csum(void **state)
{
	uint64_t rnd = 31;

	(void)state;
	for (int c = 0; c < 4; c++) {
		struct spec s = {.v6 = c & 1, .proto = (c & 2) ? 17 : 6, .payload = 999, .seq = 1};
		struct lens L = build(A, &s, &rnd);
		struct tide_mbuf *m = to_mbuf(pool, A, L.len, L.len, 1, &rnd);
		struct virtio_net_hdr_mrg h = {.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM,
					       .csum_start = (uint16_t)(L.l2 + L.l3),
					       .csum_offset = s.proto == 6 ? 16 : 6}, back;
		unsigned why;

		assert_int_equal(offload_vnet_to_mbuf(&h, m, &why), 0);
		assert_int_equal(m->ol_flags & TIDE_MBUF_F_TX_L4_MASK,
				 s.proto == 6 ? TIDE_MBUF_F_TX_TCP_CKSUM : TIDE_MBUF_F_TX_UDP_CKSUM);
		assert_int_equal(m->ol_flags & (TIDE_MBUF_F_TX_TCP_SEG | TIDE_MBUF_F_TX_UDP_SEG), 0);
		assert_int_equal(offload_vnet_from_mbuf(m, &back), 0);
		assert_int_equal(back.flags, VIRTIO_NET_HDR_F_NEEDS_CSUM);
		assert_int_equal(back.csum_start, h.csum_start);
		assert_int_equal(back.csum_offset, h.csum_offset);
		assert_int_equal(back.gso_type, 0);
		/* The software fallback finishes it. */
		assert_int_equal(tide_offload_cksum_fill(m), 0);
		flat(m, B);
		assert_true(ref_l4_ok(B, L.l2, L.l3, s.v6, s.proto, L.len - L.l2 - L.l3));
		tide_mbuf_free(m);
	}
	{
		struct spec s = {.proto = 6, .payload = 100, .tcp_flags = 0x80 | 0x10};
		struct lens L = build(A, &s, &rnd);
		struct tide_mbuf *m = to_mbuf(pool, A, L.len, L.len, 1, &rnd);
		struct virtio_net_hdr_mrg h = {.flags = VIRTIO_NET_HDR_F_DATA_VALID}, back;
		unsigned why;

		assert_int_equal(offload_vnet_to_mbuf(&h, m, &why), 0);
		assert_int_equal(m->ol_flags, TIDE_MBUF_F_RX_L4_CKSUM_GOOD);
		assert_int_equal(offload_vnet_from_mbuf(m, &back), 0);
		assert_int_equal(back.flags, VIRTIO_NET_HDR_F_DATA_VALID);
		h.flags = 0;
		m->ol_flags = 0;
		assert_int_equal(offload_vnet_to_mbuf(&h, m, &why), 0);
		assert_int_equal(m->ol_flags, 0);
		assert_int_equal(offload_vnet_from_mbuf(m, &back), 0);
		assert_int_equal(back.flags, 0);
		/* TCPV4|ECN with CWR set; 100 bytes in one 120-byte piece: no segmentation. */
		h = (struct virtio_net_hdr_mrg){.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM,
			.gso_type = VIRTIO_NET_HDR_GSO_TCPV4 | VIRTIO_NET_HDR_GSO_ECN,
			.gso_size = 120, .csum_start = 34, .csum_offset = 16};
		assert_int_equal(offload_vnet_to_mbuf(&h, m, &why), 0);
		assert_int_equal(m->ol_flags & TIDE_MBUF_F_TX_TCP_SEG, 0);
		m->ol_flags |= TIDE_MBUF_F_TX_TCP_SEG;
		m->tso_segsz = 50;
		m->l4_len = 20;
		assert_int_equal(offload_vnet_from_mbuf(m, &back), 0);
		assert_int_equal(back.gso_type, VIRTIO_NET_HDR_GSO_TCPV4 | VIRTIO_NET_HDR_GSO_ECN);
		assert_int_equal(back.gso_size, 50);
		assert_int_equal(back.hdr_len, 54);
		/* requests that do not match the packet are refused, header untouched */
		m->l3_len = 24;
		memset(&back, 0x55, sizeof(back));
		assert_int_equal(offload_vnet_from_mbuf(m, &back), -EINVAL);
		assert_int_equal(back.flags, 0x55);
		m->l3_len = 20;
		m->tso_segsz = 0;
		assert_int_equal(offload_vnet_from_mbuf(m, &back), -EINVAL);
		tide_mbuf_free(m);
	}
	assert_pool_full(pool);
}

/* Every hostile header is refused with its reason, and the packet is left alone. */
static void test_vnet_hostile(void **state)
{
	uint64_t rnd = 41;
	struct virtio_net_hdr_mrg g;
	struct spec s;
	struct lens L;
	struct tide_mbuf *m = guest_tso(0, 3000, &g, &s, &L, &rnd);
	struct spec us = {.proto = 17, .payload = 3000};
	struct lens UL;
	struct tide_mbuf *u;
	const uint16_t cs = (uint16_t)(L.l2 + L.l3), len = (uint16_t)L.len;
	struct hdr_case cases[] = {
		{"unknown flag", {.flags = 4}, OFFLOAD_VNET_FLAGS},
		{"csum_start beyond", {.flags = 1, .csum_start = (uint16_t)(len - 17), .csum_offset = 16},
		 OFFLOAD_VNET_CSUM_BEYOND},
		{"csum_offset beyond", {.flags = 1, .csum_start = cs, .csum_offset = 0xfffe},
		 OFFLOAD_VNET_CSUM_BEYOND},
		{"csum_start far beyond", {.flags = 1, .csum_start = 0xffff, .csum_offset = 16},
		 OFFLOAD_VNET_CSUM_BEYOND},
		{"csum_offset odd", {.flags = 1, .csum_start = cs, .csum_offset = 15},
		 OFFLOAD_VNET_CSUM_ALIGN},
		{"csum_offset at TCP's urgent pointer", {.flags = 1, .csum_start = cs, .csum_offset = 18},
		 OFFLOAD_VNET_CSUM_FIELD},
		{"csum_offset 6 on TCP", {.flags = 1, .csum_start = cs, .csum_offset = 6},
		 OFFLOAD_VNET_CSUM_FIELD},
		{"csum_start inside the IP header", {.flags = 1, .csum_start = 14, .csum_offset = 10},
		 OFFLOAD_VNET_CSUM_FIELD},
		{"csum_start after the TCP header", {.flags = 1, .csum_start = (uint16_t)(cs + 4),
		 .csum_offset = 16}, OFFLOAD_VNET_CSUM_FIELD},
		{"gso_type 2", {.flags = 1, .gso_type = 2, .gso_size = 1000, .csum_start = cs,
		 .csum_offset = 16}, OFFLOAD_VNET_GSO_TYPE},
		{"gso_type 5", {.flags = 1, .gso_type = 5, .gso_size = 1000, .csum_start = cs,
		 .csum_offset = 16}, OFFLOAD_VNET_GSO_TYPE},
		{"ECN alone", {.flags = 1, .gso_type = 0x80, .gso_size = 1000, .csum_start = cs,
		 .csum_offset = 16}, OFFLOAD_VNET_GSO_TYPE},
		{"UDP with ECN", {.flags = 1, .gso_type = 0x83, .gso_size = 1000, .csum_start = cs,
		 .csum_offset = 16}, OFFLOAD_VNET_GSO_TYPE},
		{"gso_size 0", {.flags = 1, .gso_type = 1, .gso_size = 0, .csum_start = cs,
		 .csum_offset = 16}, OFFLOAD_VNET_GSO_SIZE},
		{"gso_size beyond the frame", {.flags = 1, .gso_type = 1, .gso_size = (uint16_t)(len + 1),
		 .csum_start = cs, .csum_offset = 16}, OFFLOAD_VNET_GSO_SIZE},
		{"GSO without NEEDS_CSUM", {.flags = 0, .gso_type = 1, .gso_size = 1000},
		 OFFLOAD_VNET_GSO_CSUM},
		{"TCPV6 on IPv4", {.flags = 1, .gso_type = 4, .gso_size = 1000, .csum_start = cs,
		 .csum_offset = 16}, OFFLOAD_VNET_GSO_PROTO},
		{"UDP on TCP", {.flags = 1, .gso_type = 3, .gso_size = 1000, .csum_start = cs,
		 .csum_offset = 16}, OFFLOAD_VNET_GSO_PROTO},
	};

	(void)state;
	UL = build(B, &us, &rnd);
	u = to_mbuf(pool, B, UL.len, UL.len, 2000, &rnd);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct tide_mbuf before = *m;
		unsigned why = 0;

		if (offload_vnet_to_mbuf(&cases[i].h, m, &why) != -EINVAL || why != cases[i].reason)
			fail_msg("%s: reason %s, want %s", cases[i].what, offload_vnet_reason_name(why),
				 offload_vnet_reason_name(cases[i].reason));
		assert_memory_equal(&before, m, sizeof(before));
	}
	/* The packet itself: a fragment has no L4 header to finish; a TCP header shorter than
	 * 20 bytes or longer than the IP payload cannot be segmented. */
	{
		const struct {
			const char *what;
			uint32_t at;
			uint8_t val;
			unsigned reason;
		} pk[] = {
			{"fragment (MF)", L.l2 + 6, 0x20, OFFLOAD_VNET_CSUM_FIELD},
			{"fragment (offset)", L.l2 + 7, 0x01, OFFLOAD_VNET_CSUM_FIELD},
			{"TCP data offset 4", L.l2 + L.l3 + 12, 0x40, OFFLOAD_VNET_GSO_PROTO},
		};

		for (size_t i = 0; i < sizeof(pk) / sizeof(pk[0]); i++) {
			uint8_t *b = tide_mbuf_mtod_offset(m, uint8_t *, pk[i].at), keep = *b;
			struct tide_mbuf before = *m;
			unsigned why = 0;

			*b = pk[i].val;
			if (offload_vnet_to_mbuf(&g, m, &why) != -EINVAL || why != pk[i].reason)
				fail_msg("%s: reason %s", pk[i].what, offload_vnet_reason_name(why));
			assert_memory_equal(&before, m, sizeof(before));
			*b = keep;
		}
	}
	{
		struct virtio_net_hdr_mrg sh;
		struct spec ss;
		struct lens sl;
		struct tide_mbuf *t = guest_tso(0, 10, &sh, &ss, &sl, &rnd);
		unsigned why = 0;

		sh.gso_size = 5;
		tide_mbuf_mtod(t, uint8_t *)[sl.l2 + sl.l3 + 12] = 0xf0; /* 60 bytes of 42 */
		assert_int_equal(offload_vnet_to_mbuf(&sh, t, &why), -EINVAL);
		assert_int_equal(why, OFFLOAD_VNET_GSO_PROTO);
		tide_mbuf_free(t);
	}
	/* On a UDP packet: the TCP checksum offset, and TCP GSO (the UDP payload looks like a
	 * TCP data offset of 20, so only the protocol check can refuse it). */
	{
		struct virtio_net_hdr_mrg h = {.flags = 1, .csum_start = 34, .csum_offset = 16};
		unsigned why = 0;

		tide_mbuf_mtod(u, uint8_t *)[34 + 12] = 0x50;

		assert_int_equal(offload_vnet_to_mbuf(&h, u, &why), -EINVAL);
		assert_int_equal(why, OFFLOAD_VNET_CSUM_FIELD);
		h.csum_offset = 6;
		h.gso_type = VIRTIO_NET_HDR_GSO_TCPV4;
		h.gso_size = 1000;
		assert_int_equal(offload_vnet_to_mbuf(&h, u, &why), -EINVAL);
		assert_int_equal(why, OFFLOAD_VNET_GSO_PROTO);
		h.gso_type = VIRTIO_NET_HDR_GSO_UDP;
		assert_int_equal(offload_vnet_to_mbuf(&h, u, &why), 0);
		assert_int_equal(u->ol_flags & TIDE_MBUF_F_TX_UDP_SEG, TIDE_MBUF_F_TX_UDP_SEG);
		assert_int_equal(u->l4_len, 8);
		{
			struct tide_mbuf *out[4];

			assert_int_equal(tide_offload_segment(u, pool, out, 4), -ENOTSUP);
		}
	}
	/* The guest's own header still goes through on the same packet. */
	{
		unsigned why = 99;

		assert_int_equal(offload_vnet_to_mbuf(&g, m, &why), 0);
		assert_int_equal(why, 0);
	}
	assert_string_equal(offload_vnet_reason_name(OFFLOAD_VNET_NR_REASONS), "?");
	tide_mbuf_free(m);
	tide_mbuf_free(u);
	assert_pool_full(pool);
}

/* offload_vnet_from_mbuf() refuses requests that do not match the packet. */
static void test_vnet_from_refused(void **state)
{
	uint64_t rnd = 51;
	struct spec s = {.proto = 6, .payload = 500, .seq = 1};
	struct spec su = {.proto = 17, .payload = 500};
	struct lens L;
	const uint32_t v4 = TIDE_MBUF_F_TX_IPV4;
	const struct {
		const char *what;
		uint32_t flags;
		int l3, l4, segsz, first, at, byte, udp;
	} cases[] = {
		{"no IP version", TIDE_MBUF_F_TX_TCP_CKSUM, 20, 20, 0, 0, 0, 0},
		{"TCP and UDP", v4 | TIDE_MBUF_F_TX_L4_MASK, 20, 8, 0, 0, 0, 0, 1},
		{"TCP and UDP GSO", v4 | TIDE_MBUF_F_TX_TCP_SEG | TIDE_MBUF_F_TX_UDP_SEG, 20, 8, 100,
		 0, 0, 0, 1},
		{"l3 wrong", v4 | TIDE_MBUF_F_TX_TCP_CKSUM, 24, 20, 0, 0, 0, 0},
		{"TCP request, UDP packet", v4 | TIDE_MBUF_F_TX_TCP_CKSUM, 20, 20, 0, 0, 14 + 9, 17},
		{"UDP request, TCP packet", v4 | TIDE_MBUF_F_TX_UDP_CKSUM, 20, 8, 0, 0, 0, 0},
		{"TCP field beyond the first segment", v4 | TIDE_MBUF_F_TX_TCP_CKSUM, 20, 20, 0, 50, 0, 0},
		{"segsz 0", v4 | TIDE_MBUF_F_TX_TCP_SEG, 20, 20, 0, 0, 0, 0},
		{"l4_len < 20", v4 | TIDE_MBUF_F_TX_TCP_SEG, 20, 16, 100, 0, 0, 0},
		{"l4_len beyond the IP payload", v4 | TIDE_MBUF_F_TX_TCP_SEG, 20, 60, 100, 0, 14 + 3,
		 20 + 40},
		{"TCP header beyond the first segment", v4 | TIDE_MBUF_F_TX_TCP_SEG, 20, 40, 100, 60, 0, 0},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct virtio_net_hdr_mrg h;
		struct tide_mbuf *m;

		L = build(A, cases[i].udp ? &su : &s, &rnd);
		if (cases[i].at)
			A[cases[i].at] = (uint8_t)cases[i].byte;
		if (cases[i].at == 14 + 3)
			A[14 + 2] = 0;
		m = to_mbuf(pool, A, L.len, cases[i].first ? (uint32_t)cases[i].first : L.len, 2000,
			    &rnd);
		m->ol_flags = cases[i].flags;
		m->l2_len = 14;
		m->l3_len = (uint16_t)cases[i].l3;
		m->l4_len = (uint8_t)cases[i].l4;
		m->tso_segsz = (uint16_t)cases[i].segsz;
		memset(&h, 0x5a, sizeof(h));
		flat(m, B);
		if (offload_vnet_from_mbuf(m, &h) != -EINVAL)
			fail_msg("%s: not refused", cases[i].what);
		assert_int_equal(h.flags, 0x5a);
		assert_memory_equal(tide_mbuf_mtod(m, uint8_t *), B, m->data_len);
		tide_mbuf_free(m);
	}
	/* An IPv4 header checksum request on an IPv6 packet. */
	{
		struct spec s6 = {.v6 = 1, .proto = 6, .payload = 100};
		struct lens L6 = build(A, &s6, &rnd);
		struct tide_mbuf *m = to_mbuf(pool, A, L6.len, L6.len, 1, &rnd);
		struct virtio_net_hdr_mrg h;

		set_tx(m, &s6, &L6, TIDE_MBUF_F_TX_IP_CKSUM);
		assert_int_equal(offload_vnet_from_mbuf(m, &h), -EINVAL);
		flat(m, B);
		assert_memory_equal(B, A, L6.len);
		tide_mbuf_free(m);
	}
	assert_pool_full(pool);
}

/* ---- ports: capabilities and the queue conf ---- */

static void test_port_capa(void **state)
{
	struct tide_port *p;
	struct tide_port_info info = {.sz = sizeof(info)};
	struct tide_txq_conf tc = {.sz = sizeof(tc), .offloads = TIDE_OFFLOAD_TX_TCP_CKSUM};
	struct tide_rxq_conf rc = {.sz = sizeof(rc), .offloads = TIDE_OFFLOAD_RX_IPV4_CKSUM};
	struct tide_rxq_conf old = {.sz = offsetof(struct tide_rxq_conf, offloads)};

	(void)state;
	assert_int_equal(tide_port_open("null:", &p), 0);
	assert_int_equal(tide_port_info_get(p, &info), 0);
	assert_int_equal(info.rx_offload_capa, 0);
	assert_int_equal(info.tx_offload_capa, 0);
	assert_int_equal(tide_port_configure(p, 1, 1), 0);
	assert_int_equal(tide_txq_setup(p, 0, 256, &tc), -ENOTSUP);
	assert_null(tide_port_txq(p, 0));
	assert_int_equal(tide_rxq_setup(p, 0, 256, pool, &rc), -ENOTSUP);
	assert_null(tide_port_rxq(p, 0));
	/* none asked: fine, also from a caller that predates the field */
	tc.offloads = 0;
	assert_int_equal(tide_txq_setup(p, 0, 256, &tc), 0);
	assert_int_equal(tide_rxq_setup(p, 0, 256, pool, &old), 0);
	tide_port_close(p);
	assert_pool_full(pool);
}

/* ---- the world's opinion: tshark on a capture of the fallback's output ---- */

static int run(const char *cmd, char *out, size_t n)
{
	FILE *f = popen(cmd, "r");
	size_t k = 0;

	if (f == NULL)
		return -1;
	while (k + 1 < n && fgets(out + k, (int)(n - k), f) != NULL)
		k += strlen(out + k);
	out[k] = 0;
	return pclose(f);
}

static int tshark_main(void)
{
	char dir[256], spec[512], cmd[1024], *res;
	struct tide_port *p;
	uint64_t rnd = 77;
	unsigned sent = 0, expect = 0;
	static char buf[1 << 20];
	size_t reslen = 1 << 22;
	static uint8_t stream[200000];
	uint32_t stream_len = 0, seq = 1000;
	int rc = 1;

	if (system("tshark --version >/dev/null 2>&1") != 0) {
		fprintf(stderr, "SKIP: tshark is not installed\n");
		return 77;
	}
	if (tide_driver_find("pcap") == NULL) {
		fprintf(stderr, "SKIP: the pcap driver is not in this build (libpcap not found, or -Dpcap=disabled)\n");
		return 77;
	}
	snprintf(dir, sizeof(dir), "%s/tide-offload-XXXXXX", test_tmp());
	if (tide_thread_register() < 0 || tide_pktpool_create("ts", 2048, 0, 0, NULL, &pool) < 0 ||
	    mkdtemp(dir) == NULL)
		return 1;
	snprintf(spec, sizeof(spec), "pcap:tx=%s/out.pcap", dir);
	if (tide_port_open(spec, &p) < 0 || tide_port_configure(p, 0, 1) < 0 ||
	    tide_txq_setup(p, 0, 256, NULL) < 0 || tide_port_start(p) < 0)
		return 1;
	/* One TCP stream of 40 segmentation requests (IPv4 and IPv6 alternate only between
	 * streams, so the stream is IPv4), then UDP/TCP checksum-only packets over IPv6. */
	for (int i = 0; i < 40; i++) {
		struct spec s = {.proto = 6, .payload = 100 + (uint32_t)(test_rand(&rnd) % 3000),
				 .tcp_flags = 0x18 | (i == 39 ? 0x01 : 0), .seq = seq,
				 .tcp_opts = (i & 1) ? 12 : 0};
		struct lens L = build(A, &s, &rnd);
		struct tide_mbuf *m = to_mbuf(pool, A, L.len, L.l2 + L.l3 + L.l4, 1500, &rnd), *out[64];
		int n;

		memcpy(stream + stream_len, A + L.l2 + L.l3 + L.l4, s.payload);
		stream_len += s.payload;
		seq += s.payload;
		set_tx(m, &s, &L, TIDE_MBUF_F_TX_TCP_SEG | TIDE_MBUF_F_TX_TCP_CKSUM |
					  TIDE_MBUF_F_TX_IP_CKSUM);
		m->tso_segsz = (uint16_t)(500 + test_rand(&rnd) % 960);
		if (m->tso_segsz > s.payload)
			m->tso_segsz = (uint16_t)s.payload;
		n = tide_offload_segment(m, pool, out, 64);
		if (n < 0)
			return 1;
		expect += (unsigned)n;
		sent += tide_tx_burst(tide_port_txq(p, 0), out, (uint16_t)n);
	}
	for (int i = 0; i < 20; i++) {
		struct spec s = {.v6 = 1, .ext = i & 1, .proto = (i & 2) ? 17 : 6,
				 .payload = 1 + (uint32_t)(test_rand(&rnd) % 1400), .seq = 5};
		struct lens L = build(A, &s, &rnd);
		struct tide_mbuf *m = to_mbuf(pool, A, L.len, L.len, 1, &rnd);

		set_tx(m, &s, &L, s.proto == 6 ? TIDE_MBUF_F_TX_TCP_CKSUM : TIDE_MBUF_F_TX_UDP_CKSUM);
		if (tide_offload_cksum_fill(m) < 0)
			return 1;
		expect++;
		sent += tide_tx_burst(tide_port_txq(p, 0), &m, 1);
	}
	tide_port_close(p);
	if (sent != expect) {
		fprintf(stderr, "FAIL: pcap took %u of %u\n", sent, expect);
		return 1;
	}
	/* Checksum status: 0 bad, 1 good, 2 unverified; every packet's must be good. */
	snprintf(cmd, sizeof(cmd),
		 "tshark -r %s/out.pcap -o ip.check_checksum:TRUE -o tcp.check_checksum:TRUE "
		 "-o udp.check_checksum:TRUE -T fields -e ip.checksum.status -e tcp.checksum.status "
		 "-e udp.checksum.status 2>/dev/null", dir);
	if (run(cmd, buf, sizeof(buf)) != 0) {
		fprintf(stderr, "FAIL: %s\n%s", cmd, buf);
		goto out;
	}
	{
		unsigned lines = 0, good = 0;
		char *save, *line;

		for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
			lines++;
			if (strchr(line, '0') != NULL || strchr(line, '2') != NULL) {
				fprintf(stderr, "FAIL: packet %u: checksum status \"%s\"\n", lines, line);
				goto out;
			}
			good += strchr(line, '1') != NULL;
		}
		if (lines != expect || good != expect) {
			fprintf(stderr, "FAIL: %u packets, %u checked good; %u written\n", lines, good,
				expect);
			goto out;
		}
	}
	/* The TCP stream, reassembled by tshark, is the payload that went in. */
	snprintf(cmd, sizeof(cmd), "tshark -r %s/out.pcap -q -z follow,tcp,raw,0 2>/dev/null", dir);
	res = malloc(reslen);
	if (res == NULL || run(cmd, res, reslen) != 0) {
		fprintf(stderr, "FAIL: %s\n", cmd);
		free(res);
		goto out;
	}
	{
		uint32_t got = 0;
		char *save, *line;
		int in = 0;

		for (line = strtok_r(res, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
			if (strncmp(line, "Node 1:", 7) == 0) {
				in = 1;
				continue;
			}
			if (!in || line[0] == '=')
				continue;
			for (char *c = line; c[0] && c[1]; c += 2) {
				unsigned v;

				if (sscanf(c, "%2x", &v) != 1 || got >= stream_len || stream[got] != v) {
					fprintf(stderr, "FAIL: stream differs at byte %u\n", got);
					free(res);
					goto out;
				}
				got++;
			}
		}
		free(res);
		if (got != stream_len) {
			fprintf(stderr, "FAIL: tshark reassembled %u of %u stream bytes\n", got,
				stream_len);
			goto out;
		}
		printf("tshark: %u packets, every checksum good; TCP stream of %u bytes reassembled\n",
		       expect, stream_len);
	}
	rc = 0;
out:
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		rc = 1;
	{
		struct tide_pool_audit a;

		if (tide_pool_audit(pool, &a) < 0 || a.free != a.n) {
			fprintf(stderr, "FAIL: pool not full\n");
			rc = 1;
		}
	}
	tide_pool_free(pool);
	return rc;
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ip_known_answer),
		cmocka_unit_test(test_cksum_fill_variants),
		cmocka_unit_test(test_udp_zero),
		cmocka_unit_test(test_verify_unknown),
		cmocka_unit_test(test_parse_bounds),
		cmocka_unit_test(test_cksum_fill_refused),
		cmocka_unit_test(test_long_chain),
		cmocka_unit_test(test_segment_known),
		cmocka_unit_test(test_segment_refused),
		cmocka_unit_test(test_segment_shared_input),
		cmocka_unit_test(test_segment_random),
		cmocka_unit_test(test_vnet_tso_both_ways),
		cmocka_unit_test(test_vnet_csum),
		cmocka_unit_test(test_vnet_hostile),
		cmocka_unit_test(test_vnet_from_refused),
		cmocka_unit_test(test_port_capa),
	};

	if (argc > 1 && strcmp(argv[1], "tshark") == 0)
		return tshark_main();
	return cmocka_run_group_tests(tests, setup, teardown);
}
