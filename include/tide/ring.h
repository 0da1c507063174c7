/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tide/ring.h - fixed-size lock-free ring of pointers.
 *
 * A ring's synchronisation is chosen when it is created: single or multiple producers,
 * single or multiple consumers. Bulk calls move all @n objects or none; burst calls move as
 * many as they can. The enqueue/dequeue/count calls are inline, do no argument checks, and
 * are safe to call concurrently only as the ring's mode allows (an SP ring must have one
 * producer thread at a time, and so on). Multi-producer/-consumer calls are lock-free but not
 * preemption-safe: a thread descheduled between reserving and publishing holds up the others
 * on the same side until it runs again.
 */
#ifndef TIDE_RING_H
#define TIDE_RING_H

#include <tide/common.h>
#include <tide/ring_core.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Creation flags. The default is multi-producer, multi-consumer. */
#define TIDE_RING_SP_ENQ 0x1u /* one producer thread at a time */
#define TIDE_RING_SC_DEQ 0x2u /* one consumer thread at a time */

#define TIDE_RING_SIZE_MAX (1u << 28)

/*
 * Create a ring of @size slots (a power of two, 2..TIDE_RING_SIZE_MAX); it holds up to @size
 * objects. @name is copied (truncated to 31 characters) and only used in messages.
 * Returns 0 and the ring in *@out, -EINVAL for a bad size or unknown flag, -ENOMEM.
 */
TIDE_EXPORT int tide_ring_create(const char *name, unsigned size, unsigned flags,
				 struct tide_ring **out);

/* Free a ring (NULL is allowed). Objects still in it are not touched. */
TIDE_EXPORT void tide_ring_free(struct tide_ring *r);

/* Bytes a ring of @size slots occupies, for callers placing rings in their own memory. */
TIDE_EXPORT size_t tide_ring_memsize(unsigned size);

/* Initialise a ring in caller memory of tide_ring_memsize(size) bytes, 64-byte aligned. */
TIDE_EXPORT int tide_ring_init(struct tide_ring *r, const char *name, unsigned size,
			       unsigned flags);

/* ---- generic inline workers; the calls below are thin wrappers ---- */

/*
 * Reserve up to @n slots on the side @ht, given the other side's tail. @avail_base is what
 * (other tail - our head) must be offset by to get the number of usable slots: the ring
 * size for producers, 0 for consumers. With @fixed, reserve @n or nothing.
 * Returns the number reserved and the old head in *@old.
 *
 * Memory orders (C11 model; x86 gives all of this for free, Arm and POWER do not):
 *  (A) other->tail, load-acquire   <- pairs with (D), the other side's store-release of its
 *      tail in tide_ring__publish(): the slots it filled (producer) or emptied (consumer)
 *      are visible before we touch them.
 *  (B) ht->head, load-acquire      <- pairs with (C) of the thread on our side that moved the
 *      head to the value we read: its read of other->tail happened before its head moved,
 *      so our own read of other->tail (A, after B) returns that value or a later one. With
 *      a relaxed head load, (A) may return an older tail than the one the head was moved
 *      against, "other tail - head" wraps below zero, and we would reserve slots that hold
 *      nothing yet (or a buffer another consumer has already taken).
 *  (C) ht->head CAS, release on success (acquire too: acq_rel) and acquire on failure. The
 *      release orders our (A) before the new head; the failure path reloads the head, which
 *      is (B) again.
 * The single-thread side needs only (A) and (D): only its own thread reads or writes its head.
 */
static inline uint32_t tide_ring__reserve(struct tide_ring_headtail *ht,
					  const struct tide_ring_headtail *other,
					  uint32_t avail_base, uint32_t n, int fixed, uint32_t *old,
					  uint32_t *avail_out)
{
	uint32_t head, avail, take;

	/* (B). Acquire on the single side too: a plain load on x86, and one ordering rule. */
	head = __atomic_load_n(&ht->head, __ATOMIC_ACQUIRE);
	for (;;) {
		/* (A) pairs with (D) on the other side. */
		avail = avail_base + __atomic_load_n(&other->tail, __ATOMIC_ACQUIRE) - head;
		take = n <= avail ? n : (fixed ? 0 : avail);
		if (avail_out)
			*avail_out = avail - take;
		if (take == 0) {
			*old = head;
			return 0;
		}
		if (ht->single) {
			ht->head = head + take;
			break;
		}
		/* (C): on failure head is reloaded with acquire (B) and the tail read again. */
		if (__atomic_compare_exchange_n(&ht->head, &head, head + take, 0, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE))
			break;
	}
	*old = head;
	return take;
}

