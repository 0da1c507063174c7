/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Copy-mode drivers (memif, vhost): the byte copy of their data paths (copy_bytes), and
 * the receive side's append of a peer's buffer to a packet, which grows by segments taken
 * from the queue's pool (copy_append). Internal.
 */
#ifndef TIDE_SRC_COPY_H
#define TIDE_SRC_COPY_H

#include <stdbool.h>
#include <string.h>

#include <tide/mbuf.h>

#include "inline.h"

/* 16 bytes from @s to @d, neither aligned: one unaligned load and store where the target has
 * them (memcpy of a constant size is expanded inline). */
TIDE_ALWAYS_INLINE void copy_16(uint8_t *d, const uint8_t *s)
{
	memcpy(d, s, 16);
}

/*
 * Copy @n bytes from @s to @d (not overlapping). Frames of 16..128 bytes, the small ones a
 * packet path sees most, take a fixed number of 16-byte moves with no call: the first and
 * the last 16, 32 or 64 bytes, overlapping in the middle (bytes there are written twice,
 * with the same value: @s is read at most twice, and a peer that rewrites its buffer during
 * the copy gets back the bytes it wrote, in some order, as it would from memcpy). Other
 * lengths go to memcpy.
 */
TIDE_ALWAYS_INLINE void copy_bytes(uint8_t *d, const uint8_t *s, uint32_t n)
{
	if (n - 16u > 128u - 16u) {
		memcpy(d, s, n);
		return;
	}
	if (n > 64) {
		copy_16(d + 16, s + 16);
		copy_16(d + 32, s + 32);
		copy_16(d + 48, s + 48);
		copy_16(d + n - 64, s + n - 64);
		copy_16(d + n - 48, s + n - 48);
		copy_16(d + n - 32, s + n - 32);
	} else if (n > 32) {
		copy_16(d + 16, s + 16);
		copy_16(d + n - 32, s + n - 32);
	}
	copy_16(d, s);
	copy_16(d + n - 16, s + n - 16);
}

/* Set at load (copy.c): this x86-64 CPU has PREFETCHW (CPUID 0x80000001 ECX bit 8; other
 * architectures: off). copy_claims() applies TIDE_PREFETCHW=0|1 to it at its first call
 * and returns it: drivers pick their claiming loop by it when a queue starts. */
extern bool copy_prefetchw;
bool copy_claims(void);

TIDE_ALWAYS_INLINE void copy_claim_line(const uint8_t *p)
{
#if defined(__x86_64__)
	__asm__ volatile("prefetchw %0" : : "m"(*p));
#else
	__builtin_prefetch(p, 1);
#endif
}

/*
 * Ask for ownership of the cache lines of [@d, @d + @n) some time before a copy writes
 * them; only where copy_prefetchw is set. The buffers of a ring shared with a peer on
 * another core sit in that core's cache (it read them on the last lap), and a store into
 * such a line first waits for the line to come back; a store that misses waits behind the
 * stores before it, so a frame's lines come over a few at a time. Write prefetches issued
 * a few frames ahead of the copy put those transfers in flight together. Only for memory
 * the caller may write now (a slot the peer has released): a line taken from a peer still
 * reading it only moves back. Never faults. (Without PREFETCHW a read prefetch would fetch
 * the line shared and the store would still wait to own it: nothing to gain.)
 */
TIDE_ALWAYS_INLINE void copy_claim(const uint8_t *d, uint32_t n)
{
	uint32_t lines = (n + 63) >> 6;

	if (lines & 1) {
		copy_claim_line(d);
		d += 64;
	}
	for (lines >>= 1; lines > 0; lines--, d += 128) { /* two lines a step */
		copy_claim_line(d);
		copy_claim_line(d + 64);
	}
}

/*
 * Append @len bytes at @src to packet @m, whose last segment is *@cur and whose segments
 * hold @dataroom bytes each; new segments come from @pool. Returns 0, or -1 when the pool
 * ran dry (the segments taken so far stay chained to @m, for the caller to free with it).
 * Inline, no argument checks: @src and @len are already checked against the peer's memory.
 */
TIDE_ALWAYS_INLINE int
copy_append(struct tide_pool *pool, uint32_t dataroom, struct tide_mbuf *m,
	    struct tide_mbuf **cur, const uint8_t *src, uint32_t len)
{
	struct tide_mbuf *c = *cur;

	while (len > 0) {
		uint32_t room = dataroom - c->data_len, k;

		if (tide_unlikely(room == 0)) {
			struct tide_mbuf *n = tide_mbuf_alloc(pool);

			if (n == NULL)
				return -1;
			c->next = n;
			c = n;
			m->nb_segs++;
			continue;
		}
		k = len < room ? len : room;
		copy_bytes(tide_mbuf_mtod_offset(c, uint8_t *, c->data_len), src, k);
		c->data_len = (uint16_t)(c->data_len + k);
		m->pkt_len += k;
		src += k;
		len -= k;
	}
	*cur = c;
	return 0;
}

#endif /* TIDE_SRC_COPY_H */
