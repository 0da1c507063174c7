/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * memif copy-mode data path, both roles. Packets are copied between mbufs and the ring's
 * buffers; no mbuf is ever visible to the peer.
 *
 *   client Tx -> C2S ring: fill [head, ...) from our own buffers, publish head; completion
 *                          is the server's tail moving (count mode, O(1): slots hold nothing)
 *   client Rx <- S2C ring: read [cons, tail), copy out, re-post the same slots (head)
 *   server Rx <- C2S ring: read [tail, head) wherever the descriptors point, publish tail
 *   server Tx -> S2C ring: write into the buffers posted in [tail, head), publish tail
 *
 * Index pairs (acquire load <- release store by the other side):
 *   [C2S-head] server's load of C2S head  <- client's memif_publish() of C2S head
 *   [C2S-tail] client's load of C2S tail  <- server's memif_publish() of C2S tail
 *   [S2C-head] server's load of S2C head  <- client's memif_publish() of S2C head
 *   [S2C-tail] client's load of S2C tail  <- server's memif_publish() of S2C tail
 * Each side keeps a cached copy of the other side's index (`peer`), checks how far a new
 * value moved against what is legal, and only then trusts the slots it covers. Every
 * descriptor is copied to a local (memif_desc_fetch) before it is checked and used. The
 * client never reads region or offset back from a descriptor: in copy mode the buffers of
 * a slot are fixed, and it uses its own record of them.
 *
 * Tx frees the burst after the copy loop in bulk (seed 003), or, with txfree_loop=yes,
 * each packet right after its copy (the comparison the seed measured).
 *
 * On a CPU with PREFETCHW, Tx asks for the lines of the slots it is about to fill ahead of
 * the copy (copy_claim): the peer's core read them on the last lap, and without the claim
 * each store waits for its line in turn (docs/perf/memif-two-process.md, section 7).
 */
#include <string.h>

#include "inline.h"
#include "copy.h"
#include "memif.h"

/* How many frames ahead of its copy a client's Tx claims a slot. One frame ahead is too
 * close for small frames (a 64-byte frame is copied in far less than a line transfer takes
 * between dies); four covers them and changes nothing at 1518 bytes (measured: section 7
 * of docs/perf/memif-two-process.md). */
#define MEMIF_CLAIM_AHEAD 4

/* Rx asks for every line of a frame ahead of its copy when the frame is longer than this;
 * for shorter ones only its first line. Far, with the frames streamed to memory, the
 * whole-frame prefetch of the next frame took tide-fwd's pair from 8.3-9.0 to 12.5-13.2
 * Mpps at 1518 bytes and from 11.6-11.8 to 15.8-16.2 at 1024; at 256 bytes, where the
 * generator is the bound, it cost 3-5%, and at 512 nothing clear either way. Asking after a
 * long frame for the one after it too took 1518 bytes from 9.0-11.9 to 11.0-14.5 Mpps (9
 * pairs of 11 up 20-38%) and 1024 from 15.7-16.2 to 18.2-18.9, both directions alike
 * (docs/perf/memif-two-process.md, sections 10 and 11). */
#define MEMIF_RX_AHEAD_MIN 512

/*
 * Receive one packet of @nd descriptors into @m (reset, empty). @src[k] is where the bytes
 * of descriptor k are. Returns 0, or -1 (pool empty: @m is whole again, only its first
 * segment, the caller still owns it).
 */
static int rx_chain(struct memif_rxq *q, struct tide_mbuf *m, const struct memif_desc *d,
		    uint8_t *const *src, unsigned nd)
{
	struct tide_mbuf *cur = m;

	for (unsigned k = 0; k < nd; k++)
		if (copy_append(q->pool, q->dataroom, m, &cur, src[k], d[k].length) < 0) {
			tide_mbuf_free(m->next);
			tide_mbuf_reset(m);
			return -1;
		}
	return 0;
}

TIDE_ALWAYS_INLINE void rx_done(struct memif_rxq *q, unsigned k, uint64_t bytes)
{
	tide_stat_burst(&q->pub.stats, k, bytes);
	memif_leave(&q->busy);
}

