/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * virtio driver: Rx interrupts, for a transport with an eventfd per Rx vring (a vhost call
 * fd, an MSI-X vector's). The queue's own thread enables and disables them between its
 * bursts (tide/port.h: tide_rxq_intr_set).
 */
#include <errno.h>
#include <unistd.h>

#include "virtio.h"

int virtio_rxq_intr_fd(struct tide_port *p, unsigned qid)
{
	struct virtio_port *vp = virtio_vport(p);

	return vp->tr->rx_intr_fd != NULL ? vp->tr->rx_intr_fd(vp, qid) : -ENOTSUP;
}

/* The call eventfd of Rx queue @qid (transports with rx_intr). */
int virtio_callfd_rx(struct virtio_port *vp, unsigned qid)
{
	return vp->callfd[2 * qid] >= 0 ? vp->callfd[2 * qid] : -ENOTCONN;
}

/*
 * The device signals the queue's fd (a call eventfd, an MSI-X vector's) after it adds used
 * entries unless the avail ring's flags say VRING_AVAIL_F_NO_INTERRUPT, or with the event
 * index, when its used index passes used_event (avail->ring[num]). The queue's thread owns both words while the vring runs
 * (a new connection's ring reset sets NO_INTERRUPT again). Enabling ends with a full fence
 * before the caller's last burst: the device's half is its fence between the used index
 * store and its read of the flags, so either that burst sees the entries or the device
 * sees the interrupt wanted.
 */
static void callfd_clear(int fd)
{
	uint64_t c;

	if (read(fd, &c, sizeof(c)) < 0) {
		/* non-blocking: nothing was signalled */
	}
}

int virtio_rxq_intr_set(struct tide_port *p, unsigned qid, int enable)
{
	struct virtio_port *vp = virtio_vport(p);
	struct virtio_rxq *q = (struct virtio_rxq *)p->rxq[qid];
	uint16_t *flags, *used_event;
	uint32_t live;
	int fd;

	if (vp->tr->rx_intr_fd == NULL)
		return -ENOTSUP;
	if (q == NULL)
		return -EINVAL;
	live = quiesce_enter(&q->busy, &q->live, q->fence);
	/* Until the queue's first burst on this vring its indices are the old ones. */
	if (live == 0 || !virtio_live_seen(live, q->seen)) {
		quiesce_leave(&q->busy);
		return -ENOTCONN;
	}
	fd = vp->tr->rx_intr_fd(vp, qid);
	if (fd < 0) {
		quiesce_leave(&q->busy);
		return fd;
	}
	if (live & VIRTIO_LIVE_PACKED) {
		/* The driver event area; the stale-signal rule is the split ring's. */
		if (enable) {
			callfd_clear(fd);
			virtio_packed_rx_intr(q, true);
			__atomic_thread_fence(__ATOMIC_SEQ_CST);
		} else {
			virtio_packed_rx_intr(q, false);
			callfd_clear(fd);
		}
		quiesce_leave(&q->busy);
		return 0;
	}
	flags = &q->vq.avail->flags;
	used_event = &q->vq.avail->ring[q->vq.num];
	if (enable) {
		/* A signal from while the interrupt was off is stale (a device may signal the
		 * first used entry of a vring regardless, and with the event index once per
		 * 65536 entries): cleared first, so that a readable fd means entries since
		 * the enable; the caller's burst after enabling takes the ones before. */
		callfd_clear(fd); /* before the flag: none is stale then */
		if (q->vq.event_idx)
			__atomic_store_n(used_event, q->last_used, __ATOMIC_RELAXED);
		__atomic_fetch_and(flags, (uint16_t)~VRING_AVAIL_F_NO_INTERRUPT, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
	} else {
		/* With the event index, an event one behind what was consumed: the device's
		 * index reaches it again only after 65535 more entries. Then a pending signal
		 * is cleared. */
		if (q->vq.event_idx)
			__atomic_store_n(used_event, (uint16_t)(q->last_used - 1), __ATOMIC_RELAXED);
		__atomic_fetch_or(flags, VRING_AVAIL_F_NO_INTERRUPT, __ATOMIC_RELAXED);
		callfd_clear(fd); /* after the flag: none is pending then */
	}
	quiesce_leave(&q->busy);
	return 0;
}
