/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vhost control plane: the memory table. SET_MEM_TABLE's regions (checked by the decode
 * step: count, size, fds, overlaps) are mapped from their fds, each file long enough for
 * its range and sealed against shrinking (unless unsealed_mem=yes); the vrings that ran
 * are stopped, moved to the new table and started again. The table translates the vring
 * addresses at a vring start (vhost_uva_to_host()); each queue gets its own copy of it.
 */
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <tide/lcore.h>

#include "vhost_ctl.h"

/* Frontend virtual address range -> our address; NULL unless wholly inside one region. */
uint8_t *vhost_uva_to_host(const struct vhost_port *vp, uint64_t uva, uint64_t len)
{
	for (unsigned i = 0; i < vp->nmap; i++) {
		const struct vhost_map *m = &vp->map[i];
		uint64_t off = uva - m->uva;

		if (uva >= m->uva && off < m->size && len <= m->size - off)
			return m->host + off;
	}
	return NULL;
}

void vhost_unmap_all(struct vhost_port *vp)
{
	for (unsigned i = 0; i < vp->nmap; i++)
		munmap(vp->map[i].addr, vp->map[i].len);
	memset(vp->map, 0, sizeof(vp->map));
	vp->nmap = 0;
}

/*
 * Is the memory file @fd sealed against shrinking (after we tried to seal it)? A frontend
 * that shrinks a file under our mapping turns our next copy into SIGBUS, which takes the
 * whole process down with every other port on it. Memory that cannot be sealed is mapped
 * only when the port trusts it (unsealed_mem=yes; which frontends' memory is which:
 * docs/drivers/vhost.md, "Guest memory that can shrink").
 */
static bool sealed_shrink(int fd)
{
	int seals;

	(void)fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK); /* EPERM if sealed already: checked below */
	seals = fcntl(fd, F_GET_SEALS);
	return seals >= 0 && (seals & F_SEAL_SHRINK);
}

/*
 * A region of the memory table: mapped from its fd. The file must be at least as long as
 * the range the frontend announced, and sealed against shrinking unless @unsealed_ok (see
 * sealed_shrink()).
 */
static const char *map_region(const struct vhost_user_mem_region *r, int fd, bool unsealed_ok,
			      struct vhost_map *out)
{
	struct stat st;
	uint64_t end, align, len;
	void *a;

	if (r->size == 0)
		return "memory region of size 0";
	if (r->gpa + r->size < r->gpa || r->uva + r->size < r->uva ||
	    r->mmap_off + r->size < r->mmap_off)
		return "memory region wraps around the address space";
	end = r->mmap_off + r->size;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return "memory region fd is not a file";
	if ((uint64_t)st.st_size < end)
		return "memory region beyond the end of its file";
	align = st.st_blksize > 0 && tide_is_pow2((uint64_t)st.st_blksize) ? (uint64_t)st.st_blksize
									   : 4096;
	len = (end + align - 1) & ~(align - 1);
	if (len < end || len > SIZE_MAX)
		return "memory region too large";
	if (!sealed_shrink(fd) && !unsealed_ok)
		return "memory file cannot be sealed against shrinking (unsealed_mem=yes trusts it)";
	a = mmap(NULL, (size_t)len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
	if (a == MAP_FAILED)
		return "cannot map memory region";
	out->addr = a;
	out->len = (size_t)len;
	out->gpa = r->gpa;
	out->size = r->size;
	out->uva = r->uva;
	out->host = (uint8_t *)a + r->mmap_off;
	return NULL;
}

int vhost_msg_set_mem_table(struct vhost_port *vp, const struct vhost_msg *m)
{
	struct vhost_map nm[VHOST_USER_MAX_REGIONS];
	bool was[2 * VHOST_MAX_QP];
	unsigned n = m->mem.nregions, i;
	const char *why = NULL;

	for (i = 0; i < n && why == NULL; i++)
		why = map_region(&m->mem.r[i], vp->rx.fds.fd[i], vp->unsealed_mem, &nm[i]);
	if (why != NULL) {
		for (unsigned j = 0; j + 1 < i; j++)
			munmap(nm[j].addr, nm[j].len);
		vhost_disconnect(vp, KIND_CTL, "SET_MEM_TABLE: region %u: %s", i - 1, why);
		return -1;
	}
	/* The mappings keep the memory; the fds are closed by the message cleanup. */
	vhost_vring_stop_all(vp, was);
	vhost_unmap_all(vp);
	memcpy(vp->map, nm, n * sizeof(nm[0]));
	vp->nmap = n;
	return vhost_vring_start_all(vp, was);
}
