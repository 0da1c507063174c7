/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Copy-mode drivers (memif, vhost): the byte copy of their data paths (copy_bytes), and
 * the receive side's append of a peer's buffer to a packet, which grows by segments taken
 * from the queue's pool (copy_append). Internal.
 */
#ifndef TIDE_SRC_COPY_H
#define TIDE_SRC_COPY_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#if defined(__x86_64__)
#include <emmintrin.h>
#include <x86intrin.h>
#endif

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
 * Prefetch @lines cache lines, 64 bytes apart from @at on: for writing (copy_claim_line) or
 * for reading. @write is a constant at every call, so each use compiles to one kind.
 * Addresses as integers: the range may be a peer's unchecked values, and a prefetch never
 * faults, whatever the address. Up to COPY_HINT_RUN lines (a 2048-byte buffer) in a
 * straight run entered at the line count through a jump table: one instruction a line,
 * lowest address first, and one register. A loop took about 2.5 instructions a line, four
 * lines a step cost the Tx loops around the claims more than it saved, and a single line
 * (a short frame's) takes no table: callgrind per packet against the loop, memif_instr with
 * the claims on, 1518 B: Rx 335.4 -> 307.3 (server), 344.6 -> 317.5 (client), Tx 323.8 ->
 * 297.8 and 326.6 -> 293.8; 64 B Tx 98.0 -> 99.8 and 88.5 -> 86.5. A longer range (jumbo
 * frames) goes in a loop, at most COPY_HINT_MAX lines whatever a peer's length says: with
 * only its first 32 lines hinted, memif far moved 3.0-4.2 Mpps of 4000-byte frames and
 * 2.5-3.4 of 8000-byte ones, with every line 5.0-7.8 and 3.5-3.8
 * (docs/perf/memif-two-process.md, section 11).
 */
TIDE_ALWAYS_INLINE void copy_hint_line(uintptr_t at, bool write)
{
	if (write)
		copy_claim_line((const uint8_t *)at);
	else
		__builtin_prefetch((const void *)at);
}

#define COPY_HINT_RUN 32   /* lines: a 2048-byte buffer */
#define COPY_HINT_MAX 1024 /* lines: 64 KiB, the most an mbuf segment holds */
#define COPY_HINT_(k)                                                                              \
	case k:                                                                                    \
		copy_hint_line(end - (k) * 64u, write);                                            \
		__attribute__((fallthrough))

/* The @lines (at most COPY_HINT_RUN) lines that end at @end. */
TIDE_ALWAYS_INLINE void copy_hint_run(uintptr_t end, uint32_t lines, bool write)
{
	switch (lines) {
		COPY_HINT_(32); COPY_HINT_(31); COPY_HINT_(30); COPY_HINT_(29);
		COPY_HINT_(28); COPY_HINT_(27); COPY_HINT_(26); COPY_HINT_(25);
		COPY_HINT_(24); COPY_HINT_(23); COPY_HINT_(22); COPY_HINT_(21);
		COPY_HINT_(20); COPY_HINT_(19); COPY_HINT_(18); COPY_HINT_(17);
		COPY_HINT_(16); COPY_HINT_(15); COPY_HINT_(14); COPY_HINT_(13);
		COPY_HINT_(12); COPY_HINT_(11); COPY_HINT_(10); COPY_HINT_(9);
		COPY_HINT_(8); COPY_HINT_(7); COPY_HINT_(6); COPY_HINT_(5);
		COPY_HINT_(4); COPY_HINT_(3); COPY_HINT_(2); COPY_HINT_(1);
	default:
		break;
	}
}

TIDE_ALWAYS_INLINE void copy_hint_lines(uintptr_t at, uint32_t lines, bool write)
{
	if (lines <= 1) { /* a short frame's one line: no table */
		if (lines != 0)
			copy_hint_line(at, write);
		return;
	}
	if (tide_unlikely(lines > COPY_HINT_RUN)) {
		if (lines > COPY_HINT_MAX)
			lines = COPY_HINT_MAX;
		for (uint32_t k = 0; k < lines; k++)
			copy_hint_line(at + (uintptr_t)k * 64u, write);
		return;
	}
	copy_hint_run(at + (uintptr_t)lines * 64u, lines, write);
}
#undef COPY_HINT_

/*
 * Read prefetches of the cache lines of [@p, @p + @n) after the first, which the caller asks
 * for on its own: a receiver's copy of the next frame then finds its lines on their way.
 * Where the peer wrote the frame with streaming stores, each line comes from memory, and a
 * copy that asks for them one at a time waits out memory's latency for each hardware
 * prefetch to catch up (docs/perf/memif-two-process.md, section 10). Only a hint: @p and
 * @n may be a peer's unchecked values; a prefetch never faults, and the walk stops after
 * COPY_HINT_MAX lines whatever @n says.
 */
TIDE_ALWAYS_INLINE void copy_prefetch_rest(const uint8_t *p, uint32_t n)
{
	uintptr_t line = ((uintptr_t)p & ~(uintptr_t)63) + 64, end = (uintptr_t)p + n;

	if (end > line)
		copy_hint_lines(line, (uint32_t)((end - line + 63) >> 6), false);
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
	copy_hint_lines((uintptr_t)d, (n + 63) >> 6, true);
}

/*
 * Streaming stores: a frame written with non-temporal stores goes to memory without
 * fetching its lines, and the peer reads it from there. Where the peer's core is far (its
 * cache lines take longer to come over than memory takes to answer) that is faster than
 * claiming the lines; where it is near it is slower, by a lot: copy_adapt below tries
 * both and keeps the faster. x86-64 only (SSE2); elsewhere there is no streaming path.
 */
#if defined(__x86_64__)
#define COPY_HAVE_STREAM 1
#else
#define COPY_HAVE_STREAM 0
#endif

/* Frames shorter than this are always copied through the cache: tx_stores= applies from
 * this length up. 256 (it was 512): far, tide-fwd's 256-byte pair ran 17 Mpps through the
 * caches and 26-31 with streaming stores, which tx_stores=auto chose in every pair;
 * near it kept the caches (docs/perf/memif-two-process.md, section 9). Shorter frames,
 * far, with this set lower: 64 B streamed no faster (28.6-30.3 against 29.6-32.3 Mpps);
 * 128 B did (29.5-29.9 against 22.5-23.1) but auto did not take it in three runs (its
 * probes must win by a quarter), and near was not measured: left at 256. */
#define COPY_STREAM_MIN 256u

/* Copy @n bytes to @d (16-byte aligned) with streaming stores, whole 64-byte lines; the
 * last partial line through the cache. The caller fences (copy_stream_fence) before it
 * publishes the frame: streaming stores are not ordered with a later release store. */
TIDE_ALWAYS_INLINE void copy_stream(uint8_t *d, const uint8_t *s, uint32_t n)
{
#if COPY_HAVE_STREAM
	uint32_t o = 0;

	for (; o + 64 <= n; o += 64) {
		__m128i a = _mm_loadu_si128((const __m128i *)(const void *)(s + o));
		__m128i b = _mm_loadu_si128((const __m128i *)(const void *)(s + o + 16));
		__m128i c = _mm_loadu_si128((const __m128i *)(const void *)(s + o + 32));
		__m128i e = _mm_loadu_si128((const __m128i *)(const void *)(s + o + 48));

		_mm_stream_si128((__m128i *)(void *)(d + o), a);
		_mm_stream_si128((__m128i *)(void *)(d + o + 16), b);
		_mm_stream_si128((__m128i *)(void *)(d + o + 32), c);
		_mm_stream_si128((__m128i *)(void *)(d + o + 48), e);
	}
	if (o < n)
		memcpy(d + o, s + o, n - o);
#else
	memcpy(d, s, n);
#endif
}

TIDE_ALWAYS_INLINE void copy_stream_fence(void)
{
#if COPY_HAVE_STREAM
	_mm_sfence();
#endif
}

TIDE_ALWAYS_INLINE uint64_t copy_ticks(void)
{
#if COPY_HAVE_STREAM
	return __rdtsc();
#else
	return 0;
#endif
}

/* How a queue writes frames of COPY_STREAM_MIN bytes or more (tx_stores= of the drivers). */
enum copy_stores {
	COPY_STORES_AUTO,   /* measure both, keep the faster (copy_adapt) */
	COPY_STORES_CACHE,  /* through the cache (with claims where the CPU has PREFETCHW) */
	COPY_STORES_STREAM, /* streaming stores */
};

/*
 * The choice between cached and streaming stores for one Tx queue (tx_stores=auto). What
 * is compared is the rate the queue sends long frames at: bytes over the time from the
 * start of an epoch's first burst to the end of its last, an epoch being
 * COPY_EPOCH_BURSTS bursts that began with a long frame. Wall time, not the bursts' own:
 * streaming stores are cheap for the sender, and where the peer's core is near they make
 * the receiver read memory instead of a neighbour's cache and the sender then waits for
 * room; only the rate shows that.
 *
 * The queue runs one way; after every `interval` epochs it runs one epoch the other way
 * (a probe), and switches when two probes in a row (the second after one settled epoch)
 * beat the best settled epoch before each by COPY_SWITCH_DEN/COPY_SWITCH_NUM. After each
 * change of way the first COPY_WARM_BURSTS bursts are not measured (the ring still holds
 * frames written the other way, which the peer is reading). A probe that loses doubles
 * the interval (up to COPY_PROBE_MAX), so that a settled queue seldom pays for one; a
 * switch resets it. A sender that is not
 * saturated sends at its input's rate either way: its probes win or lose by that input's
 * ups and downs, which two wins running make rare; tx_stores=cache or stream fix the way.
 */
#define COPY_EPOCH_BURSTS 64u
#define COPY_WARM_BURSTS 64u
#define COPY_PROBE_MIN 4u
#define COPY_PROBE_MAX 1024u
#define COPY_SWITCH_NUM 4u /* the other way must take under 4/5 of this one's time */
#define COPY_SWITCH_DEN 5u

struct copy_adapt {
	uint8_t stores;	   /* enum copy_stores, the key */
	bool stream;	   /* the way bursts run now (the probe's, during a probe) */
	bool probing;	   /* this epoch runs the other way */
	bool confirming;   /* the last probe won: the next, after one epoch, must too */
	uint16_t bursts;   /* measured bursts in this epoch */
	uint16_t warm;	   /* bursts still to skip after a change of way */
	uint32_t interval; /* epochs between probes */
	uint32_t epochs;   /* epochs since the last probe */
	uint64_t start;	   /* ticks at the start of the epoch's first burst */
	uint64_t bytes;	   /* sent in this epoch */
	uint64_t cost;	   /* the best settled epoch since the last probe: ticks per KiB */
	/* For the port's xstats, read from other threads (atomic): */
	bool settled;	   /* the settled way is streaming */
	uint64_t switches; /* times the settled way changed */
};

void copy_adapt_init(struct copy_adapt *a, enum copy_stores stores);
/* An epoch ended, @ticks long: compare, decide. Out of line: once per COPY_EPOCH_BURSTS
 * bursts. */
void copy_adapt_epoch(struct copy_adapt *a, uint64_t ticks);

/* After a measured burst that sent @bytes, from @t0 to @t1 ticks. */
TIDE_ALWAYS_INLINE void copy_adapt_burst(struct copy_adapt *a, uint64_t t0, uint64_t t1,
					 uint64_t bytes)
{
	if (a->warm) {
		a->warm--;
		return;
	}
	if (a->bursts == 0)
		a->start = t0;
	a->bytes += bytes;
	if (++a->bursts == COPY_EPOCH_BURSTS)
		copy_adapt_epoch(a, t1 - a->start);
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
