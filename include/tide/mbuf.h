/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tide/mbuf.h - packet buffers.
 *
 * An mbuf is one pool element laid out as
 *
 *     | header (64 B, one cache line) | headroom | data room |
 *     ^ struct tide_mbuf             ^ buf_addr
 *
 * A packet may be a chain of mbufs (next, nb_segs on the first). The reference count allows
 * one buffer to be sent to several places; the buffer goes back to its pool when the last
 * reference is dropped.
 *
 * Contract for buffers sitting in a pool: refcnt == 1, next == NULL, nb_segs == 1. Frees keep
 * it, so a free of a single-segment mbuf with refcnt 1 is just a pool put, and a driver that
 * knows every mbuf of a queue is like that (the "fast free" contract) may put them back in
 * bulk without reading their headers.
 *
 * Inline calls do no argument checks.
 */
#ifndef TIDE_MBUF_H
#define TIDE_MBUF_H

#include <string.h>
#include <tide/common.h>
#include <tide/pool.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TIDE_MBUF_HEADROOM 128  /* default headroom */
#define TIDE_MBUF_DATAROOM 2048 /* default data room */
#define TIDE_MBUF_PORT_NONE 0xffff

/*
 * Offload flags (ol_flags). A received packet carries RX flags (what the driver or
 * tide_offload_cksum_verify() found); a packet to send carries TX flags (what the
 * application asks the driver, or tide/offload.h's software fallback, to do) and the
 * header lengths those need. A fresh mbuf has no flags and zero lengths; a received one
 * has no TX flags unless its driver turns a peer's requests into them (virtio).
 */
#define TIDE_MBUF_F_RX_RSS_HASH (1u << 0) /* rss_hash is valid */

/* Rx IPv4 header checksum status: a 2-bit field. UNKNOWN: nobody checked (or not IPv4);
 * BAD / GOOD: checked; NONE: the header's checksum field holds no final value but the data
 * is known intact (e.g. a virtio peer's partial checksum). */
#define TIDE_MBUF_F_RX_IP_CKSUM_MASK (3u << 1)
#define TIDE_MBUF_F_RX_IP_CKSUM_UNKNOWN 0u
#define TIDE_MBUF_F_RX_IP_CKSUM_BAD (1u << 1)
#define TIDE_MBUF_F_RX_IP_CKSUM_GOOD (2u << 1)
#define TIDE_MBUF_F_RX_IP_CKSUM_NONE (3u << 1)
#define TIDE_MBUF_F_RX_L3_CKSUM_BAD TIDE_MBUF_F_RX_IP_CKSUM_BAD /* older name */

/* Rx TCP/UDP checksum status: the same four values for the L4 checksum. */
#define TIDE_MBUF_F_RX_L4_CKSUM_MASK (3u << 3)
#define TIDE_MBUF_F_RX_L4_CKSUM_UNKNOWN 0u
#define TIDE_MBUF_F_RX_L4_CKSUM_BAD (1u << 3)
#define TIDE_MBUF_F_RX_L4_CKSUM_GOOD (2u << 3)
#define TIDE_MBUF_F_RX_L4_CKSUM_NONE (3u << 3)

/*
 * Tx requests. Each needs l2_len and l3_len (and l4_len for a segmentation) of the first
 * segment, which must hold those headers. The checksum fields may hold anything: whoever
 * honours a request writes the whole checksum.
 */
#define TIDE_MBUF_F_TX_IPV4 (1u << 8)      /* the L3 header is IPv4 */
#define TIDE_MBUF_F_TX_IPV6 (1u << 9)      /* the L3 header is IPv6 */
#define TIDE_MBUF_F_TX_IP_CKSUM (1u << 10) /* fill the IPv4 header checksum */
#define TIDE_MBUF_F_TX_L4_MASK (3u << 11)  /* a 2-bit field: */
#define TIDE_MBUF_F_TX_L4_NO_CKSUM 0u
#define TIDE_MBUF_F_TX_TCP_CKSUM (1u << 11) /* fill the TCP checksum */
#define TIDE_MBUF_F_TX_UDP_CKSUM (2u << 11) /* fill the UDP checksum */
#define TIDE_MBUF_F_TX_TCP_SEG (1u << 13)  /* TSO: cut the TCP payload into tso_segsz pieces,
					      every checksum of every piece filled */
#define TIDE_MBUF_F_TX_UDP_SEG (1u << 14)  /* UDP fragmentation offload (tso_segsz): carried
					      for virtio peers, no software fallback */

