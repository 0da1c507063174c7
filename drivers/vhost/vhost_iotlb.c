/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vhost control plane: the device IOTLB. With VIRTIO_F_ACCESS_PLATFORM every address the
 * frontend gives (the vring addresses of SET_VRING_ADDR, the descriptors' buffer and
 * indirect table addresses) is an IOVA, an address behind the guest's IOMMU. The frontend
 * tells us what an IOVA range maps to (IOTLB_MSG update: the range, the frontend virtual
 * address of its first byte, the device's access), and when that mapping ends (IOTLB_MSG
 * invalidate); we ask for a translation we lack with a miss on the backend's request
 * channel (BACKEND_IOTLB_MSG), and the frontend answers with an update.
 *
 * The port keeps at most VHOST_IOTLB_MAX entries, disjoint: an update replaces the entries
 * it overlaps and, when the cache is full, the oldest. Each message is checked before it
 * changes anything (type, access, size not 0, no range that wraps, the frontend range
 * inside one region of the memory table); a bad one disconnects the frontend.
 *
 * The data path never reads the cache: each queue translates through its own table
 * (struct vhost_mtab), the entries that give its buffers the access they need (guest Tx
 * vrings: read; guest Rx vrings: write), filled at the vring start. So every change (an
 * update, an invalidation that removes an entry) stops the running vrings (quiesce: no
 * burst is inside them, none uses an entry that goes), changes the cache and starts them
 * again, before the frontend has our acknowledgement: once it has, no burst reaches memory
 * through a mapping that ended. The vrings that waited for a translation start too.
 *
 * Misses: a vring whose ring lacks an entry does not start; the vring start sends the miss
 * and the vring starts when an update comes. A burst that finds no entry for a buffer
 * posts a miss in its queue's table (vhost_fail()) and wakes the control thread, which
 * sends it (vhost_iotlb_service()): one per queue until the frontend answers.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "log.h"
#include "vhost_ctl.h"

const char vhost_why_nomap[] = "descriptor address outside guest memory";
const char vhost_iotlb_wait[] = "waiting for the frontend's IOTLB update";

bool vhost_iotlb_on(const struct vhost_port *vp)
{
	return vp->features & VIRTIO_BIT(VIRTIO_F_ACCESS_PLATFORM);
}

static const char *perm_name(unsigned perm)
{
	static const char *const n[] = {"no access", "read-only", "write-only", "read-write"};

	return n[perm & 3];
}

/* The entry that holds @iova, or NULL. */
static const struct vhost_iotlb_ent *find(const struct vhost_port *vp, uint64_t iova)
{
	for (unsigned i = 0; i < vp->niotlb; i++) {
		const struct vhost_iotlb_ent *e = &vp->iotlb[i];

		if (iova - e->iova < e->size)
			return e;
	}
	return NULL;
}

/* Ask the frontend for the entry of @iova with access @perm (no wait: the answer is an
 * IOTLB_MSG update on the main socket). */
static void send_miss(struct vhost_port *vp, uint64_t iova, unsigned perm)
{
	struct {
		struct vhost_user_msg_hdr h;
		struct vhost_user_iotlb t;
	} __attribute__((packed)) msg = {
	    .h = {.request = VHOST_USER_BACKEND_IOTLB_MSG, .flags = VHOST_USER_VERSION,
		  .size = sizeof(struct vhost_user_iotlb)},
	    .t = {.iova = iova, .perm = (uint8_t)perm, .type = VHOST_USER_IOTLB_MISS},
	};

	if (vp->bfd < 0) {
		TIDE_LOG_WARN_(vp->port->name, "IOTLB miss at 0x%llx: no backend channel",
			       (unsigned long long)iova);
		return;
	}
	if (send(vp->bfd, &msg, sizeof(msg), MSG_DONTWAIT | MSG_NOSIGNAL) != (ssize_t)sizeof(msg)) {
		TIDE_LOG_WARN_(vp->port->name, "IOTLB miss at 0x%llx: backend channel: %s",
			       (unsigned long long)iova, strerror(errno));
		return;
	}
	__atomic_fetch_add(&vp->iotlb_misses, 1, __ATOMIC_RELAXED);
	TIDE_LOG_DEBUG_(vp->port->name, "IOTLB miss at 0x%llx (%s)", (unsigned long long)iova,
			perm_name(perm));
}