/*
 * The slow path of a receive: a chain, an empty descriptor or one longer than the data
 * room, at free-running index @cons of @avail published slots, into fresh mbuf @m. The
 * chain is read again from the ring (memif_desc_chain_read() fetches and checks each
 * descriptor: the fast path's copy is not used here). Returns the slots consumed with
 * *@got = 1 for a packet now in @m, 0 for one dropped and counted in @dropped (@m fresh
 * again); or 0 with the queue faulted (a violation) or *@got = -1 (pool empty, @m fresh).
 */
static __attribute__((noinline)) unsigned rx_slow(struct memif_rxq *q, struct tide_mbuf *m,
						  uint16_t cons, uint16_t avail,
						  const bool server, uint64_t *dropped,
						  int *got)
{
	struct memif_desc d[MEMIF_MAX_CHAIN];
	uint8_t *src[MEMIF_MAX_CHAIN];
	const char *why = NULL;
	uint16_t skip = 0;
	int nd;

	*got = 0;
	nd = memif_desc_chain_read(q->r.ring->desc, q->r.mask, cons, avail, &q->r.lim, d, &skip,
				   &why);
	if (nd == -E2BIG) {
		/* Longer than max_chain: dropped and counted, the link stays. */
		(*dropped)++;
		return skip;
	}
	if (nd <= 0) {
		memif_rx_fault(q, why);
		return 0;
	}
	tide_mbuf_reset(m);
	for (int k = 0; k < nd; k++) {
		size_t slot = (uint16_t)(cons + k) & q->r.mask;

		src[k] = server ? q->r.rbase[d[k].region] + d[k].offset
				: q->r.buf0 + slot * q->r.lim.buffer_size;
	}
	if (rx_chain(q, m, d, src, (unsigned)nd) < 0) {
		tide_stat_add(&q->pub.stats.nombuf, 1);
		*got = -1;
		return 0;
	}
	if (tide_unlikely(!m->pkt_len)) {
		/* An empty frame (or a chain of empty descriptors) is no packet: dropped,
		 * counted in errors. */
		tide_mbuf_free(m->next);
		tide_mbuf_reset(m);
		(*dropped)++;
		return (unsigned)nd;
	}
	m->port = q->port_id;
	*got = 1;
	return (unsigned)nd;
}

/*
 * Ask for the frame of descriptor @nx ahead of its copy: its first line, and every line if
 * it is long (then returns true). @at: server, the base of the region the frame is taken to
 * be in (@nx's offset added here); client, the frame itself. @nx is unchecked (read once,
 * relaxed), which a prefetch may be: it never faults, and whatever a length says, at most
 * COPY_HINT_MAX lines (copy.h).
 */
TIDE_ALWAYS_INLINE bool rx_hint(const struct memif_desc *nx, const uint8_t *at, const bool server)
{
	uint32_t len = __atomic_load_n(&nx->length, __ATOMIC_RELAXED);

	if (server)
		at += __atomic_load_n(&nx->offset, __ATOMIC_RELAXED);
	__builtin_prefetch(at);
	if (len <= MEMIF_RX_AHEAD_MIN)
		return false;
	copy_prefetch_rest(at, len);
	return true;
}

/*
 * One receive loop for both roles. @server: descriptors may point anywhere in the peer's
 * regions (checked); client: the slot's own buffer. The fast path is one descriptor of
 * 1..data room bytes: one fetch into a local, the checks of memif_desc.h on that copy, the
 * header from the queue's template (two wide stores and the length), the copy, and
 * prefetches of the next descriptor's frame, all its lines. Everything else goes through
 * rx_slow().
 */