struct tide_mbuf {
	void *buf_addr;          /* start of headroom */
	uint64_t iova;           /* byte offset of buf_addr in the pool's area */
	struct tide_pool *pool;  /* where this buffer goes back to */
	struct tide_mbuf *next;  /* next segment, or NULL */
	uint32_t pkt_len;        /* whole packet (first segment only) */
	uint16_t data_len;       /* bytes in this segment */
	uint16_t data_off;       /* data starts at buf_addr + data_off */
	uint16_t refcnt;         /* atomically updated when shared */
	uint16_t nb_segs;        /* segments in the chain (first segment only) */
	uint16_t buf_len;        /* headroom + data room */
	uint16_t port;           /* input port, or TIDE_MBUF_PORT_NONE */
	uint32_t ol_flags;       /* TIDE_MBUF_F_* */
	uint16_t tso_segsz;      /* TIDE_MBUF_F_TX_*_SEG: payload bytes per output packet */
	uint16_t l3_len;         /* Tx requests: L3 header length (IPv6: with its extensions) */
	uint32_t rss_hash;
	uint8_t l2_len;          /* Tx requests: L2 header length (with VLAN tags) */
	uint8_t l4_len;          /* TIDE_MBUF_F_TX_TCP_SEG: TCP header length (with options) */
	uint16_t packet_type;    /* free for drivers and applications */
};

/* refcnt and nb_segs share one aligned 32-bit word: the fast-free contract (both 1) is
 * checked with one load (src/txc.h). rss_hash stays at byte 56, where the drivers' Rx
 * templates put it as one 32-bit vector lane; the Tx request fields fill the rest of the
 * line (docs/design/decisions.md, "Offload fields"). */
#ifdef __cplusplus
static_assert(sizeof(struct tide_mbuf) == 64, "mbuf header is one cache line");
static_assert(offsetof(struct tide_mbuf, refcnt) % 4 == 0, "refcnt word aligned");
static_assert(offsetof(struct tide_mbuf, nb_segs) == offsetof(struct tide_mbuf, refcnt) + 2,
	      "nb_segs follows refcnt");
static_assert(offsetof(struct tide_mbuf, rss_hash) == 56, "rss_hash where the Rx templates put it");
#else
_Static_assert(sizeof(struct tide_mbuf) == 64, "mbuf header is one cache line");
_Static_assert(offsetof(struct tide_mbuf, refcnt) % 4 == 0, "refcnt word aligned");
_Static_assert(offsetof(struct tide_mbuf, nb_segs) == offsetof(struct tide_mbuf, refcnt) + 2,
	       "nb_segs follows refcnt");
_Static_assert(offsetof(struct tide_mbuf, rss_hash) == 56, "rss_hash where the Rx templates put it");
#endif

/*
 * The second half of the header, pkt_len to packet_type (32 bytes), as a receive path writes
 * it: a driver fills one of these at queue setup (tide_mbuf__rx_tmpl_init) and copies it
 * into every fresh mbuf with two 16-byte stores instead of seven narrow ones. Internal to
 * the drivers.
 */
struct tide_mbuf__rx_tmpl {
	uint32_t pkt_len;
	uint16_t data_len, data_off, refcnt, nb_segs, buf_len, port;
	uint32_t ol_flags;
	uint16_t tso_segsz, l3_len;
	uint32_t rss_hash;
	uint8_t l2_len, l4_len;
	uint16_t packet_type;
} __attribute__((aligned(16)));

#define TIDE_MBUF__RX_TMPL_OFF offsetof(struct tide_mbuf, pkt_len)
#ifdef __cplusplus
static_assert(sizeof(struct tide_mbuf__rx_tmpl) == 64 - TIDE_MBUF__RX_TMPL_OFF, "template size");
static_assert(TIDE_MBUF__RX_TMPL_OFF % 16 == 0, "template half is 16-byte aligned");
static_assert(offsetof(struct tide_mbuf, packet_type) - TIDE_MBUF__RX_TMPL_OFF ==
		      offsetof(struct tide_mbuf__rx_tmpl, packet_type), "template layout");
#else
_Static_assert(sizeof(struct tide_mbuf__rx_tmpl) == 64 - TIDE_MBUF__RX_TMPL_OFF, "template size");
_Static_assert(TIDE_MBUF__RX_TMPL_OFF % 16 == 0, "template half is 16-byte aligned");
_Static_assert(offsetof(struct tide_mbuf, packet_type) - TIDE_MBUF__RX_TMPL_OFF ==
		       offsetof(struct tide_mbuf__rx_tmpl, packet_type), "template layout");