/*
 * A ring of @len bytes at @iova, wholly mapped with access @perm, as one range of our
 * memory (its entries may be several, if what they map follows on here). NULL with *@why:
 * vhost_iotlb_wait (a miss was sent for its first IOVA without an entry), or why it can
 * never be used.
 */
void *vhost_iotlb_ring(struct vhost_port *vp, uint64_t iova, uint64_t len, unsigned perm,
		       const char **why)
{
	uint8_t *first = NULL, *expect = NULL;
	uint64_t at = iova, left = len;

	if (len - 1 > UINT64_MAX - iova) {
		*why = "ring wraps around the IOVA space";
		return NULL;
	}
	while (left > 0) {
		const struct vhost_iotlb_ent *e = find(vp, at);
		uint64_t off, k;
		uint8_t *h;

		if (e == NULL) {
			send_miss(vp, at, perm);
			*why = vhost_iotlb_wait;
			return NULL;
		}
		if ((e->perm & perm) != perm) {
			*why = perm == VHOST_USER_ACCESS_RO ? "ring IOVA mapped without read access"
							    : "ring IOVA mapped without write access";
			return NULL;
		}
		off = at - e->iova;
		k = e->size - off < left ? e->size - off : left;
		h = vhost_uva_to_host(vp, e->uaddr + off, k);
		if (h == NULL) {
			*why = "ring IOVA maps memory outside the memory table";
			return NULL;
		}
		if (first == NULL)
			first = h;
		else if (h != expect) {
			*why = "ring spans IOTLB entries that are not contiguous in memory";
			return NULL;
		}
		expect = h + k;
		at += k;
		left -= k;
	}
	return first;
}

/*
 * Queue table @m: the entries that give access @perm and map memory of the memory table
 * (control thread, the queue quiescent). At most VHOST_MTAB_MAX: the cache is no larger.
 */
void vhost_iotlb_fill(const struct vhost_port *vp, struct vhost_mtab *m, unsigned perm)
{
	unsigned n = 0;

	/* @last is 0: an empty table (its entries' memory no longer wholly in the memory table)
	 * must miss, not match the memory table's region the vring start left in r[0] (guest
	 * physical addresses are not IOVAs). */
	memset(&m->r[0], 0, sizeof(m->r[0]));
	for (unsigned i = 0; i < vp->niotlb; i++) {
		const struct vhost_iotlb_ent *e = &vp->iotlb[i];
		uint8_t *h;

		if ((e->perm & perm) != perm) /* without the access: a miss, then a fault */
			continue;
		h = vhost_uva_to_host(vp, e->uaddr, e->size);
		if (h == NULL)
			continue; /* not in the current memory table */
		m->r[n].gpa = e->iova;
		m->r[n].size = e->size;
		m->r[n].host = h;
		n++;
	}
	m->n = n;
	m->last = 0;
	m->iotlb = true;
	m->miss_state = 0;
}

/*
 * Ask ahead for the guest's receive buffers (split vring @q of our Tx queue, at its start
 * or when its burst missed): a Tx burst that misses returns the packets to the
 * application, which may drop them (tide-fwd does, as testpmd does), so the buffers the
 * guest has made available are asked for before a packet needs them: one miss per 4 KiB
 * page without an entry (@skip: one asked already), at most VHOST_IOTLB_AHEAD. From the
 * used index in guest memory (the burst may run: last_avail is its own), over the entries
 * the guest made available (acquire: their descriptors are written), which it does not
 * touch until they are used. Only read here: a bad entry ends the look (the burst checks
 * it when it takes it).
 */
#define VHOST_IOTLB_AHEAD 8

void vhost_iotlb_ahead(struct vhost_port *vp, const struct vhost_vq *q, uint64_t skip)
{
	uint64_t asked[VHOST_IOTLB_AHEAD + 1] = {skip & ~4095ull};
	unsigned n = 1;
	uint16_t i = __atomic_load_n(&q->used->idx, __ATOMIC_ACQUIRE),
		 a = __atomic_load_n(&q->avail->idx, __ATOMIC_ACQUIRE);

	if (q->packed || (uint16_t)(a - i) > q->num)
		return;
	for (; i != a && n <= VHOST_IOTLB_AHEAD; i++) {
		uint16_t head = __atomic_load_n(&q->avail->ring[i & q->mask], __ATOMIC_RELAXED);
		struct vring_desc d;
		bool dup = false;

		if (head >= q->num)
			return;
		memcpy(&d, &q->desc[head], sizeof(d));
		if ((d.flags & VRING_DESC_F_INDIRECT) || find(vp, d.addr) != NULL)
			continue;
		for (unsigned k = 0; k < n && !dup; k++)
			dup = asked[k] == (d.addr & ~4095ull);
		if (dup)
			continue;
		asked[n++] = d.addr & ~4095ull;
		send_miss(vp, d.addr, VHOST_USER_ACCESS_WO);
	}
}

