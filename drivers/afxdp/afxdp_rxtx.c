/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * AF_XDP fast path. Rx turns descriptors into mbufs in place (the address gives the frame,
 * the frame starts with the mbuf header); Tx sends UMEM mbufs in place and copies others;
 * Tx completion arrives as a count through the engine, and the completed frames go straight
 * to a fill ring (recycle) or back to the pool in bulk.
 */
#include <errno.h>
#include <stddef.h>
#include <sys/socket.h>

#include "inline.h"
#include "afxdp.h"

#define AFXDP_BULK 64

/* The Rx burst writes pool and next with one 16-byte store. */
_Static_assert(offsetof(struct tide_mbuf, pool) % 16 == 0 &&
		       offsetof(struct tide_mbuf, next) == offsetof(struct tide_mbuf, pool) + 8,
	       "pool and next share one aligned 16 bytes");

/* ---- Rx ---- */

void afxdp_rx_refill(struct afxdp_rxq *q)
{
	struct tide_mbuf *m[AFXDP_BULK];
	/* What the queue may hold beyond what it holds: always room in the fill ring (twice
	 * as deep), and no read of the kernel's index. */
	uint32_t room = afxdp_rx_room(q), idx = 0;

	while (room >= q->batch) {
		if (tide_pool_get_bulk(q->pool, (void **)m, q->batch) < 0) {
			tide_stat_add(&q->pub.stats.nombuf, 1);
			break;
		}
		if (tide_unlikely(xsk_ring_prod__reserve(&q->fill, q->batch, &idx) != q->batch)) {
			/* Cannot happen while the fill ring is deeper than the room; the
			 * frames go back. */
			tide_pool_put_bulk(q->pool, (void **)m, q->batch);
			break;
		}
		for (uint32_t i = 0; i < q->batch; i++) {
			uint64_t off = tide_pool_offset(q->pool, m[i]);

			*xsk_ring_prod__fill_addr(&q->fill, idx + i) = off;
			q->u.owner[off >> q->u.frame_shift] = 1;
		}
		/* Release store of the producer index inside submit: the kernel sees the
		 * addresses before the index. */
		xsk_ring_prod__submit(&q->fill, q->batch);
		room -= q->batch;
	}
}

uint16_t afxdp_rx_burst(struct tide_rxq *pub, struct tide_mbuf **pkts, uint16_t n)
{
	struct afxdp_rxq *q = (struct afxdp_rxq *)pub;
	const struct afxdp_umem_view *u = &q->u;
	struct tide_mbuf__rx_regs r;
	tide_mbuf__v16 pool_next;
	uint64_t bytes = 0;
	uint32_t idx;
	unsigned got;

	/* Refill first, for the frames the previous burst took: from the paired Tx queue's
	 * completed frames (recycling; it has had a burst's time to complete them), then from
	 * the pool. */
	link_rx_polled(&q->link);
	if (afxdp_rx_room(q) >= q->batch) {
		struct txc *t = txc_link_src(&q->link);

		if (t != NULL) {
			struct afxdp_txq *src = t->drv;

			if (src->u.pool == q->pool)
				afxdp_tx_reap(src, q);
		}
		afxdp_rx_refill(q);
	}
	/* peek: acquire load of the kernel's producer index (pairs with its release). */
	got = xsk_ring_cons__peek(&q->rx, n, &idx);
	if (got == 0) {
		/* Busy polling: every empty poll runs the device's NAPI from this thread (the
		 * socket's SO_BUSY_POLL_BUDGET frames at most), once the socket has a NAPI id
		 * to poll (AFXDP_BUSY_ON). Otherwise no syscall unless the kernel asked for
		 * one (need_wakeup on the fill ring). */
		if (q->busy == AFXDP_BUSY_ON || (q->wakeup && xsk_ring_prod__needs_wakeup(&q->fill)))
			recvfrom(q->fd, NULL, 0, MSG_DONTWAIT, NULL, NULL);
		return 0;
	}
	/* A copy-mode socket learns its NAPI id from the first frame it receives. */
	if (tide_unlikely(q->busy == AFXDP_BUSY_ARMED))
		q->busy = AFXDP_BUSY_ON;
	/* In registers: the stores into the frames below may alias q (-fno-strict-aliasing). */
	r = tide_mbuf__rx_tmpl_load(&q->tmpl);
	pool_next = (tide_mbuf__v16){(long long)(uintptr_t)q->pool, 0};
	for (unsigned i = 0; i < got; i++) {
		const struct xdp_desc *d = xsk_ring_cons__rx_desc(&q->rx, idx + i);
		uint64_t off = d->addr & u->frame_mask;
		struct tide_mbuf *m = (struct tide_mbuf *)(u->base + off);

		/* The whole header is written: the kernel may have used this space as XDP
		 * headroom, and a frame recycled from Tx completion has a stale header. First
		 * half: buf_addr, iova, then pool and next (NULL) in one 16-byte store; second
		 * half: the queue's template with the length and the data offset put in. */
		m->buf_addr = (char *)m + AFXDP_MBUF_HDR;
		m->iova = off + AFXDP_MBUF_HDR;
		*(tide_mbuf__v16 *)(void *)&m->pool = pool_next;
		afxdp_mbuf_rx(m, r, d->len, (uint16_t)(d->addr - off - AFXDP_MBUF_HDR));
		u->owner[off >> u->frame_shift] = 0;
		bytes += d->len;
		pkts[i] = m;
	}
	xsk_ring_cons__release(&q->rx, got);
	tide_stat_burst(&pub->stats, got, bytes);
	return (uint16_t)got;
}

