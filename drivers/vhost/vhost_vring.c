/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vhost control plane: vring life. A vring runs when the frontend has given its size,
 * addresses and kick (and enabled it, when VHOST_USER_F_PROTOCOL_FEATURES was negotiated)
 * and a memory table exists. Starting it translates the ring addresses through the memory
 * table (each ring wholly inside one region, aligned), gives the queue its copy of the
 * table and publishes the queue (live); stopping it takes the queue off and waits until no
 * burst is inside it. The requests on one vring (size, base, addresses, kick, call, enable)
 * stop it, change it and start it again when it has all it needs.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

#include <tide/lcore.h>

#include "log.h"
#include "vhost_ctl.h"

/* ---- queues: publish and quiesce ---- */

/* The queue of vring @v (even: guest Rx = our Tx queue; odd: guest Tx = our Rx queue). */
struct vhost_vq *vhost_vring_q(struct vhost_port *vp, unsigned v, struct quiesce_slot *slot)
{
	struct tide_port *p = vp->port;
	unsigned i = v / 2;

	if (v % 2 == 0) {
		struct vhost_txq *q = i < p->nb_txq ? (struct vhost_txq *)p->txq[i] : NULL;

		if (q == NULL)
			return NULL;
		*slot = (struct quiesce_slot){&q->live, &q->busy, &q->fault.why};
		return &q->vq;
	} else {
		struct vhost_rxq *q = i < p->nb_rxq ? (struct vhost_rxq *)p->rxq[i] : NULL;

		if (q == NULL)
			return NULL;
		*slot = (struct quiesce_slot){&q->live, &q->busy, &q->fault.why};
		return &q->vq;
	}
}

bool vhost_packed_ring(const struct vhost_port *vp)
{
	return vp->features & VIRTIO_BIT(VIRTIO_F_RING_PACKED);
}

/*
 * Take vring @v off its queue: quiesce_take() (live = 0, the barrier that pairs with
 * vhost_enter(), the wait until the burst is over, the fault cleared). The indices are then
 * ours to read.
 */
void vhost_vring_stop(struct vhost_port *vp, unsigned v)
{
	struct vhost_vring *vr = &vp->vr[v];
	struct quiesce_slot slot;
	struct vhost_vq *q;

	if (!vr->running)
		return;
	vr->running = false;
	q = vhost_vring_q(vp, v, &slot);
	if (q == NULL)
		return;
	quiesce_take(vp->port->name, vp->fence, &slot, 1);
	/* Packed: bits 0-14 the ring position, bit 15 its wrap counter. */
	vr->base = q->packed ? (uint16_t)(q->last_avail | (q->wrap ? VRING_PACKED_WRAP : 0))
			     : q->last_avail;
	TIDE_LOG_DEBUG_(vp->port->name,
			"vring %u stopped: last_avail %u used_idx %u avail %u used %u", v,
			q->last_avail, q->used_idx, q->avail->idx, q->used->idx);
}

void vhost_vring_stop_all(struct vhost_port *vp, bool *was)
{
	for (unsigned v = 0; v < 2 * vp->queues; v++) {
		if (was != NULL)
			was[v] = vp->vr[v].running;
		vhost_vring_stop(vp, v);
	}
}

void vhost_update_link(struct vhost_port *vp)
{
	int up = vp->vr[0].running && vp->vr[1].running;

	if (up == vp->up)
		return;
	TIDE_LOG_INFO_(vp->port->name, "link %s", up ? "up" : "down");
	__atomic_store_n(&vp->up, up, __ATOMIC_RELAXED);
	tide_port_link_changed(vp->port);
}

/*
 * A ring of @len bytes at @addr with the device access @perm: a frontend virtual address
 * through the memory table, or with the IOTLB an IOVA through it (vhost_iotlb_ring(): the
 * first problem in *@iow, later calls then return NULL at once).
 */
static void *ring_at(struct vhost_port *vp, uint64_t addr, uint64_t len, unsigned perm,
		     const char **iow)
{
	if (!vhost_iotlb_on(vp))
		return vhost_uva_to_host(vp, addr, len);
	if (*iow != NULL)
		return NULL;
	return vhost_iotlb_ring(vp, addr, len, perm, iow);
}

/* Why vring @v cannot start with these addresses, or NULL (vhost_iotlb_wait: it waits for
 * a translation). */
