/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include <tide/mbuf.h>

#include "inline.h"
#include "log.h"

struct init_arg {
	unsigned headroom;
};

static void mbuf_init(struct tide_pool *p, void *obj, unsigned idx, void *arg)
{
	const struct init_arg *a = arg;
	struct tide_mbuf *m = obj;

	(void)idx;
	memset(m, 0, sizeof(*m));
	m->buf_addr = (char *)obj + sizeof(*m);
	m->iova = tide_pool_offset(p, obj) + sizeof(*m);
	m->pool = p;
	m->buf_len = (uint16_t)(p->elt_size - sizeof(*m));
	m->refcnt = 1;
	m->nb_segs = 1;
	m->port = TIDE_MBUF_PORT_NONE;
	m->data_off = (uint16_t)a->headroom;
}

int tide_pktpool_create(const char *name, unsigned n, unsigned cache, unsigned data_room,
			const struct tide_pktpool_opts *opts, struct tide_pool **out)
{
	struct tide_pktpool_opts o = {0};
	struct init_arg arg;
	struct tide_pool_opts po = {.sz = sizeof(po)};
	struct tide_pool *p;
	unsigned elt;
	int rc;

	if (opts != NULL) {
		if (opts->sz == 0 || opts->sz > sizeof(o)) {
			TIDE_LOG_ERR_("mbuf", "%s: opts.sz %zu is not a known size", name, opts->sz);
			return -EINVAL;
		}
		memcpy(&o, opts, opts->sz);
	}
	arg.headroom = opts != NULL && opts->sz > offsetof(struct tide_pktpool_opts, headroom) &&
				       o.headroom
			       ? o.headroom
			       : TIDE_MBUF_HEADROOM;
	if (data_room == 0)
		data_room = TIDE_MBUF_DATAROOM;
	elt = (unsigned)sizeof(struct tide_mbuf) + arg.headroom + data_room;
	if (elt > 65535u) {
		TIDE_LOG_ERR_("mbuf", "%s: headroom %u + data room %u is too large (max %zu)",
			      name, arg.headroom, data_room, 65535 - sizeof(struct tide_mbuf));
		return -EINVAL;
	}
	po.flags = o.pool_flags;
	po.align_pow2 = o.elt_pow2;
	po.obj_init = mbuf_init;
	po.obj_init_arg = &arg;
	rc = tide_pool_create(name, n, elt, cache, &po, &p);
	if (rc < 0)
		return rc;
	if (p->elt_size > 65535u + sizeof(struct tide_mbuf)) {
		TIDE_LOG_ERR_("mbuf", "%s: element size %u too large for a 16-bit buffer length",
			      name, p->elt_size);
		tide_pool_free(p);
		return -EINVAL;
	}
	p->mbuf_headroom = arg.headroom;
	*out = p;
	return 0;
}

unsigned tide_pktpool_headroom(const struct tide_pool *p)
{
	return p->mbuf_headroom;
}

unsigned tide_pktpool_data_room(const struct tide_pool *p)
{
	return p->elt_size - (unsigned)sizeof(struct tide_mbuf) - p->mbuf_headroom;
}

#define FREE_BATCH 64

/*
 * The burst-level fast-free check: every entry is non-NULL, from the first one's pool and in
 * the pool state already (refcnt 1, one segment: one load of the word that holds both).
 * The loop only ORs differences, so the common case costs a few instructions per packet and
 * one predictable branch at the end.
 */
TIDE_ALWAYS_INLINE uintptr_t
not_in_pool_state(const struct tide_mbuf *m, const struct tide_pool *pool)
{
	return ((uintptr_t)m->pool ^ (uintptr_t)pool) |
	       (tide_mbuf__refcnt_segs(m) ^ TIDE_MBUF_REFCNT_SEGS_ONE);
}