/* ---- Tx completion ---- */

/*
 * Kick the kernel to send what the Tx ring holds, until its consumer index reaches what was
 * produced, at most kick_max times. Copy mode sends at most 32 frames per kick and then
 * says EAGAIN while frames remain: frames moved, so kick again. EAGAIN, EBUSY, ENOBUFS and
 * EINTR with no frame moved is a refusal (the device's queue is busy, the socket's send
 * buffer is full): counted, and the frames wait for the next kick, which the next burst or
 * completion check (tide_txq_done_cleanup) makes. The kernel's other reason to say EAGAIN,
 * a full completion ring, cannot occur: the ring is as deep as the engine, which bounds
 * the frames not yet completed. Other errors are counted as oerrors.
 */
static void tx_kick(struct afxdp_txq *q)
{
	/* Pairs with the kernel's release of the consumer index. */
	uint32_t cons = __atomic_load_n(q->tx.consumer, __ATOMIC_ACQUIRE);

	for (uint32_t k = 0; k < q->kick_max && cons != q->tx.cached_prod; k++) {
		uint32_t before = cons;

		if (q->wakeup && !xsk_ring_prod__needs_wakeup(&q->tx))
			return;
		if (sendto(q->fd, NULL, 0, MSG_DONTWAIT, NULL, 0) < 0) {
			if (errno != EAGAIN && errno != EBUSY && errno != ENOBUFS &&
			    errno != EINTR) {
				tide_stat_add(&q->kick_errors, 1);
				return;
			}
			cons = __atomic_load_n(q->tx.consumer, __ATOMIC_ACQUIRE);
			if (cons == before) {
				tide_stat_add(&q->kick_refused, 1);
				return;
			}
			continue;
		}
		tide_stat_add(&q->kicks, 1);
		cons = __atomic_load_n(q->tx.consumer, __ATOMIC_ACQUIRE);
	}
}

/* Give @n completed frames at comp[idx..] back: to a fill ring when recycling, else to
 * the pool in bulk. Frames sent from this queue were refcnt 1, one segment: no header is
 * read. */
static inline void tx_complete(struct afxdp_txq *q, uint32_t idx, unsigned n,
			       struct afxdp_rxq *rq)
{
	const struct afxdp_umem_view *u = &q->u;
	void *m[AFXDP_BULK];
	unsigned i = 0, nb = 0;

	if (rq != NULL) {
		uint32_t k = afxdp_rx_room(rq), fidx = 0;

		if (k > n)
			k = n;
		/* The fill ring is deeper than the room: the reserve cannot fail, but should
		 * it, the frames go to the pool below. */
		if (k > 0 && xsk_ring_prod__reserve(&rq->fill, k, &fidx) == k) {
			for (; i < k; i++) {
				uint64_t off = *xsk_ring_cons__comp_addr(&q->comp, idx + i) &
					       u->frame_mask;

				*xsk_ring_prod__fill_addr(&rq->fill, fidx + i) = off;
				u->owner[off >> u->frame_shift] = 0;
				rq->u.owner[off >> u->frame_shift] = 1;
			}
			xsk_ring_prod__submit(&rq->fill, k);
			txc_count_recycled(&q->txc, k);
		}
	}
	for (; i < n; i++) {
		uint64_t off = *xsk_ring_cons__comp_addr(&q->comp, idx + i) & u->frame_mask;

		u->owner[off >> u->frame_shift] = 0;
		m[nb++] = u->base + off;
		if (nb == AFXDP_BULK) {
			tide_pool_put_bulk(u->pool, m, nb);
			nb = 0;
		}
	}
	if (nb)
		tide_pool_put_bulk(u->pool, m, nb);
	/* Recycled frames count as released too; the walking engine counts its own. */
	if (q->txc.index_only)
		txc_count_released(&q->txc, n);
}