static const char *vring_map(struct vhost_port *vp, unsigned v, struct vhost_vq *q)
{
	struct vhost_vring *vr = &vp->vr[v];
	uint32_t n = vr->num;
	const char *iow = NULL;

	if (vhost_packed_ring(vp)) {
		/* The descriptor ring and the driver's and the device's event areas. */
		q->desc = (struct vring_desc *)ring_at(vp, vr->desc, vring_desc_bytes(n),
						       VHOST_USER_ACCESS_RW, &iow);
		q->avail = (struct vring_avail *)ring_at(vp, vr->avail,
							 sizeof(struct vring_packed_event),
							 VHOST_USER_ACCESS_RO, &iow);
		q->used = (struct vring_used *)ring_at(vp, vr->used,
						       sizeof(struct vring_packed_event),
						       VHOST_USER_ACCESS_RW, &iow);
		if (iow != NULL)
			return iow;
		if (!q->desc)
			return "descriptor ring not in guest memory";
		if (!q->avail)
			return "driver event area not in guest memory";
		if (!q->used)
			return "device event area not in guest memory";
		if ((uintptr_t)q->desc % 16 || (uintptr_t)q->avail % 4 || (uintptr_t)q->used % 4)
			return "vring address misaligned";
		if ((vr->base & ~VRING_PACKED_WRAP) >= n)
			return "base beyond the queue size";
		return NULL;
	}
	if (!tide_is_pow2(n))
		return "split ring size not a power of two";
	q->desc = (struct vring_desc *)ring_at(vp, vr->desc, vring_desc_bytes(n),
					       VHOST_USER_ACCESS_RO, &iow);
	q->avail = (struct vring_avail *)ring_at(vp, vr->avail, vring_avail_bytes(n),
						 VHOST_USER_ACCESS_RO, &iow);
	q->used = (struct vring_used *)ring_at(vp, vr->used, vring_used_bytes(n),
					       VHOST_USER_ACCESS_RW, &iow);
	if (iow != NULL)
		return iow;
	if (q->desc == NULL)
		return "descriptor table not in guest memory";
	if (q->avail == NULL)
		return "avail ring not in guest memory";
	if (q->used == NULL)
		return "used ring not in guest memory";
	if ((uintptr_t)q->desc % 16 || (uintptr_t)q->avail % 2 || (uintptr_t)q->used % 4)
		return "vring address misaligned";
	return NULL;
}

