/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <fcntl.h>
#include <linux/memfd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "log.h"
#include "mem.h"

#define HUGE_2M (2u << 20)

#ifndef MAP_HUGE_2MB
#define MAP_HUGE_2MB (21 << MAP_HUGE_SHIFT)
#endif

static size_t round_up(size_t v, size_t a)
{
	return (v + a - 1) / a * a;
}

/* A shared area: memfd sized to len, sealed against shrinking (a peer may map it). */
static int map_shared(struct tide_mem *m, size_t len, bool huge, const char *name)
{
	unsigned mfd_flags = MFD_CLOEXEC | MFD_ALLOW_SEALING | (huge ? MFD_HUGETLB | MFD_HUGE_2MB : 0);
	int fd = memfd_create(name, mfd_flags);
	void *p;

	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)len) != 0)
		goto fail;
	/* hugetlbfs memfds do not support sealing; a plain one is sealed so it cannot shrink. */
	if (!huge && fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK) != 0)
		goto fail;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | (huge ? MAP_POPULATE : 0), fd, 0);
	if (p == MAP_FAILED)
		goto fail;
	m->base = p;
	m->fd = fd;
	return 0;
fail:;
	int err = -errno;
	close(fd);
	return err;
}

/*
 * Fault every page of a fresh 4 KiB-page area in now, writable: packet memory is written
 * first by a data path (a jumbo buffer's pages past its header, a ring's slots), which must
 * not pay a zero-filled page per first touch there (microseconds each: a receiver taking
 * them lets its peer's ring overflow). Hugepage areas are mapped with MAP_POPULATE.
 */
void tide_mem_prefault(void *base, size_t len)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);

	/* A write to every page, of the zeros fresh pages hold: any kernel, and emulators
	 * that accept MADV_POPULATE_WRITE without doing it. */
	for (size_t o = 0; o < len; o += pg)
		((volatile char *)base)[o] = 0;
}

static int map_private(struct tide_mem *m, size_t len, bool huge)
{
	int flags = MAP_PRIVATE | MAP_ANONYMOUS | (huge ? MAP_HUGETLB | MAP_HUGE_2MB | MAP_POPULATE : 0);
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, flags, -1, 0);

	if (p == MAP_FAILED)
		return -errno;
	m->base = p;
	m->fd = -1;
	return 0;
}

int tide_mem_alloc(struct tide_mem *m, size_t len, unsigned flags, const char *name)
{
	struct tide_mem tmp = {.fd = -1};
	bool shared = flags & TIDE_MEM_SHARED;
	int rc = -ENOMEM;

	if (len == 0)
		return -EINVAL;
	if (!(flags & TIDE_MEM_NO_HUGE)) {
		/* Hugepages only work when the administrator reserved some; failure is normal. */
		tmp.len = round_up(len, HUGE_2M);
		rc = shared ? map_shared(&tmp, tmp.len, true, name) : map_private(&tmp, tmp.len, true);
		tmp.huge = rc == 0;
	}
	if (rc != 0) {
		tmp.len = round_up(len, (size_t)sysconf(_SC_PAGESIZE));
		rc = shared ? map_shared(&tmp, tmp.len, false, name) : map_private(&tmp, tmp.len, false);
		if (rc != 0) {
			TIDE_LOG_ERR_("mem", "%s: cannot map %zu bytes: %s", name, len, strerror(-rc));
			return rc;
		}
		madvise(tmp.base, tmp.len, MADV_HUGEPAGE); /* before the faults, which it shapes */
		tide_mem_prefault(tmp.base, tmp.len);
	}
	TIDE_LOG_DEBUG_("mem", "%s: %zu bytes at %p (%s%s)", name, tmp.len, tmp.base,
			tmp.huge ? "2 MiB pages" : "4 KiB pages", shared ? ", memfd" : "");
	*m = tmp;
	return 0;
}

void *tide_zalloc_aligned(size_t len)
{
	void *p;

	if (posix_memalign(&p, 64, len) != 0)
		return NULL;
	memset(p, 0, len);
	return p;
}

void tide_mem_free(struct tide_mem *m)
{
	if (m->base)
		munmap(m->base, m->len);
	if (m->fd >= 0)
		close(m->fd);
	m->base = NULL;
	m->fd = -1;
}