/* Count-mode completion: the completion ring says how many, in submission order. */
TIDE_ALWAYS_INLINE unsigned tx_advance(struct txc *t)
{
	struct afxdp_txq *q = t->drv;
	uint32_t idx;
	unsigned n;

	tx_kick(q); /* frames a refused kick left in the ring */
	n = xsk_ring_cons__peek(&q->comp, q->comp.size, &idx);
	if (n == 0)
		return 0;
	tx_complete(q, idx, n, NULL); /* recycling is the Rx side's pull (afxdp_tx_reap) */
	xsk_ring_cons__release(&q->comp, n);
	txc_advance_count(t, n);
	return n;
}

void afxdp_tx_reap(struct afxdp_txq *q, struct afxdp_rxq *rq)
{
	uint32_t room = afxdp_rx_room(rq), idx;
	/* Only what the fill ring can take: the rest stays for the Tx side's own reclaim. */
	unsigned n = xsk_ring_cons__peek(&q->comp, room, &idx);

	if (n == 0)
		return;
	tx_complete(q, idx, n, rq);
	xsk_ring_cons__release(&q->comp, n);
	txc_advance_count(&q->txc, n);
}

unsigned afxdp_tx_advance(struct txc *t)
{
	return tx_advance(t);
}

/* ---- Tx ---- */

uint16_t afxdp_tx_burst(struct tide_txq *pub, struct tide_mbuf **pkts, uint16_t n)
{
	struct afxdp_txq *q = (struct afxdp_txq *)pub;
	const struct afxdp_umem_view *u = &q->u;
	struct txc *t = &q->txc;
	struct tide_mbuf *done[AFXDP_BULK];
	unsigned room = txc_make_room(t, n, tx_advance), used = 0, nd = 0, dropped = 0;
	uint64_t bytes = 0;
	uint32_t idx;
	uint16_t i;

	if (n > room)
		n = (uint16_t)room;
	if (n > AFXDP_BULK)
		n = AFXDP_BULK;
	/* The Tx ring has at least as much room as the engine: entries leave it before
	 * their completion arrives. */
	if (n == 0 || xsk_ring_prod__reserve(&q->tx, n, &idx) != n)
		return 0;
	for (i = 0; i < n; i++) {
		struct tide_mbuf *m = pkts[i];
		struct xdp_desc *d = xsk_ring_prod__tx_desc(&q->tx, idx + used);
		uint64_t addr;
		uint32_t len = m->pkt_len;

		if (tide_likely(m->pool == u->pool && m->nb_segs == 1 &&
				tide_mbuf_refcnt_read(m) == 1)) {
			/* In place: the Tx queue owns the mbuf until its frame completes. */
			addr = m->iova + m->data_off;
		} else {
			struct tide_mbuf *f;

			if (tide_unlikely(len > q->copy_room)) {
				done[nd++] = m;
				dropped++;
				continue;
			}
			if (tide_pool_get(u->pool, (void **)&f) < 0)
				break;
			addr = tide_pool_offset(u->pool, f) + q->copy_off;
			tide_mbuf_read(m, 0, len, u->base + addr);
			/* Freed after the loop, in bulk (seed 003). */
			done[nd++] = m;
			tide_stat_add(&q->copies, 1);
		}
		d->addr = addr;
		d->len = len;
		d->options = 0;
		u->owner[addr >> u->frame_shift] = 1;
		bytes += len;
		used++;
	}
	/* Give back the descriptors reserved for dropped or unsent packets. */
	q->tx.cached_prod -= n - used;
	if (used) {
		xsk_ring_prod__submit(&q->tx, used);
		txc_commit(t, used);
		tx_kick(q);
		tide_stat_burst(&pub->stats, used, bytes);
	}
	if (nd)
		tide_mbuf_free_bulk(done, nd);
	if (tide_unlikely(dropped)) {
		txc_count_released(t, dropped);
		tide_stat_add(&pub->stats.errors, dropped);
	}
	return i;
}