/* Start vring @v if it has everything it needs. Returns -1 if the frontend was dropped. */
int vhost_vring_try_start(struct vhost_port *vp, unsigned v)
{
	struct vhost_vring *vr = &vp->vr[v];
	bool enabled =
	    (vp->features & VIRTIO_BIT(VHOST_USER_F_PROTOCOL_FEATURES)) ? vr->enabled : true;
	struct quiesce_slot slot;
	const char *why;
	struct vhost_vq *q;

	if (vr->running || !vr->num_set || !vr->addr_set || !vr->kicked || !enabled ||
	    vp->nmap == 0)
		return 0;
	q = vhost_vring_q(vp, v, &slot);
	if (q == NULL) {
		/* A vring of a queue the application did not set up: nothing polls it. */
		return 0;
	}
	if ((why = vring_map(vp, v, q)) != NULL) {
		if (why == vhost_iotlb_wait)
			return 0; /* a miss was sent: an update starts it */
		vhost_disconnect(vp, KIND_CTL, "vring %u: %s", v, why);
		return -1;
	}
	q->num = (uint16_t)vr->num;
	q->mask = (uint16_t)(vr->num - 1);
	q->last_avail = vr->base;
	q->used_idx = vr->base;
	q->packed = vhost_packed_ring(vp);
	q->wrap = false;
	if (q->packed) {
		/* Every buffer taken was completed: the used position is the avail one. */
		q->last_avail = q->used_idx = vr->base & ~VRING_PACKED_WRAP;
		q->wrap = vr->base & VRING_PACKED_WRAP;
	} else {
		/* A frontend that outlived its backend may give base 0 for rings that moved on
		 * (docs/drivers/vhost.md, "Reconnection"). The used index in its memory says
		 * what was completed: start from there (entries taken but not completed by the
		 * old backend are taken again). */
		uint16_t u = __atomic_load_n(&q->used->idx, __ATOMIC_ACQUIRE);

		if (u != vr->base) {
			TIDE_LOG_INFO_(vp->port->name,
				       "vring %u: base %u but used index %u: resuming at %u", v,
				       vr->base, u, u);
			q->last_avail = q->used_idx = u;
		}
	}
	q->mrg = vp->features & VIRTIO_BIT(VIRTIO_NET_F_MRG_RXBUF);
	q->hdr_len =
	    (vp->features & (VIRTIO_BIT(VIRTIO_NET_F_MRG_RXBUF) | VIRTIO_BIT(VIRTIO_F_VERSION_1)))
		? 12
		: 10;
	q->event_idx = vp->features & VIRTIO_BIT(VIRTIO_F_EVENT_IDX);
	q->indirect = vp->features & VIRTIO_BIT(VIRTIO_F_INDIRECT_DESC);
	q->used_per_pkt = vp->used_per_pkt;
	q->in_order = vhost_in_order(vp); /* guest Tx vrings complete by count (Rx bursts) */
	if (v % 2) {
		/* tide's Rx: the guest's transmit headers, when it may send requests. */
		q->ol = vp->features & VIRTIO_BIT(VIRTIO_NET_F_CSUM);
		q->gfeat = 0;
		q->max_frame = (vp->features & (VIRTIO_BIT(VIRTIO_NET_F_HOST_TSO4) |
						VIRTIO_BIT(VIRTIO_NET_F_HOST_TSO6)))
				       ? VHOST_MAX_GSO_PKT
				       : VHOST_MAX_PKT;
	} else {
		/* tide's Tx: what the guest takes of the packets' requests. */
		uint64_t f = vp->features;

		q->ol = false;
		q->gfeat =
		    (uint8_t)(((f & VIRTIO_BIT(VIRTIO_NET_F_GUEST_CSUM)) ? VHOST_G_CSUM : 0) |
			      ((f & VIRTIO_BIT(VIRTIO_NET_F_GUEST_TSO4)) ? VHOST_G_TSO4 : 0) |
			      ((f & VIRTIO_BIT(VIRTIO_NET_F_GUEST_TSO6)) ? VHOST_G_TSO6 : 0) |
			      ((f & VIRTIO_BIT(VIRTIO_NET_F_GUEST_ECN)) ? VHOST_G_ECN : 0));
	}
	q->callfd = vr->callfd;
	q->mem.n = vp->nmap;
	q->mem.last = 0;
	q->mem.iotlb = false;
	for (unsigned i = 0; i < vp->nmap; i++) {
		q->mem.r[i].gpa = vp->map[i].gpa;
		q->mem.r[i].size = vp->map[i].size;
		q->mem.r[i].host = vp->map[i].host;
	}
	/* With the IOTLB, buffers are IOVAs: the entries with the access this queue's buffers
	 * need (it reads the guest's Tx buffers, writes its Rx buffers). */
	if (vhost_iotlb_on(vp)) {
		vhost_iotlb_fill(vp, &q->mem, v % 2 ? VHOST_USER_ACCESS_RO : VHOST_USER_ACCESS_WO);
		if (v % 2 == 0)
			vhost_iotlb_ahead(vp, q, 0);
	}
	/* We poll: ask the driver not to kick (with event index, avail_event is left alone,
	 * so it kicks at most once per index wrap; packed: the device event area). */
	if (q->packed)
		__atomic_store_n(&((struct vring_packed_event *)(void *)q->used)->flags,
				 VRING_PACKED_EVENT_F_DISABLE, __ATOMIC_RELAXED);
	else if (!q->event_idx)
		__atomic_store_n(&q->used->flags, VRING_USED_F_NO_NOTIFY, __ATOMIC_RELAXED);
	*slot.fault = NULL;
	vr->running = true;
	TIDE_LOG_DEBUG_(vp->port->name, "vring %u start: last_avail %u avail %u used %u", v,
			q->last_avail, q->avail->idx, q->used->idx);
	/* Release: pairs with the acquire load of live in vhost_enter(); the burst takes the
	 * layout from the value. */
	__atomic_store_n(slot.live, q->packed ? VHOST_LIVE_PACKED : VHOST_LIVE_SPLIT, __ATOMIC_RELEASE);
	return 0;
}

int vhost_vring_start_all(struct vhost_port *vp, const bool *was)
{
	for (unsigned v = 0; v < 2 * vp->queues; v++)
		if ((was == NULL || was[v]) && vhost_vring_try_start(vp, v) < 0)
			return -1;
	return 0;
}

void vhost_vrings_reset(struct vhost_port *vp)
{
	vhost_vring_stop_all(vp, NULL);
	for (unsigned v = 0; v < 2 * VHOST_MAX_QP; v++) {
		struct vhost_vring *vr = &vp->vr[v];

		os_close_fd(&vr->kickfd);
		os_close_fd(&vr->callfd);
		memset(vr, 0, sizeof(*vr));
		vr->kickfd = vr->callfd = -1;
	}
}

/*
 * Why the call fd @fd cannot be used, or NULL. Bursts write it to notify the guest, and a
 * burst must never block: only an eventfd is taken (a pipe may block, or raise SIGPIPE once
 * its reader is gone, and a file notifies nobody), and it is made non-blocking: a write
 * that would overflow the counter then fails with EAGAIN (counted:
 * tide_vhost_info.call_errors), where the counter, full, is readable and has woken the
 * guest already. O_NONBLOCK belongs to the file description, which the frontend shares
 * (what that means for frontends: docs/drivers/vhost.md, "Notifications never block").
 */