#endif

/*
 * The template as two 16-byte values a driver holds in registers across its Rx loop (GCC
 * and clang vector types: one vector store each on any target that has them).
 */
typedef long long tide_mbuf__v16 __attribute__((vector_size(16), may_alias));

struct tide_mbuf__rx_regs {
	tide_mbuf__v16 lo, hi;
};

/*
 * A fresh single-segment packet of @len bytes from @p, received on @port: the pool state
 * (refcnt 1, one segment, the pool's buffer length) with the pool's headroom, no offloads.
 */
static inline void tide_mbuf__rx_tmpl_init(struct tide_mbuf__rx_tmpl *t, const struct tide_pool *p,
					   uint16_t port, uint16_t len)
{
	memset(t, 0, sizeof(*t));
	t->pkt_len = len;
	t->data_len = len;
	t->data_off = (uint16_t)p->mbuf_headroom;
	t->refcnt = 1;
	t->nb_segs = 1;
	t->buf_len = (uint16_t)(p->elt_size - sizeof(struct tide_mbuf));
	t->port = port;
}

static inline struct tide_mbuf__rx_regs tide_mbuf__rx_tmpl_load(const struct tide_mbuf__rx_tmpl *t)
{
	const tide_mbuf__v16 *v = (const tide_mbuf__v16 *)(const void *)t;
	struct tide_mbuf__rx_regs r = {v[0], v[1]};

	return r;
}

/* Write the template into @m (which must be fresh from the template's pool). */
static inline void tide_mbuf__rx_tmpl_write(struct tide_mbuf *m, struct tide_mbuf__rx_regs r)
{
	tide_mbuf__v16 *d = (tide_mbuf__v16 *)(void *)((char *)m + TIDE_MBUF__RX_TMPL_OFF);

	d[0] = r.lo;
	d[1] = r.hi;
}

/* refcnt and nb_segs read as one word (pinned together above); the pool state has both 1.
 * Internal to the fast paths (tide_mbuf_free_bulk, the Tx release). */
#define TIDE_MBUF_REFCNT_SEGS_ONE (1u | 1u << 16)

static inline uint32_t tide_mbuf__refcnt_segs(const struct tide_mbuf *m)
{
	return __atomic_load_n((const uint32_t *)(const void *)&m->refcnt, __ATOMIC_RELAXED);
}

/* The start of @m's buffer (its buf_addr) without reading its header: every packet pool
 * lays the buffer out right after the header (above). For a driver that posts fresh mbufs
 * to a device: their header lines may be cold, and the address then costs no load miss.
 * Internal to the drivers. */
static inline void *tide_mbuf__buf_of(const struct tide_mbuf *m)
{
	return (char *)(uintptr_t)m + sizeof(*m);
}

/* The same for @m's iova, @m an mbuf of pool @p: its buffer's byte offset in the pool's
 * area, from the two addresses alone. */
static inline uint64_t tide_mbuf__iova_of(const struct tide_pool *p, const struct tide_mbuf *m)
{
	return tide_pool_offset(p, m) + sizeof(*m);
}

/* Optional settings of tide_pktpool_create(); set sz = sizeof(struct tide_pktpool_opts). */
struct tide_pktpool_opts {
	size_t sz;
	unsigned pool_flags;  /* TIDE_POOL_F_* */
	unsigned headroom;    /* default TIDE_MBUF_HEADROOM */
	unsigned elt_pow2;    /* non-zero: elements are a power of two in size and aligned to
				 it (AF_XDP aligned chunks); data room grows to fill it */
};

/*
 * Create a pool of @n packet buffers with @data_room bytes of data room each (0 means
 * TIDE_MBUF_DATAROOM) and per-thread caches of @cache objects. Every mbuf starts in the
 * pool state (see above) with buf_addr, iova, pool and buf_len set.
 * Returns 0 and the pool in *@out, or -EINVAL (logged) / -ENOMEM.
 */
TIDE_EXPORT int tide_pktpool_create(const char *name, unsigned n, unsigned cache,
				    unsigned data_room, const struct tide_pktpool_opts *opts,
				    struct tide_pool **out);

/* Headroom configured for mbufs of @p (what tide_mbuf_reset() restores). */
TIDE_EXPORT unsigned tide_pktpool_headroom(const struct tide_pool *p);