TIDE_ALWAYS_INLINE uint16_t rx_copy(struct tide_rxq *pub, struct tide_mbuf **pkts, uint16_t n,
				    const bool server)
{
	struct memif_rxq *q = (struct memif_rxq *)pub;
	uint32_t live = memif_enter(&q->busy, &q->live, q->fence);
	struct memif_ring *ring;
	const struct memif_desc *desc;
	struct memif_desc_limits lim;
	struct tide_mbuf__rx_regs tmpl;
	uint8_t *const *rbase;
	uint8_t *buf0;
	uint16_t idx, moved, cons, mask, i = 0;
	uint32_t dataroom, bs;
	uint64_t bytes = 0, dropped = 0;
	const char *why = NULL;
	unsigned nb;
	int bad;

	if (tide_unlikely(live != q->seen) && !memif_rxq_resync(q, live)) {
		memif_leave(&q->busy);
		return 0;
	}
	ring = q->r.ring;
	mask = q->r.mask;
	cons = q->cons;
	if (server) {
		/* [C2S-head] acquire. The client may fill what we have not consumed yet. */
		idx = __atomic_load_n(&ring->head, __ATOMIC_ACQUIRE);
		bad = memif_ring_index_check(q->peer, idx, q->r.size - (uint16_t)(q->peer - cons),
					     &moved, &why);
	} else {
		/* [S2C-tail] acquire. The server may fill only the buffers we posted. */
		idx = __atomic_load_n(&ring->tail, __ATOMIC_ACQUIRE);
		bad = memif_ring_index_check(q->peer, idx, (uint16_t)(q->head - q->peer), &moved,
					     &why);
	}
	if (tide_unlikely(bad)) {
		memif_rx_fault(q, why);
		rx_done(q, 0, 0);
		return 0;
	}
	q->peer = idx;
	nb = (uint16_t)(idx - cons);
	if (nb == 0) {
		rx_done(q, 0, 0);
		return 0;
	}
	if (nb > n)
		nb = n;
	if (tide_pool_get_bulk(q->pool, (void **)pkts, nb) < 0) {
		tide_stat_add(&pub->stats.nombuf, 1);
		rx_done(q, 0, 0);
		return 0;
	}
	/* In locals: the stores into mbufs below may alias q (-fno-strict-aliasing). */
	desc = ring->desc;
	lim = q->r.lim;
	rbase = q->r.rbase;
	buf0 = q->r.buf0;
	bs = lim.buffer_size;
	dataroom = q->dataroom;
	tmpl = tide_mbuf__rx_tmpl_load(&q->tmpl);
	while (i < nb && cons != idx) {
		uint16_t slot = cons & mask;
		struct tide_mbuf *m = pkts[i];
		struct memif_desc d;
		const uint8_t *src;

		memif_desc_fetch(&desc[slot], &d);
		if (tide_unlikely(memif_desc_check(&d, &lim, &why))) {
			memif_rx_fault(q, why);
			break;
		}
		if (tide_unlikely((d.flags & MEMIF_DESC_FLAG_NEXT) || d.length - 1u >= dataroom)) {
			int got;
			unsigned k = rx_slow(q, m, cons, (uint16_t)(idx - cons), server, &dropped,
					     &got);

			if (k == 0)
				break; /* a violation, or no mbuf for the chain */
			cons = (uint16_t)(cons + k);
			if (got) {
				bytes += m->pkt_len;
				i++;
			}
			continue;
		}
		src = server ? rbase[d.region] + d.offset : buf0 + (size_t)slot * bs;
		/* The next frame, all its lines if it is long, on its way while this one is
		 * copied, and after a long one the frame after it too; only published frames
		 * (a slot beyond may be one the peer is still writing: its lines are better
		 * left where they are). A long frame is so asked for twice, two steps ahead
		 * and one: the second finds most of its lines on their way and brings any the
		 * first did not (see MEMIF_RX_AHEAD_MIN). Server: the descriptor's buffer, if
		 * it is in this frame's region (the usual case); client: the slot's own buffer
		 * (past the last slot, where the ring wraps: a wasted hint). */
		if ((uint16_t)(cons + 1) != idx &&
		    rx_hint(&desc[(uint16_t)(cons + 1) & mask], server ? rbase[d.region] : src + bs,
			    server) &&
		    (uint16_t)(cons + 2) != idx)
			rx_hint(&desc[(uint16_t)(cons + 2) & mask],
				server ? rbase[d.region] : src + 2 * (size_t)bs, server);
		tide_mbuf__rx_tmpl_write(m, tmpl);
		m->pkt_len = d.length;
		m->data_len = (uint16_t)d.length;
		copy_bytes(tide_mbuf_mtod(m, uint8_t *), src, d.length);
		bytes += d.length;
		cons++;
		i++;
	}
	if (i < nb)
		tide_pool_put_bulk(q->pool, (void **)&pkts[i], nb - i);
	if (server) {
		/* [C2S-tail] release: we are done reading the buffers the client may now reuse. */
		memif_publish(&ring->tail, cons);
	} else if (cons != q->cons) {
		/* Re-post the slots just read: flags, region and length in one store. The
		 * offset of a slot never changes in copy mode (we wrote it at connect, a server
		 * only writes lengths and flags, as DPDK's client relies on too) and we never
		 * read it back: a server that rewrote it still gets only our own buffers'
		 * bytes read, from our record of them. */
		uint16_t h = q->head, k = (uint16_t)(cons - q->cons);

		for (uint16_t j = 0; j < k; j++)
			memif_desc_put_len(&ring->desc[(uint16_t)(h + j) & mask], 0, 0, bs);
		q->head = (uint16_t)(h + k);
		/* [S2C-head] release: the rewritten descriptors are visible first. */
		memif_publish(&ring->head, q->head);
	}
	q->cons = cons;
	if (tide_unlikely(dropped))
		tide_stat_add(&pub->stats.errors, dropped);
	rx_done(q, i, bytes);
	return i;
}