/* Remove the entries that overlap [iova, iova + size) (size - 1 does not wrap). */
static unsigned remove_range(struct vhost_port *vp, uint64_t iova, uint64_t size)
{
	unsigned k = 0, gone;

	for (unsigned i = 0; i < vp->niotlb; i++) {
		const struct vhost_iotlb_ent *e = &vp->iotlb[i];
		bool overlap = e->iova <= iova + (size - 1) && iova <= e->iova + (e->size - 1);

		if (!overlap)
			vp->iotlb[k++] = *e;
	}
	gone = vp->niotlb - k;
	vp->niotlb = k;
	return gone;
}

/* Why the update or invalidation @t cannot be taken, or NULL. */
static const char *iotlb_check(const struct vhost_port *vp, const struct vhost_user_iotlb *t)
{
	if (t->type != VHOST_USER_IOTLB_UPDATE && t->type != VHOST_USER_IOTLB_INVALIDATE)
		return "type is neither update nor invalidate";
	if (t->size == 0)
		return "size 0";
	if (t->size - 1 > UINT64_MAX - t->iova)
		return "IOVA range wraps around";
	if (t->type == VHOST_USER_IOTLB_INVALIDATE)
		return NULL;
	if (t->perm == 0 || t->perm > VHOST_USER_ACCESS_RW)
		return "access is not read-only, write-only or read-write";
	if (t->size - 1 > UINT64_MAX - t->uaddr)
		return "frontend address range wraps around";
	if (vhost_uva_to_host(vp, t->uaddr, t->size) == NULL)
		return "frontend address range not inside one region of the memory table";
	return NULL;
}

int vhost_msg_iotlb(struct vhost_port *vp, const struct vhost_msg *m)
{
	const struct vhost_user_iotlb *t = &m->iotlb;
	bool was[2 * VHOST_MAX_QP];
	const char *why;

	if (!vhost_iotlb_on(vp)) {
		vhost_disconnect(vp, KIND_CTL, "IOTLB_MSG without VIRTIO_F_ACCESS_PLATFORM");
		return -1;
	}
	if ((why = iotlb_check(vp, t)) != NULL) {
		char kind[16];

		snprintf(kind, sizeof(kind), "type %u", t->type);
		vhost_disconnect(vp, KIND_CTL, "IOTLB_MSG %s 0x%llx+0x%llx: %s",
				 t->type == VHOST_USER_IOTLB_UPDATE	  ? "update"
				 : t->type == VHOST_USER_IOTLB_INVALIDATE ? "invalidate"
									  : kind,
				 (unsigned long long)t->iova, (unsigned long long)t->size, why);
		return -1;
	}
	if (t->type == VHOST_USER_IOTLB_INVALIDATE) {
		/* The frontend invalidates every range the guest unmaps, cached here or not:
		 * a range we hold nothing of changes nothing (no vring stops). */
		if (find(vp, t->iova) == NULL) {
			bool any = false;

			for (unsigned i = 0; i < vp->niotlb && !any; i++)
				any = vp->iotlb[i].iova - t->iova < t->size;
			if (!any) {
				TIDE_LOG_DEBUG_(vp->port->name,
						"IOTLB invalidate 0x%llx+0x%llx: nothing held",
						(unsigned long long)t->iova,
						(unsigned long long)t->size);
				return 0;
			}
		}
		vhost_vring_stop_all(vp, was); /* before the ack: no burst uses what goes */
		remove_range(vp, t->iova, t->size);
		TIDE_LOG_DEBUG_(vp->port->name, "IOTLB invalidate 0x%llx+0x%llx: %u entries",
				(unsigned long long)t->iova, (unsigned long long)t->size,
				vp->niotlb);
		return vhost_vring_start_all(vp, NULL);
	}
	for (unsigned i = 0; i < vp->niotlb; i++) {
		const struct vhost_iotlb_ent *e = &vp->iotlb[i];

		/* The answer to a miss asked twice (a burst's and the vring start's): nothing
		 * changes, no vring stops. */
		if (e->iova == t->iova && e->size == t->size && e->uaddr == t->uaddr &&
		    e->perm == t->perm)
			return 0;
	}
	vhost_vring_stop_all(vp, was); /* the queues take the new table at their start */
	remove_range(vp, t->iova, t->size);
	if (vp->niotlb == VHOST_IOTLB_MAX) {
		/* Full: the oldest goes (the frontend answers a miss again if it is needed). */
		memmove(&vp->iotlb[0], &vp->iotlb[1], (VHOST_IOTLB_MAX - 1) * sizeof(vp->iotlb[0]));
		vp->niotlb--;
	}
	vp->iotlb[vp->niotlb++] = (struct vhost_iotlb_ent){
	    .iova = t->iova, .size = t->size, .uaddr = t->uaddr, .perm = t->perm};
	TIDE_LOG_DEBUG_(vp->port->name, "IOTLB update 0x%llx+0x%llx -> 0x%llx %s",
			(unsigned long long)t->iova, (unsigned long long)t->size,
			(unsigned long long)t->uaddr, perm_name(t->perm));
	return vhost_vring_start_all(vp, NULL);
}

