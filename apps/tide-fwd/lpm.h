/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lpm.h - IPv4 longest-prefix-match table (DIR-24-8) for the l3fwd engine of tide-fwd.
 *
 * Layout. tbl24 has one 16-bit entry per /24 (2^24 entries, 32 MiB). An entry either holds
 * the answer for the whole /24 or, when some route longer than /24 falls inside it, the index
 * of a tbl8 group: 256 entries, one per address of that /24. A lookup therefore reads one
 * entry, or two for addresses under a route longer than /24.
 *
 * Entry encoding (tbl24 and tbl8):
 *   0                    no route
 *   1 .. 0x7fff          next hop + 1 (next hops 0 .. LPM_NEXT_HOP_MAX)
 *   0x8000 | group       tbl24 only: look in tbl8 group @group (0 .. 0x7fff)
 * Zero meaning "no route" lets a fresh table start zero-filled; the +1 costs one subtraction.
 *
 * Threads. Lookups only read the table and may run on any number of threads at once. lpm_add
 * and lpm_delete must not run concurrently with each other or with lookups on the same table
 * (tide-fwd builds its table before forwarding starts).
 */
#ifndef TIDE_FWD_LPM_H
#define TIDE_FWD_LPM_H

#include <errno.h>
#include <stdint.h>

#define LPM_NEXT_HOP_MAX    0x7ffeu /* largest next hop a route can carry */
#define LPM_NO_ROUTE	    0xffffu /* what lpm_lookup_bulk writes for an address without a route */
#define LPM_TBL8_GROUPS_MAX 0x8000u /* tbl8 group indexes have 15 bits */
#define LPM_ROUTES_MAX	    (1u << 24)

#define LPM_ENTRY_EXT 0x8000u

struct lpm_ctl;

/*
 * Only the two tables the inline lookup reads are visible here; the route store and the
 * bookkeeping needed by add/delete live behind @ctl, private to lpm.c.
 */
struct lpm {
	const uint16_t *tbl24; /* 1 << 24 entries */
	const uint16_t *tbl8;  /* max_tbl8_groups * 256 entries */
	struct lpm_ctl *ctl;
};

/*
 * Create an empty table for up to @max_routes routes (1 .. LPM_ROUTES_MAX) of which the routes
 * longer than /24 may spread over up to @max_tbl8_groups distinct /24s (0 .. LPM_TBL8_GROUPS_MAX;
 * each group costs 768 bytes). The table takes about 48 MiB plus the groups, allocated and
 * touched here so that lookups never fault.
 * Returns 0 and the table in *@out, -EINVAL for a bad limit, -ENOMEM.
 */
int lpm_create(unsigned max_routes, unsigned max_tbl8_groups, struct lpm **out);

/* Free a table (NULL is allowed). */
void lpm_free(struct lpm *lpm);

/*
 * Add the route @ip/@depth -> @next_hop. @ip is in host byte order; its bits beyond @depth are
 * ignored. Depth 0 is the default route. Adding a prefix that is already present replaces its
 * next hop (and uses no new slot or group).
 * Returns 0; -EINVAL if @depth > 32 or @next_hop > LPM_NEXT_HOP_MAX; -ENOSPC if the route
 * slots or the tbl8 groups are exhausted. On error the table is unchanged.
 */
int lpm_add(struct lpm *lpm, uint32_t ip, uint8_t depth, uint16_t next_hop);

/*
 * Delete the route @ip/@depth (bits beyond @depth ignored). Addresses it covered fall back to
 * the longest remaining shorter prefix that covers them, or to no route; tbl8 groups that no
 * longer hold a route longer than /24 are released.
 * Returns 0, or -ENOENT if there is no such route (also for @depth > 32).
 */
int lpm_delete(struct lpm *lpm, uint32_t ip, uint8_t depth);

/* Number of routes in the table and of tbl8 groups in use, for statistics and tests. */
unsigned lpm_route_count(const struct lpm *lpm);
unsigned lpm_tbl8_used(const struct lpm *lpm);

/*
 * Look up @ip (host byte order). Returns 0 and the next hop of the longest matching prefix in
 * *@next_hop, or -ENOENT if no route matches (*@next_hop untouched). Fast path: no argument
 * checks, one or two memory reads.
 */
static inline int lpm_lookup(const struct lpm *lpm, uint32_t ip, uint16_t *next_hop)
{
	uint16_t e = lpm->tbl24[ip >> 8];

	if (e & LPM_ENTRY_EXT)
		e = lpm->tbl8[((uint32_t)(e & ~LPM_ENTRY_EXT) << 8) | (ip & 0xff)];
	if (e == 0)
		return -ENOENT;
	*next_hop = (uint16_t)(e - 1);
	return 0;
}

/*
 * Look up @n addresses: @hops[i] gets the next hop for @ips[i], or LPM_NO_ROUTE. Returns the
 * number of addresses that had a route. No argument checks.
 */
unsigned lpm_lookup_bulk(const struct lpm *lpm, const uint32_t *ips, uint16_t *hops, unsigned n);

#endif