static uint16_t rx_copy_server(struct tide_rxq *q, struct tide_mbuf **pkts, uint16_t n)
{
	return rx_copy(q, pkts, n, true);
}

static uint16_t rx_copy_client(struct tide_rxq *q, struct tide_mbuf **pkts, uint16_t n)
{
	return rx_copy(q, pkts, n, false);
}

tide_rx_burst_fn memif_copy_rx_fn(const struct memif_port *mp)
{
	return mp->role == MEMIF_ROLE_SERVER ? rx_copy_server : rx_copy_client;
}

/* ---- Tx ---- */

/* Out-of-line completion check for the engine (done_cleanup, recycling). */
unsigned memif_tx_advance_ool(struct txc *t)
{
	struct memif_txq *q = t->drv;
	uint32_t live = memif_enter(&q->busy, &q->live, q->fence);
	unsigned n = 0;

	if (live == q->seen && q->mp->role == MEMIF_ROLE_CLIENT)
		n = memif_tx_advance_client(t);
	memif_leave(&q->busy);
	return n;
}

/*
 * Copy packet @m into @need slots from @first on: client, our own buffers (each holds
 * buffer_size); server, the posted buffers described by @d (lengths checked).
 * Writes each descriptor's length and flags (and, client, region and offset).
 */
TIDE_ALWAYS_INLINE void tx_copy_pkt(struct memif_txq *q, struct tide_mbuf *m, uint16_t first,
				    unsigned need, const struct memif_desc *d, const bool server)
{
	struct memif_ring *ring = q->r.ring;
	const uint32_t bs = q->r.lim.buffer_size;
	const uint8_t *src = tide_mbuf_mtod(m, const uint8_t *);
	uint32_t sleft = m->data_len, k = 0;

	for (;;) {
		uint16_t slot = (uint16_t)(first + k) & q->r.mask;
		uint32_t cap = server ? d[k].length : bs, used = 0;
		uint8_t *dst = server ? q->r.rbase[d[k].region] + d[k].offset
				      : q->r.buf0 + (size_t)slot * bs;
		struct memif_desc *dd = &ring->desc[slot];

		while (used < cap) {
			uint32_t c;

			while (sleft == 0 && m->next != NULL) {
				m = m->next;
				src = tide_mbuf_mtod(m, const uint8_t *);
				sleft = m->data_len;
			}
			if (sleft == 0)
				break;
			c = sleft < cap - used ? sleft : cap - used;
			memcpy(dst + used, src, c);
			used += c;
			src += c;
			sleft -= c;
		}
		while (sleft == 0 && m->next != NULL) {
			m = m->next;
			src = tide_mbuf_mtod(m, const uint8_t *);
			sleft = m->data_len;
		}
		if (!server) {
			dd->region = 0;
			dd->offset = q->r.boff0 + (uint32_t)slot * bs;
		}
		dd->length = used;
		/* The slot count was reserved from pkt_len: never write past it. */
		if (sleft == 0 || k + 1 == need) {
			dd->flags = 0;
			return;
		}
		dd->flags = MEMIF_DESC_FLAG_NEXT;
		k++;
	}
}