int vhost_msg_set_backend_req_fd(struct vhost_port *vp, const struct vhost_msg *m)
{
	struct stat st;
	int fd;

	(void)m;
	if (!(vp->proto & VIRTIO_BIT(VHOST_USER_PROTOCOL_F_BACKEND_REQ))) {
		vhost_disconnect(vp, KIND_CTL,
				 "SET_BACKEND_REQ_FD without the BACKEND_REQ protocol feature");
		return -1;
	}
	fd = vhost_take_fd(&vp->rx, 0);
	if (fstat(fd, &st) < 0 || !S_ISSOCK(st.st_mode)) {
		close(fd);
		vhost_disconnect(vp, KIND_CTL, "SET_BACKEND_REQ_FD: the fd is not a socket");
		return -1;
	}
	os_close_fd(&vp->bfd);
	vp->bfd = fd;
	return 0;
}

/*
 * The misses the bursts posted (the control thread, woken). A miss at an IOVA the cache
 * holds without the access the queue needs is the guest's device reaching where its IOMMU
 * forbids: the frontend is disconnected with the reason. Returns -1 then.
 */
int vhost_iotlb_service(struct vhost_port *vp)
{
	for (unsigned v = 0; v < 2 * vp->queues && vp->cfd >= 0; v++) {
		struct quiesce_slot slot;
		struct vhost_vq *q;
		const struct vhost_iotlb_ent *e;
		unsigned perm = v % 2 ? VHOST_USER_ACCESS_RO : VHOST_USER_ACCESS_WO;
		uint64_t iova;

		if (!vp->vr[v].running || (q = vhost_vring_q(vp, v, &slot)) == NULL ||
		    !q->mem.iotlb)
			continue;
		/* Acquire: pairs with the release in vhost_fail(). */
		if (__atomic_load_n(&q->mem.miss_state, __ATOMIC_ACQUIRE) != 1)
			continue;
		iova = __atomic_load_n(&q->mem.miss_iova, __ATOMIC_RELAXED);
		e = find(vp, iova);
		if (e != NULL && (e->perm & perm) != perm) {
			vhost_disconnect(vp, KIND_DATA, "vring %u: device %s at IOVA 0x%llx mapped %s",
					 v, perm == VHOST_USER_ACCESS_RO ? "read" : "write",
					 (unsigned long long)iova, perm_name(e->perm));
			return -1;
		}
		if (e != NULL) {
			/* Held, with the access, but not in the queue's table: it maps memory the
			 * memory table no longer has. */
			vhost_disconnect(vp, KIND_DATA,
					 "vring %u: IOVA 0x%llx maps memory outside the memory table",
					 v, (unsigned long long)iova);
			return -1;
		}
		send_miss(vp, iova, perm);
		__atomic_store_n(&q->mem.miss_state, 2, __ATOMIC_RELAXED);
		if (v % 2 == 0)
			vhost_iotlb_ahead(vp, q, iova);
	}
	return 0;
}

void vhost_iotlb_reset(struct vhost_port *vp)
{
	vp->niotlb = 0;
	os_close_fd(&vp->bfd);
}