static bool burst_in_pool_state(struct tide_mbuf *const *pkts, unsigned n)
{
	struct tide_mbuf *const *p = pkts, *const *end4 = pkts + (n & ~3u), *const *end = pkts + n;
	const struct tide_pool *pool;
	uintptr_t diff = 0;

	if (pkts[0] == NULL)
		return false;
	pool = pkts[0]->pool;
	/* Four at a time: the loop's own compare and branch are paid once per four packets. */
	for (; p != end4; p += 4) {
		const struct tide_mbuf *a = p[0], *b = p[1], *c = p[2], *d = p[3];

		if (tide_unlikely(a == NULL || b == NULL || c == NULL || d == NULL))
			return false;
		diff |= not_in_pool_state(a, pool) | not_in_pool_state(b, pool) |
			not_in_pool_state(c, pool) | not_in_pool_state(d, pool);
	}
	for (; p != end; p++) {
		if (tide_unlikely(*p == NULL))
			return false;
		diff |= not_in_pool_state(*p, pool);
	}
	return diff == 0;
}

void tide_mbuf_free_bulk(struct tide_mbuf **pkts, unsigned n)
{
	void *batch[FREE_BATCH];
	struct tide_pool *pool = NULL;
	unsigned nb = 0;

	if (n == 0)
		return;
	/* Nothing to reset and one pool: the burst goes back as it is, in one put. */
	if (burst_in_pool_state(pkts, n)) {
		tide_pool_put_bulk(pkts[0]->pool, (void *const *)pkts, n);
		return;
	}
	for (unsigned i = 0; i < n; i++) {
		struct tide_mbuf *m = pkts[i];

		while (m != NULL) {
			struct tide_mbuf *next = m->next;

			if (tide_mbuf_prefree_seg(m) != NULL) {
				if (nb == FREE_BATCH || (nb > 0 && m->pool != pool)) {
					tide_pool_put_bulk(pool, batch, nb);
					nb = 0;
				}
				pool = m->pool;
				batch[nb++] = m;
			}
			m = next;
		}
	}
	if (nb)
		tide_pool_put_bulk(pool, batch, nb);
}

int tide_mbuf_chain(struct tide_mbuf *head, struct tide_mbuf *tail)
{
	if ((unsigned)head->nb_segs + tail->nb_segs > UINT16_MAX ||
	    (uint64_t)head->pkt_len + tail->pkt_len > UINT32_MAX)
		return -EOVERFLOW;
	tide_mbuf_last_seg(head)->next = tail;
	head->nb_segs = (uint16_t)(head->nb_segs + tail->nb_segs);
	head->pkt_len += tail->pkt_len;
	/* tail is now an inner segment: its packet fields no longer apply. */
	tail->pkt_len = tail->data_len;
	tail->nb_segs = 1;
	return 0;
}

int tide_mbuf_linearize(struct tide_mbuf *m)
{
	struct tide_mbuf *seg, *next;
	char *dst;

	if (m->next == NULL)
		return 0;
	if (m->pkt_len > (uint32_t)m->buf_len - m->data_off)
		return -ENOSPC;
	dst = tide_mbuf_mtod_offset(m, char *, m->data_len);
	for (seg = m->next; seg != NULL; seg = next) {
		next = seg->next;
		memcpy(dst, tide_mbuf_mtod(seg, char *), seg->data_len);
		dst += seg->data_len;
		m->data_len = (uint16_t)(m->data_len + seg->data_len);
		seg->next = NULL;
		seg->nb_segs = 1;
		tide_mbuf_free_seg(seg);
	}
	m->next = NULL;
	m->nb_segs = 1;
	return 0;
}

int tide_mbuf_read(const struct tide_mbuf *m, uint32_t off, uint32_t len, void *dst)
{
	char *out = dst;

	if ((uint64_t)off + len > m->pkt_len)
		return -EINVAL;
	for (; m != NULL && len > 0; m = m->next) {
		if (off >= m->data_len) {
			off -= m->data_len;
			continue;
		}
		uint32_t take = m->data_len - off < len ? m->data_len - off : len;

		memcpy(out, tide_mbuf_mtod_offset(m, const char *, off), take);
		out += take;
		len -= take;
		off = 0;
	}
	return len == 0 ? 0 : -EINVAL;
}