/* Data room of each mbuf of @p (buf_len - headroom). */
TIDE_EXPORT unsigned tide_pktpool_data_room(const struct tide_pool *p);

#define tide_mbuf_mtod(m, t) ((t)((char *)(m)->buf_addr + (m)->data_off))
#define tide_mbuf_mtod_offset(m, t, o) ((t)((char *)(m)->buf_addr + (m)->data_off + (o)))

static inline uint16_t tide_mbuf_headroom(const struct tide_mbuf *m)
{
	return m->data_off;
}

static inline uint16_t tide_mbuf_tailroom(const struct tide_mbuf *m)
{
	return (uint16_t)(m->buf_len - m->data_off - m->data_len);
}

/* Reset a single-segment mbuf to an empty packet with its pool's headroom. */
static inline void tide_mbuf_reset(struct tide_mbuf *m)
{
	uint16_t headroom = (uint16_t)m->pool->mbuf_headroom;

	m->next = NULL;
	m->pkt_len = 0;
	m->data_len = 0;
	m->data_off = headroom;
	m->nb_segs = 1;
	m->port = TIDE_MBUF_PORT_NONE;
	m->ol_flags = 0;
	m->tso_segsz = 0;
	m->l3_len = 0;
	m->rss_hash = 0;
	m->l2_len = 0;
	m->l4_len = 0;
	m->packet_type = 0;
}

/* ---- reference counts ---- */

/*
 * The reference count's address for the atomics below. GCC 12 sometimes follows a caller's
 * pointer into a path where it believes the mbuf is a zero-sized object (a NULL check it
 * cannot see through, a failed allocation) and reports -Wstringop-overflow on the atomic
 * (at -O3 in release builds, inlined into ordinary callers). The empty asm only tells the
 * compiler the pointer is opaque; it emits no instruction.
 */
static inline uint16_t *tide_mbuf__refcnt_ptr(const struct tide_mbuf *m)
{
	struct tide_mbuf *o = (struct tide_mbuf *)(uintptr_t)m;

	__asm__("" : "+r"(o)); /* the mbuf, not the field: the offset stays in the load */
	return &o->refcnt;
}

static inline uint16_t tide_mbuf_refcnt_read(const struct tide_mbuf *m)
{
	return __atomic_load_n(tide_mbuf__refcnt_ptr(m), __ATOMIC_RELAXED);
}

static inline void tide_mbuf_refcnt_set(struct tide_mbuf *m, uint16_t v)
{
	__atomic_store_n(tide_mbuf__refcnt_ptr(m), v, __ATOMIC_RELAXED);
}

/*
 * Add @delta (may be negative) to the reference count; returns the new value. When the
 * count is 1 the caller is the only owner and no atomic is needed.
 */
static inline uint16_t tide_mbuf_refcnt_update(struct tide_mbuf *m, int16_t delta)
{
	if (tide_likely(tide_mbuf_refcnt_read(m) == 1) && delta == -1) {
		/* Sole owner: nobody else can observe the count. */
		tide_mbuf_refcnt_set(m, 0);
		return 0;
	}
	/* acq_rel: the last dropper must see every other owner's writes before reuse. */
	return (uint16_t)__atomic_add_fetch(tide_mbuf__refcnt_ptr(m), delta, __ATOMIC_ACQ_REL);
}

/*
 * Drop one reference to segment @m. Returns @m when it must go back to its pool (the
 * caller puts it), NULL when other references remain. Restores the pool state.
 */
static inline struct tide_mbuf *tide_mbuf_prefree_seg(struct tide_mbuf *m)
{
	if (tide_likely(tide_mbuf_refcnt_read(m) == 1)) {
		if (m->next != NULL) {
			m->next = NULL;
			m->nb_segs = 1;
		}
		return m;
	}
	if (tide_mbuf_refcnt_update(m, -1) == 0) {
		tide_mbuf_refcnt_set(m, 1);
		m->next = NULL;
		m->nb_segs = 1;
		return m;
	}
	return NULL;
}

/* Free one segment (not the rest of its chain). */
static inline void tide_mbuf_free_seg(struct tide_mbuf *m)
{
	m = tide_mbuf_prefree_seg(m);
	if (m != NULL)
		tide_pool_put(m->pool, m);
}

/* Free a whole packet (every segment), honouring reference counts. NULL is allowed. */
static inline void tide_mbuf_free(struct tide_mbuf *m)
{
	while (m != NULL) {
		struct tide_mbuf *next = m->next;

		tide_mbuf_free_seg(m);
		m = next;
	}
}