/*
 * Slow path of a Tx burst whose next packet needs more slots than the burst found: look
 * at the peer's index again (server: the buffers the client posted since; client: the
 * slots the server completed since, released at once), so that neither a chain nor a ring
 * smaller than the Tx engine stops on a stale view. Returns the slots free for the burst
 * (counting those it already used), or 0 after a violation.
 */
unsigned memif_tx_room_more(struct memif_txq *q, bool server)
{
	struct txc *t = &q->txc;
	unsigned room, rr;

	if (server) {
		/* [S2C-head] acquire */
		uint16_t head = __atomic_load_n(&q->r.ring->head, __ATOMIC_ACQUIRE), moved;
		const char *why = NULL;

		if (memif_ring_index_check(q->peer, head,
					   q->r.size - (uint16_t)(q->peer - q->head), &moved,
					   &why)) {
			memif_tx_fault(q, why);
			return 0;
		}
		q->peer = head;
		txc_reclaim(t, UINT32_MAX); /* every slot completed in its burst: O(1) */
		room = txc_free_slots(t);
		rr = (uint16_t)(head - q->head);
	} else {
		memif_tx_advance_client(t);
		if (q->seen == MEMIF_SEEN_FAULT)
			return 0;
		txc_reclaim(t, UINT32_MAX);
		room = txc_free_slots(t);
		rr = (uint16_t)(q->r.size - (uint16_t)(q->head - q->peer));
	}
	return rr < room ? rr : room;
}

/* Drop packet @i of the burst (no slot for it can exist): freed now, counted in errors. */
TIDE_ALWAYS_INLINE void tx_drop(struct tide_mbuf **pkts, uint16_t i, uint64_t *dropped)
{
	tide_mbuf_free(pkts[i]);
	pkts[i] = NULL;
	(*dropped)++;
}

/* What a Tx burst has done so far, shared by its fast loop and tx_general(). */
struct tx_state {
	unsigned room;	 /* slots the burst may fill */
	unsigned used;	 /* slots filled */
	bool refreshed;	 /* the peer's index was read again (memif_tx_room_more) */
	uint64_t bytes, dropped;
};

/*
 * The general path of one Tx packet, pkts[@i], from slot @first on: empty, chained, longer
 * than a buffer, or (server) longer than the buffer posted. Returns true when the burst goes
 * on (the packet was copied, or dropped and counted), false when it stops here (no room, or
 * the queue faulted).
 */