static const char *call_fd_check(int fd)
{
	char link[64], what[32];
	ssize_t n;
	int fl;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, what, sizeof(what) - 1);
	if (n < 0)
		return "cannot tell whether the call fd is an eventfd (no /proc)";
	what[n] = '\0';
	if (strcmp(what, "anon_inode:[eventfd]") != 0)
		return "call fd is not an eventfd";
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || (!(fl & O_NONBLOCK) && fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0))
		return "cannot make the call eventfd non-blocking";
	return NULL;
}

/* SET_VRING_KICK / CALL / ERR: an fd, or none with the no-fd flag (checked by the decode). */
int vhost_msg_set_vring_fd(struct vhost_port *vp, const struct vhost_msg *m)
{
	unsigned v = m->vring;
	struct vhost_vring *vr = &vp->vr[v];
	int fd = m->nofd ? -1 : vhost_take_fd(&vp->rx, 0);

	switch (m->h.request) {
	case VHOST_USER_SET_VRING_KICK:
		os_close_fd(&vr->kickfd);
		vr->kickfd = fd; /* we poll: kept only so that the frontend's writes succeed */
		vr->kicked = true;
		return vhost_vring_try_start(vp, v);
	case VHOST_USER_SET_VRING_CALL: {
		bool was = vr->running;
		const char *why = fd >= 0 ? call_fd_check(fd) : NULL;

		if (why != NULL) {
			close(fd);
			vhost_disconnect(vp, KIND_CTL, "SET_VRING_CALL: vring %u: %s", v, why);
			return -1;
		}
		vhost_vring_stop(vp, v);
		os_close_fd(&vr->callfd);
		vr->callfd = fd;
		return was ? vhost_vring_try_start(vp, v) : 0;
	}
	default: /* SET_VRING_ERR: we never report vring errors */
		os_close_fd(&fd);
		return 0;
	}
}

int vhost_msg_set_vring_num(struct vhost_port *vp, const struct vhost_msg *m)
{
	unsigned v = m->vring;
	uint32_t num = m->st.num;

	/* Packed rings may have any size (virtio 1.1+); split ones a power of two (checked
	 * again at the vring start: the layout may change after this). */
	if (num == 0 || num > VRING_MAX_SIZE || (!vhost_packed_ring(vp) && !tide_is_pow2(num))) {
		vhost_disconnect(
		    vp, KIND_CTL,
		    "SET_VRING_NUM: vring %u size %u (1..%u, a power of two for a split ring)", v,
		    num, VRING_MAX_SIZE);
		return -1;
	}
	vhost_vring_stop(vp, v);
	vp->vr[v].num = num;
	vp->vr[v].num_set = true;
	return vhost_vring_try_start(vp, v);
}

int vhost_msg_set_vring_base(struct vhost_port *vp, const struct vhost_msg *m)
{
	unsigned v = m->vring;
	uint32_t num = m->st.num;

	/* Packed: bits 16-31 may carry the used position, which is ours the same as the
	 * avail one (bits 0-15; checked at the vring start). */
	if (vhost_packed_ring(vp))
		num &= UINT16_MAX;
	if (num > UINT16_MAX) {
		vhost_disconnect(vp, KIND_CTL, "SET_VRING_BASE: vring %u base %u above 65535", v,
				 num);
		return -1;
	}
	vhost_vring_stop(vp, v);
	vp->vr[v].base = (uint16_t)num;
	return vhost_vring_try_start(vp, v);
}

int vhost_msg_get_vring_base(struct vhost_port *vp, const struct vhost_msg *m)
{
	struct vhost_user_vring_state st = m->st;
	unsigned v = m->vring;

	vhost_vring_stop(vp, v);
	/* The ring is stopped until the next kick. */
	vp->vr[v].kicked = false;
	st.num = vp->vr[v].base;
	if (vhost_packed_ring(vp)) /* the used position and wrap in bits 16-31: the same */
		st.num |= st.num << 16;
	vhost_update_link(vp);
	return vhost_send_reply(vp, m->h.request, &st, sizeof(st)) < 0 ? -1 : 1;
}

int vhost_msg_set_vring_addr(struct vhost_port *vp, const struct vhost_msg *m)
{
	unsigned v = m->vring;

	vhost_vring_stop(vp, v);
	vp->vr[v].desc = m->ad.desc;
	vp->vr[v].avail = m->ad.avail;
	vp->vr[v].used = m->ad.used;
	vp->vr[v].addr_set = true;
	return vhost_vring_try_start(vp, v);
}

int vhost_msg_set_vring_enable(struct vhost_port *vp, const struct vhost_msg *m)
{
	unsigned v = m->vring;

	if (m->st.num > 1) {
		vhost_disconnect(vp, KIND_CTL, "SET_VRING_ENABLE: vring %u state %u (0 or 1)", v,
				 m->st.num);
		return -1;
	}
	vp->vr[v].enabled = m->st.num;
	if (m->st.num)
		return vhost_vring_try_start(vp, v);
	vhost_vring_stop(vp, v);
	return 0;
}