/* Publish [old, old+n) on side @ht: wait for earlier reservations, then release. */
static inline void tide_ring__publish(struct tide_ring_headtail *ht, uint32_t old, uint32_t n)
{
	/* (E) load-acquire of our side's tail, pairing with (D) of the same-side thread that
	 * reserved just before us: its slot accesses happen before our release below, so
	 * the other side, acquiring our tail, sees them as well as ours. */
	if (!ht->single)
		while (__atomic_load_n(&ht->tail, __ATOMIC_ACQUIRE) != old)
			tide_pause();
	/* (D) store-release: our slot accesses happen before the other side's (A) reads this
	 * tail, and before a same-side thread's (E). */
	__atomic_store_n(&ht->tail, old + n, __ATOMIC_RELEASE);
}

static inline unsigned tide_ring__enqueue(struct tide_ring *r, void *const *objs, unsigned n,
					  int fixed, unsigned *free_space)
{
	uint32_t old, idx, first;
	uint32_t got = tide_ring__reserve(&r->prod, &r->cons, r->size, n, fixed, &old, free_space);

	if (got == 0)
		return 0;
	idx = old & r->mask;
	first = r->size - idx < got ? r->size - idx : got;
	tide_copy_ptrs(&r->slots[idx], objs, first);
	tide_copy_ptrs(&r->slots[0], objs + first, got - first);
	tide_ring__publish(&r->prod, old, got);
	return got;
}

static inline unsigned tide_ring__dequeue(struct tide_ring *r, void **objs, unsigned n,
					  int fixed, unsigned *available)
{
	uint32_t old, idx, first;
	uint32_t got = tide_ring__reserve(&r->cons, &r->prod, 0, n, fixed, &old, available);

	if (got == 0)
		return 0;
	idx = old & r->mask;
	first = r->size - idx < got ? r->size - idx : got;
	tide_copy_ptrs(objs, &r->slots[idx], first);
	tide_copy_ptrs(objs + first, &r->slots[0], got - first);
	tide_ring__publish(&r->cons, old, got);
	return got;
}

/* ---- the API ---- */

/*
 * Enqueue all @n objects or none. Returns @n or 0. If @free_space is non-NULL it receives
 * the free slots left after the call (a snapshot).
 */
static inline unsigned tide_ring_enqueue_bulk(struct tide_ring *r, void *const *objs, unsigned n,
					      unsigned *free_space)
{
	return tide_ring__enqueue(r, objs, n, 1, free_space);
}

/* Enqueue as many of the @n objects as fit. Returns how many (0..n). */
static inline unsigned tide_ring_enqueue_burst(struct tide_ring *r, void *const *objs,
					       unsigned n, unsigned *free_space)
{
	return tide_ring__enqueue(r, objs, n, 0, free_space);
}

/* Dequeue exactly @n objects or none. Returns @n or 0; *@available: objects left. */
static inline unsigned tide_ring_dequeue_bulk(struct tide_ring *r, void **objs, unsigned n,
					      unsigned *available)
{
	return tide_ring__dequeue(r, objs, n, 1, available);
}

/* Dequeue up to @n objects. Returns how many (0..n). */
static inline unsigned tide_ring_dequeue_burst(struct tide_ring *r, void **objs, unsigned n,
					       unsigned *available)
{
	return tide_ring__dequeue(r, objs, n, 0, available);
}

/* Objects in the ring (a snapshot; exact when no other thread is using it). */
static inline unsigned tide_ring_count(const struct tide_ring *r)
{
	uint32_t prod = __atomic_load_n(&r->prod.tail, __ATOMIC_ACQUIRE);
	uint32_t cons = __atomic_load_n(&r->cons.tail, __ATOMIC_ACQUIRE);
	uint32_t count = prod - cons;

	return count > r->size ? r->size : count;
}

/* Free slots (a snapshot). */
static inline unsigned tide_ring_free_count(const struct tide_ring *r)
{
	return r->size - tide_ring_count(r);
}

/* Capacity: the most objects the ring can hold. */
static inline unsigned tide_ring_capacity(const struct tide_ring *r)
{
	return r->size;
}

#ifdef __cplusplus
}
#endif

#endif /* TIDE_RING_H */