static __attribute__((noinline)) bool tx_general(struct memif_txq *q, struct tide_mbuf **pkts,
						 uint16_t i, uint16_t first, struct tx_state *st,
						 const bool server, const enum memif_txfree f)
{
	struct memif_desc d[MEMIF_MAX_CHAIN];
	struct tide_mbuf *m = pkts[i];
	unsigned need;

	if (tide_unlikely(m->pkt_len == 0)) {
		/* A correct peer refuses empty descriptors: never send one. */
		tx_drop(pkts, i, &st->dropped);
		return true;
	}
	if (server) {
		uint32_t have = 0;

		need = 0;
		do {
			const char *why = NULL;

			if (need == st->room - st->used) {
				if (st->refreshed)
					return false;
				st->refreshed = true;
				st->room = memif_tx_room_more(q, true);
				if (st->room == 0 || need >= st->room - st->used)
					return false;
			}
			if (need == q->r.lim.max_chain)
				break;
			memif_desc_fetch(&q->r.ring->desc[(uint16_t)(first + need) & q->r.mask],
					 &d[need]);
			if (tide_unlikely(memif_desc_check(&d[need], &q->r.lim, &why) ||
					  d[need].length == 0)) {
				memif_tx_fault(q, why ? why : "empty buffer posted");
				return false;
			}
			have += d[need++].length;
		} while (have < m->pkt_len);
		if (tide_unlikely(q->seen == MEMIF_SEEN_FAULT))
			return false;
		if (have < m->pkt_len) {
			if (need < q->r.lim.max_chain)
				return false; /* ring full: the caller keeps the rest */
			/* Too long for max_chain of the posted buffers: drop it. */
			tx_drop(pkts, i, &st->dropped);
			return true;
		}
	} else {
		need = m->pkt_len <= q->r.lim.buffer_size
			       ? 1
			       : (m->pkt_len + q->r.lim.buffer_size - 1) / q->r.lim.buffer_size;
		if (tide_unlikely(need > q->r.lim.max_chain)) {
			tx_drop(pkts, i, &st->dropped);
			return true;
		}
		if (tide_unlikely(need > st->room - st->used)) {
			if (st->refreshed)
				return false;
			st->refreshed = true;
			st->room = memif_tx_room_more(q, false);
			if (st->room == 0 || need > st->room - st->used)
				return false;
		}
	}
	tx_copy_pkt(q, m, first, need, d, server);
	st->used += need;
	st->bytes += m->pkt_len;
	if (f == MEMIF_FREE_LOOP)
		tide_mbuf_free(m);
	return true;
}

/*
 * One Tx burst. @stream: frames of COPY_STREAM_MIN bytes or more with streaming stores
 * (tx_burst() decides, per burst). *@sent: the bytes the burst sent.
 */