/*
 * Free @n packets (whole chains, refcnt-aware). Consecutive buffers of the same pool go back
 * in one bulk put. NULL entries are skipped. The common case costs least: when every packet
 * is from one pool, has one reference and one segment (what a receive burst is), the burst is
 * checked in one pass and put back whole, without writing any header.
 */
TIDE_EXPORT void tide_mbuf_free_bulk(struct tide_mbuf **pkts, unsigned n);

/* ---- allocation ---- */

/* Allocate one mbuf reset to an empty packet, or NULL when the pool is empty. */
static inline struct tide_mbuf *tide_mbuf_alloc(struct tide_pool *p)
{
	struct tide_mbuf *m;

	if (tide_pool_get(p, (void **)&m) < 0)
		return NULL;
	tide_mbuf_reset(m);
	return m;
}

/* Allocate @n mbufs (all or none), each reset. Returns 0 or -ENOENT. */
static inline int tide_mbuf_alloc_bulk(struct tide_pool *p, struct tide_mbuf **m, unsigned n)
{
	if (tide_pool_get_bulk(p, (void **)m, n) < 0)
		return -ENOENT;
	for (unsigned i = 0; i < n; i++)
		tide_mbuf_reset(m[i]);
	return 0;
}

/* ---- data helpers ---- */

/* Grow the packet at the front by @len. Returns the new start, or NULL (headroom too small). */
static inline char *tide_mbuf_prepend(struct tide_mbuf *m, uint16_t len)
{
	if (len > m->data_off)
		return NULL;
	m->data_off = (uint16_t)(m->data_off - len);
	m->data_len = (uint16_t)(m->data_len + len);
	m->pkt_len += len;
	return tide_mbuf_mtod(m, char *);
}

static inline struct tide_mbuf *tide_mbuf_last_seg(struct tide_mbuf *m)
{
	while (m->next != NULL)
		m = m->next;
	return m;
}

/* Grow the packet at the end (last segment) by @len. Returns the old end, or NULL. */
static inline char *tide_mbuf_append(struct tide_mbuf *m, uint16_t len)
{
	struct tide_mbuf *last = tide_mbuf_last_seg(m);
	char *tail;

	if (len > tide_mbuf_tailroom(last))
		return NULL;
	tail = tide_mbuf_mtod_offset(last, char *, last->data_len);
	last->data_len = (uint16_t)(last->data_len + len);
	m->pkt_len += len;
	return tail;
}

/* Remove @len bytes from the front (first segment). Returns the new start, or NULL. */
static inline char *tide_mbuf_adj(struct tide_mbuf *m, uint16_t len)
{
	if (len > m->data_len)
		return NULL;
	m->data_off = (uint16_t)(m->data_off + len);
	m->data_len = (uint16_t)(m->data_len - len);
	m->pkt_len -= len;
	return tide_mbuf_mtod(m, char *);
}

/* Remove @len bytes from the end (last segment). Returns 0 or -EINVAL. */
static inline int tide_mbuf_trim(struct tide_mbuf *m, uint16_t len)
{
	struct tide_mbuf *last = tide_mbuf_last_seg(m);

	if (len > last->data_len)
		return -EINVAL;
	last->data_len = (uint16_t)(last->data_len - len);
	m->pkt_len -= len;
	return 0;
}

/* Is the packet one contiguous segment? */
static inline int tide_mbuf_is_contiguous(const struct tide_mbuf *m)
{
	return m->nb_segs == 1;
}

/*
 * Append chain @tail to packet @head. Returns 0, or -EOVERFLOW when the segment count or
 * packet length would overflow (nothing changed).
 */
TIDE_EXPORT int tide_mbuf_chain(struct tide_mbuf *head, struct tide_mbuf *tail);

/*
 * Copy a chained packet into its first segment and free the other segments. Returns 0, or
 * -ENOSPC when the packet does not fit in the first segment's room (nothing changed).
 */
TIDE_EXPORT int tide_mbuf_linearize(struct tide_mbuf *m);

/*
 * Copy @len bytes starting at packet offset @off into @dst, across segments. Returns 0 or
 * -EINVAL when the range is outside the packet.
 */
TIDE_EXPORT int tide_mbuf_read(const struct tide_mbuf *m, uint32_t off, uint32_t len, void *dst);

#ifdef __cplusplus
}
#endif

#endif /* TIDE_MBUF_H */
