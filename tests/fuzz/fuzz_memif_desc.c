/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target: arbitrary region tables, descriptor rings and ring indices through the
 * memif descriptor checks. Every verdict is compared with a reference written the obvious
 * way in wide arithmetic; region tables and rings are allocated to their exact size so that
 * any access beyond them hits a redzone.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "memif_desc.h"
#include "fuzz_memif.h"

#define CHECK(x)                                                                                   \
	do {                                                                                       \
		if (!(x))                                                                          \
			__builtin_trap();                                                          \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct reader {
	const uint8_t *p;
	size_t n, pos;
};

static uint64_t take(struct reader *r, unsigned int bytes)
{
	uint64_t v = 0;

	for (unsigned int i = 0; i < bytes; i++, r->pos++)
		v |= (uint64_t)(r->pos < r->n ? r->p[r->pos] : 0) << (8 * i);
	return v;
}

static int ref_ok(const struct memif_desc *d, const struct memif_desc_limits *lim)
{
	unsigned __int128 end = (unsigned __int128)d->offset + d->length;

	return d->region < lim->n_regions && d->length <= lim->buffer_size &&
	       end <= lim->region_size[d->region];
}

static void check_index(uint16_t cached, uint16_t seen, uint32_t window)
{
	uint16_t moved = 0x5a5a;
	const char *why = NULL;
	int32_t diff = (int32_t)seen - (int32_t)cached;
	int ret = memif_ring_index_check(cached, seen, window, &moved, &why);

	/* Reference: distance forward modulo 2^16, legal when within the window (< 2^15). */
	if (diff < 0)
		diff += 65536;
	if (diff < 32768 && (uint32_t)diff <= window) {
		CHECK(ret == 0 && moved == diff);
	} else {
		CHECK(ret == -EINVAL && why != NULL && moved == 0x5a5a);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct reader r = {data, size, 0};
	struct memif_desc_limits lim;
	struct memif_desc *ring, *out;
	uint64_t *sizes;
	uint16_t index, cached, seen, avail = 0;
	uint32_t window, slots;
	unsigned int log2;

	lim.n_regions = (uint16_t)(take(&r, 1) % (FUZZ_DESC_MAX_REGIONS + 1));
	sizes = malloc(lim.n_regions ? lim.n_regions * sizeof(*sizes) : 1);
	CHECK(sizes != NULL);
	for (unsigned int i = 0; i < lim.n_regions; i++)
		sizes[i] = take(&r, 8);
	lim.region_size = sizes;
	lim.buffer_size = (uint32_t)take(&r, 4);
	lim.max_chain = (uint16_t)(take(&r, 1) % FUZZ_DESC_MAX_CHAIN + 1);
	log2 = (unsigned int)(take(&r, 1) % (FUZZ_DESC_MAX_LOG2 + 1));
	index = (uint16_t)take(&r, 2);
	cached = (uint16_t)take(&r, 2);
	seen = (uint16_t)take(&r, 2);
	window = (uint32_t)take(&r, 2);
	slots = 1u << log2;

	ring = malloc(slots * sizeof(*ring));
	out = malloc(lim.max_chain * sizeof(*out));
	CHECK(ring && out);
	memset(ring, 0, slots * sizeof(*ring));
	if (r.pos < size)
		memcpy(ring, data + r.pos,
		       size - r.pos < slots * sizeof(*ring) ? size - r.pos : slots * sizeof(*ring));

	/* Every slot: the checker agrees with the reference, and the copy is exact. */
	for (uint32_t i = 0; i < slots; i++) {
		struct memif_desc d;
		const char *why = NULL;
		int ret = memif_desc_read(&ring[i], &lim, &d, &why);

		CHECK(memcmp(&d, &ring[i], sizeof(d)) == 0);
		CHECK(ret == (ref_ok(&d, &lim) ? 0 : -EINVAL));
		CHECK(ret == 0 || (why && strlen(why) < MEMIF_REASON_LEN));
	}

	/* Indices: the window as given, and as a consumer of a ring of this size would pass it. */
	check_index(cached, seen, window % (MEMIF_MAX_RINGS * 64 + 1));
	check_index(cached, seen, slots);
	if (memif_ring_index_check(cached, seen, slots, &avail, NULL))
		avail = (uint16_t)(window % (slots + 1));

	/* One packet from @index: the chain the reference walk finds, or an error. */
	{
		const char *why = NULL;
		uint16_t skip = 0x5a5a;
		int n = memif_desc_chain_read(ring, (uint16_t)(slots - 1), index, avail, &lim, out,
					      &skip, &why);
		int ref = 0;
		unsigned int ref_skip = 0;

		if (avail) {
			for (unsigned int k = 0;; k++) {
				const struct memif_desc *d =
				    &ring[(uint16_t)(index + k) & (slots - 1)];
				int more = (d->flags & MEMIF_DESC_FLAG_NEXT) != 0;

				if (k < lim.max_chain && !ref_ok(d, &lim)) {
					ref = -EINVAL;
					break;
				}
				if (!more) {
					if (k + 1 > lim.max_chain) {
						ref = -E2BIG;
						ref_skip = k + 1;
					} else {
						ref = (int)k + 1;
					}
					break;
				}
				if (k + 1 >= avail) {
					ref = -EINVAL;
					break;
				}
			}
		}
		CHECK(n == ref);
		if (n < 0)
			CHECK(why != NULL && strlen(why) < MEMIF_REASON_LEN);
		if (n == -E2BIG)
			CHECK(skip == ref_skip && skip > lim.max_chain && skip <= avail);
		else
			CHECK(skip == 0x5a5a);
		for (int k = 0; k < n; k++) {
			CHECK(memcmp(&out[k], &ring[(uint16_t)(index + k) & (slots - 1)],
				     sizeof(out[k])) == 0);
			CHECK(!(out[k].flags & MEMIF_DESC_FLAG_NEXT) == (k == n - 1));
		}
	}
	free(out);
	free(ring);
	free(sizes);
	return 0;
}