TIDE_ALWAYS_INLINE uint16_t tx_copy(struct tide_txq *pub, struct tide_mbuf **pkts, uint16_t n,
				    const bool server, const enum memif_txfree f, const bool claim,
				    const bool stream, uint64_t *sent)
{
	struct memif_txq *q = (struct memif_txq *)pub;
	uint32_t live = memif_enter(&q->busy, &q->live, q->fence);
	struct txc *t = &q->txc;
	struct memif_ring *ring;
	struct memif_desc *desc;
	struct memif_desc_limits lim;
	uint8_t *const *rbase;
	uint8_t *buf0;
	struct tx_state st = {0};
	uint64_t bytes = 0;
	unsigned room, used = 0;
	uint32_t bs;
	uint16_t i, k = 0, mask, qhead;
	bool ok;

	if (tide_unlikely(live != q->seen) && !memif_txq_resync(q, live)) {
		memif_leave(&q->busy);
		return 0;
	}
	ring = q->r.ring;
	if (server) {
		/* [S2C-head] acquire: the client posted the buffers up to head. */
		uint16_t head = __atomic_load_n(&ring->head, __ATOMIC_ACQUIRE), moved;
		const char *why = NULL;

		if (tide_unlikely(memif_ring_index_check(q->peer, head,
							 q->r.size - (uint16_t)(q->peer - q->head),
							 &moved, &why))) {
			memif_tx_fault(q, why);
			memif_leave(&q->busy);
			return 0;
		}
		q->peer = head;
		room = txc_room_sync(t, n);
		if (room > (uint16_t)(head - q->head))
			room = (uint16_t)(head - q->head);
	} else {
		unsigned rr;

		room = txc_make_room(t, n, memif_tx_advance_client);
		rr = (uint16_t)(q->r.size - (uint16_t)(q->head - q->peer));
		if (rr < room)
			room = rr;
	}
	/* In locals: the stores into the ring below may alias q (-fno-strict-aliasing). */
	desc = ring->desc;
	lim = q->r.lim;
	rbase = q->r.rbase;
	buf0 = q->r.buf0;
	bs = lim.buffer_size;
	mask = q->r.mask;
	qhead = q->head;
	/* Client: the slots of the first MEMIF_CLAIM_AHEAD frames (the loop claims the rest,
	 * that far ahead of its copy), as long as the first frame. Not when streaming: the
	 * lines are not to be fetched at all. */
	if (!server && claim && !stream && n > 0) {
		uint32_t l0 = pkts[0]->data_len < bs ? pkts[0]->data_len : bs;

		for (unsigned a = 0; a < MEMIF_CLAIM_AHEAD && a < room && a < n; a++)
			copy_claim(buf0 + (size_t)((uint16_t)(qhead + a) & mask) * bs, l0);
	}
	for (i = 0; i < n; i++) {
		struct tide_mbuf *m = pkts[i];
		uint16_t first = (uint16_t)(qhead + used);

		/* Fast path: one segment of 1..buffer_size bytes into one slot. */
		if (tide_likely(m->nb_segs == 1 && m->data_len - 1u < bs && used < room)) {
			uint16_t slot = first & mask;
			uint32_t len = m->data_len;
			struct memif_desc d0;
			uint8_t *dst, *next;

			if (server) {
				const char *why = NULL;

				memif_desc_fetch(&desc[slot], &d0);
				if (tide_unlikely(memif_desc_check(&d0, &lim, &why))) {
					memif_tx_fault(q, why);
					goto out;
				}
				dst = rbase[d0.region] + d0.offset;
				/* Where the next posted buffer most likely is: clients (tide, DPDK,
				 * libmemif) post theirs back to back, each as long as the posted
				 * length. Unchecked, as a prefetch may be. */
				next = dst + d0.length;
				if (claim && !stream && used + 1 < room)
					copy_claim(next, len);
			} else {
				dst = buf0 + (size_t)slot * bs;
				next = dst + bs; /* a prefetch past the last slot is harmless */
				/* The slot MEMIF_CLAIM_AHEAD frames on, for a frame as long as this
				 * one (a stream of one size is the case that needs it), if it is in
				 * this burst's room. */
				if (claim && !stream && used + MEMIF_CLAIM_AHEAD < room)
					copy_claim(buf0 + (size_t)((uint16_t)(first + MEMIF_CLAIM_AHEAD) &
								   mask) * bs,
						   len);
			}
			if (!claim)
				__builtin_prefetch(next, 1);
			/* Server: a posted buffer shorter than the frame (or empty, a violation)
			 * goes to the general path. */
			if (tide_likely(!server || d0.length >= len)) {
				/* Streaming stores need a 16-byte aligned target: a client's
				 * slots are; a server's posted buffer may not be. */
				if (stream && len >= COPY_STREAM_MIN && ((uintptr_t)dst & 15) == 0)
					copy_stream(dst, tide_mbuf_mtod(m, const uint8_t *), len);
				else
					copy_bytes(dst, tide_mbuf_mtod(m, const uint8_t *), len);
				/* Flags, region and length; the offset stays (server: the one
				 * posted; client: ours, written at connect, as in rx_copy). */
				memif_desc_put_len(&desc[slot], 0, server ? d0.region : 0, len);
				used++;
				bytes += len;
				if (f == MEMIF_FREE_LOOP)
					tide_mbuf_free(m);
				continue;
			}
		}
		/* In memory only around the call: st's address escapes. */
		st.room = room;
		st.used = used;
		st.bytes = bytes;
		ok = tx_general(q, pkts, i, first, &st, server, f);
		room = st.room;
		used = st.used;
		bytes = st.bytes;
		if (!ok)
			break;
	}
out:
	k = i;
	if (used) {
		/* Streamed frames are in memory before the index says they are there. */
		if (stream)
			copy_stream_fence();
		q->head = (uint16_t)(q->head + used);
		/* [C2S-head] / [S2C-tail] release: descriptors and buffers are written. */
		memif_publish(server ? &ring->tail : &ring->head, q->head);
		if (server)
			txc_commit_done(t, used);
		else
			txc_commit(t, used);
		memif_kick(&q->r);
	}
	txc_release_copied(t, pkts, k, (unsigned)st.dropped, f == MEMIF_FREE_AFTER);
	if (tide_unlikely(st.dropped))
		tide_stat_add(&pub->stats.errors, st.dropped);
	tide_stat_burst(&pub->stats, k - st.dropped, bytes);
	memif_leave(&q->busy);
	*sent = bytes;
	return k;
}

