/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Memory areas behind pools. An area is one contiguous mapping: 2 MiB hugepages when the
 * system has them reserved, else normal pages with MADV_HUGEPAGE. A shared area is backed
 * by a memfd so that it can be handed to another process (memif regions) or registered with
 * the kernel (AF_XDP UMEM); its fd stays open for the life of the area.
 */
#ifndef TIDE_SRC_MEM_H
#define TIDE_SRC_MEM_H

#include <stdbool.h>
#include <stddef.h>

#define TIDE_MEM_SHARED 0x1u  /* memfd-backed, shareable */
#define TIDE_MEM_NO_HUGE 0x2u /* do not try hugepages */

struct tide_mem {
	void *base;
	size_t len;  /* mapped length (rounded up to the page size used) */
	int fd;      /* memfd of a shared area, else -1 */
	bool huge;   /* backed by 2 MiB hugepages */
};

/* Map an area of at least @len bytes. Returns 0 or -errno; on error *@m is untouched. */
int tide_mem_alloc(struct tide_mem *m, size_t len, unsigned flags, const char *name);

/* Make the fresh mapping [@base, +@len) resident now (a write to every page), so that the
 * data path that writes it first pays no page faults; tide_mem_alloc() does it itself. */
void tide_mem_prefault(void *base, size_t len);

/* Zeroed, cache-line aligned heap memory (queue structures, descriptor rings); free(). */
void *tide_zalloc_aligned(size_t len);

/* Unmap an area and close its fd. Safe on a zeroed struct with fd -1. */
void tide_mem_free(struct tide_mem *m);

#endif