typedef uint16_t (*tx_way_fn)(struct tide_txq *q, struct tide_mbuf **pkts, uint16_t n,
			      uint64_t *sent);

/*
 * A burst that begins with a long frame writes its long frames the way the queue's
 * copy_adapt says (tx_stores=) and, under tx_stores=auto, is timed; every other burst runs
 * the cached loop. The two loops are separate functions (@cached, @streaming), so that the
 * per-packet path of short frames carries nothing of streaming.
 */
TIDE_ALWAYS_INLINE uint16_t tx_burst(struct tide_txq *pub, struct tide_mbuf **pkts, uint16_t n,
				     tx_way_fn cached, tx_way_fn streaming)
{
	struct copy_adapt *a = &((struct memif_txq *)pub)->ad;
	uint64_t t0, sent = 0;
	uint16_t k;

	if (!COPY_HAVE_STREAM || n == 0 || a->stores == COPY_STORES_CACHE ||
	    pkts[0]->data_len < COPY_STREAM_MIN)
		return cached(pub, pkts, n, &sent);
	if (a->stores == COPY_STORES_STREAM)
		return streaming(pub, pkts, n, &sent);
	t0 = copy_ticks();
	k = a->stream ? streaming(pub, pkts, n, &sent) : cached(pub, pkts, n, &sent);
	if (sent)
		copy_adapt_burst(a, t0, copy_ticks(), sent);
	return k;
}

/* @claim: copy_claim() of the slots ahead of the copy (copy.h), for CPUs with PREFETCHW. */
#define TX_FN(name, server, f, claim)                                                              \
	static __attribute__((noinline)) uint16_t name##_cached(                                   \
		struct tide_txq *q, struct tide_mbuf **pkts, uint16_t n, uint64_t *sent)          \
	{                                                                                          \
		return tx_copy(q, pkts, n, server, f, claim, false, sent);                        \
	}                                                                                          \
	static __attribute__((noinline)) uint16_t name##_streaming(                                \
		struct tide_txq *q, struct tide_mbuf **pkts, uint16_t n, uint64_t *sent)          \
	{                                                                                          \
		return tx_copy(q, pkts, n, server, f, claim, COPY_HAVE_STREAM, sent);             \
	}                                                                                          \
	static uint16_t name(struct tide_txq *q, struct tide_mbuf **pkts, uint16_t n)             \
	{                                                                                          \
		return tx_burst(q, pkts, n, name##_cached, name##_streaming);                     \
	}

TX_FN(tx_server_after, true, MEMIF_FREE_AFTER, false)
TX_FN(tx_server_loop, true, MEMIF_FREE_LOOP, false)
TX_FN(tx_client_after, false, MEMIF_FREE_AFTER, false)
TX_FN(tx_client_loop, false, MEMIF_FREE_LOOP, false)
TX_FN(tx_server_after_claim, true, MEMIF_FREE_AFTER, true)
TX_FN(tx_server_loop_claim, true, MEMIF_FREE_LOOP, true)
TX_FN(tx_client_after_claim, false, MEMIF_FREE_AFTER, true)
TX_FN(tx_client_loop_claim, false, MEMIF_FREE_LOOP, true)

tide_tx_burst_fn memif_copy_tx_fn(const struct memif_port *mp, enum memif_txfree f)
{
	static const tide_tx_burst_fn fns[2][2][2] = {
		{{tx_client_after, tx_client_loop}, {tx_server_after, tx_server_loop}},
		{{tx_client_after_claim, tx_client_loop_claim},
		 {tx_server_after_claim, tx_server_loop_claim}},
	};

	return fns[copy_claims()][mp->role == MEMIF_ROLE_SERVER]
		  [TIDE_BENCH_VARIANTS ? f : MEMIF_FREE_AFTER];
}
