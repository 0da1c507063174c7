/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * virtio driver: spec, port and queue operations, the generic device bring-up over a
 * transport (virtio_dev_init) and the driver's counters. Design: virtio.h; data path:
 * virtio_rxtx.c, virtio_packed.c; the offload features asked for: virtio_offload.c; Rx
 * interrupts: virtio_intr.c; the transports: vhost-user and its control thread (virtio_user.c),
 * vhost-kernel (virtio_kernel.c), virtio-pci (virtio_pci.c); keys and behaviour:
 * docs/drivers/virtio.md.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>

#include <tide/offload.h>

#include "copy.h"
#include "log.h"
#include "osutil.h"
#include "virtio.h"
#include "virtio_pci.h"

#define RING_ALIGN 4096u

/* ---- queues ---- */

static int virtio_rxq_setup(struct tide_port *p, unsigned qid, unsigned nb_desc,
			    struct tide_pool *pool, const struct tide_rxq_conf *conf,
			    struct tide_rxq **out)
{
	unsigned room = tide_pktpool_data_room(pool), headroom = tide_pktpool_headroom(pool);
	struct tide_pool_mem mi;
	struct virtio_rxq *q;
	int rc;

	tide_pool_mem_info(pool, &mi);
	if (mi.fd < 0 && !virtio_vport(p)->tr->any_pool) {
		TIDE_LOG_ERR_(p->name, "Rx queue %u: pool '%s' is not shared: the device reads and writes its buffers in place, so create it with TIDE_POOL_F_SHARED",
			      qid, tide_pool_name(pool));
		return -EINVAL;
	}
	if (headroom < VIRTIO_HDR_LEN || room == 0 || room > UINT16_MAX - VIRTIO_HDR_LEN) {
		TIDE_LOG_ERR_(p->name, "Rx queue %u: pool '%s' has headroom %u and data room %u: need a headroom of %u for the virtio-net header and a data room of 1..%u",
			      qid, tide_pool_name(pool), headroom, room, VIRTIO_HDR_LEN,
			      UINT16_MAX - VIRTIO_HDR_LEN);
		return -EINVAL;
	}
	/* PCI: the device reaches any pool, once it is in its IOMMU domain. */
	if (virtio_vport(p)->pci != NULL && (rc = virtio_pci_pool_map(virtio_vport(p), pool)) < 0)
		return rc;
	q = tide_zalloc_aligned(sizeof(*q));
	if (q == NULL)
		rc = -ENOMEM;
	else
		q->slot_desc = calloc(nb_desc, sizeof(*q->slot_desc));
	if (q != NULL) {
		q->desc_slot = calloc(nb_desc, sizeof(*q->desc_slot));
		rc = q->slot_desc && q->desc_slot ? rxr_init(&q->rxr, &q->pub, nb_desc, pool, conf,
							       virtio_rx_post_ool, q)
						  : -ENOMEM;
	}
	if (rc < 0) {
		if (virtio_vport(p)->pci != NULL)
			virtio_pci_pool_unmap(virtio_vport(p), pool);
		if (q == NULL)
			return rc;
		free(q->slot_desc);
		free(q->desc_slot);
		free(q);
		return rc;
	}
	q->pool = pool;
	q->headroom = (uint16_t)headroom;
	q->buf_len = room + VIRTIO_HDR_LEN;
	q->offloads = conf->offloads;
	q->ol.lro = conf->offloads & TIDE_OFFLOAD_RX_TCP_LRO;
	q->port_id = (uint16_t)p->id;
	tide_mbuf__rx_tmpl_init(&q->tmpl, pool, q->port_id, 0);
	q->vq.kickfd = -1;
	q->fault.wakefd = -1;
	virtio_rxq_flush(q); /* identity descriptor maps, empty ring */
	*out = &q->pub;
	return 0;
}

static void virtio_rxq_release(struct tide_rxq *pub)
{
	struct virtio_rxq *q = (struct virtio_rxq *)pub;
	struct virtio_port *vp = virtio_vport(pub->port);

	if (vp->pci != NULL)
		virtio_pci_pool_unmap(vp, q->pool);
	rxr_fini(&q->rxr);
	free(q->slot_desc);
	free(q->desc_slot);
	free(q);
}

static int virtio_txq_setup(struct tide_port *p, unsigned qid, unsigned nb_desc,
			    const struct tide_txq_conf *conf, struct tide_txq **out)
{
	struct virtio_txq *q = tide_zalloc_aligned(sizeof(*q));
	struct txc_drv d = {.count_mode = true, .advance = virtio_tx_advance_ool};
	int rc;

	(void)p;
	(void)qid;
	if (q == NULL)
		return -ENOMEM;
	q->done = calloc(nb_desc, 1);
	d.drv = q;
	rc = q->done ? txc_init(&q->txc, &q->pub, nb_desc, conf, &d) : -ENOMEM;
	if (rc < 0) {
		free(q->done);
		free(q);
		return rc;
	}
	q->vq.kickfd = -1;
	q->fault.wakefd = -1;
	q->seen = VIRTIO_SEEN_NONE;
	q->offloads = conf->offloads;
	*out = &q->pub;
	return 0;
}

static void virtio_txq_release(struct tide_txq *pub)
{
	struct virtio_txq *q = (struct virtio_txq *)pub;

	txc_fini(&q->txc);
	free(q->done);
	free(q);
}

/* ---- start and stop ---- */

/* Vring @v's queue: its ring pointers, live and busy words (NULL: not set up). */
static struct virtio_vq *vring_queue(struct virtio_port *vp, unsigned v, uint32_t **live,
				     uint32_t **busy, struct virtio_fault_slot **fault)
{
	struct tide_port *p = vp->port;
	unsigned i = v / 2;

	if (v % 2 == 0) {
		struct virtio_rxq *q = i < p->nb_rxq ? (struct virtio_rxq *)p->rxq[i] : NULL;

		if (q == NULL)
			return NULL;
		*live = &q->live, *busy = &q->busy, *fault = &q->fault;
		return &q->vq;
	} else {
		struct virtio_txq *q = i < p->nb_txq ? (struct virtio_txq *)p->txq[i] : NULL;

		if (q == NULL)
			return NULL;
		*live = &q->live, *busy = &q->busy, *fault = &q->fault;
		return &q->vq;
	}
}

static unsigned nb_vrings(const struct tide_port *p)
{
	return 2 * (p->nb_rxq > p->nb_txq ? p->nb_rxq : p->nb_txq);
}

static unsigned vring_num(const struct tide_port *p, unsigned v)
{
	return v % 2 == 0 ? ((struct virtio_rxq *)p->rxq[v / 2])->rxr.size
			  : ((struct virtio_txq *)p->txq[v / 2])->txc.size;
}

static uint64_t align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) / a * a;
}

/* Lay every vring out in one shared area: descriptors, avail ring, used ring, each part
 * on cache lines of its own (the used ring is the device's to write). */
static int rings_alloc(struct virtio_port *vp)
{
	struct tide_port *p = vp->port;
	uint64_t off[2 * VIRTIO_MAX_QP][4], total = 0;
	uint32_t *live, *busy;
	struct virtio_fault_slot *fault;
	int rc;

	for (unsigned v = 0; v < nb_vrings(p); v++) {
		unsigned num;

		if (vring_queue(vp, v, &live, &busy, &fault) == NULL)
			continue;
		num = vring_num(p, v);
		off[v][0] = total;
		off[v][1] = align_up(off[v][0] + vring_desc_bytes(num), 64);
		off[v][2] = align_up(off[v][1] + vring_avail_bytes(num), 64);
		/* Tx: then one indirect table per slot, for packets of several segments. */
		off[v][3] = align_up(off[v][2] + vring_used_bytes(num), 64);
		total = align_up(off[v][3] + (v % 2 ? (uint64_t)num * VIRTIO_TX_SEGS * 16 : 0),
				 RING_ALIGN);
	}
	rc = tide_mem_alloc(&vp->rings, total, TIDE_MEM_SHARED, "tide-virtio-rings");
	if (rc < 0)
		return rc;
	for (unsigned v = 0; v < nb_vrings(p); v++) {
		uint8_t *base = vp->rings.base;
		struct virtio_vring_addr *a = &vp->va[v];
		struct virtio_vq *vq = vring_queue(vp, v, &live, &busy, &fault);

		memset(a, 0, sizeof(*a));
		if (vq == NULL)
			continue;
		a->num = vring_num(p, v);
		a->desc = (struct vring_desc *)(void *)(base + off[v][0]);
		a->avail = (struct vring_avail *)(void *)(base + off[v][1]);
		a->used = (struct vring_used *)(void *)(base + off[v][2]);
		vq->desc = a->desc;
		vq->avail = a->avail;
		vq->used = a->used;
		vq->num = (uint16_t)a->num;
		vq->mask = (uint16_t)(a->num - 1);
		if (v % 2)
			((struct virtio_txq *)p->txq[v / 2])->ind =
				(struct vring_desc *)(void *)(base + off[v][3]);
	}
	return 0;
}

static void kickfds_close(struct virtio_port *vp)
{
	for (unsigned v = 0; v < 2 * VIRTIO_MAX_QP; v++) {
		if (vp->kickfd[v] >= 0)
			close(vp->kickfd[v]);
		if (vp->callfd[v] >= 0)
			close(vp->callfd[v]);
		vp->kickfd[v] = vp->callfd[v] = -1;
	}
}

static int virtio_start(struct tide_port *p)
{
	struct virtio_port *vp = virtio_vport(p);
	uint32_t *live, *busy;
	struct virtio_fault_slot *fault;
	int rc;

	vp->fence = quiesce_kind() == 0;
	vp->npools = 0;
	for (unsigned i = 0; i < p->nb_rxq; i++) {
		struct tide_pool *pool = ((struct virtio_rxq *)p->rxq[i])->pool;
		unsigned k = 0;

		while (k < vp->npools && vp->pools[k] != pool)
			k++;
		if (k < vp->npools)
			continue;
		if (vp->npools == VIRTIO_MAX_POOLS) {
			TIDE_LOG_ERR_(p->name, "the Rx queues use more than %u pools: the memory table has room for %u besides the rings",
				      VIRTIO_MAX_POOLS, VIRTIO_MAX_POOLS);
			return -EINVAL;
		}
		vp->pools[vp->npools++] = pool;
	}
	rc = rings_alloc(vp);
	if (rc < 0)
		return rc;
	for (unsigned v = 0; v < nb_vrings(p); v++) {
		struct virtio_vq *vq = vring_queue(vp, v, &live, &busy, &fault);

		if (vq == NULL)
			continue;
		vp->kickfd[v] = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (vp->kickfd[v] < 0) {
			rc = -errno;
			TIDE_LOG_ERR_(p->name, "cannot create a kick eventfd: %s", strerror(errno));
			goto fail;
		}
		vq->kickfd = vp->kickfd[v];
		if (v % 2 == 0 && vp->tr->rx_intr &&
		    (vp->callfd[v] = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0) {
			rc = -errno;
			TIDE_LOG_ERR_(p->name, "cannot create a call eventfd: %s", strerror(errno));
			goto fail;
		}
		*live = 0;
		fault->why = NULL;
	}
	for (unsigned i = 0; i < p->nb_rxq; i++) {
		struct virtio_rxq *q = (struct virtio_rxq *)p->rxq[i];

		q->fence = vp->fence;
		q->seen = VIRTIO_SEEN_NONE;
		__atomic_store_n(&q->pub.burst, virtio_rx_fn(q), __ATOMIC_RELAXED);
	}
	for (unsigned i = 0; i < p->nb_txq; i++) {
		struct virtio_txq *q = (struct virtio_txq *)p->txq[i];

		q->fence = vp->fence;
		q->seen = VIRTIO_SEEN_NONE;
		q->npools = vp->npools;
		memcpy(q->pools, vp->pools, sizeof(q->pools));
		/* Packets the device cannot reach in place are copied into the pool of the Rx
		 * queue of the same number (or the first); none without Rx queues. */
		q->bounce = p->nb_rxq ? ((struct virtio_rxq *)p->rxq[i < p->nb_rxq ? i : 0])->pool
				      : NULL;
		/* Where a packet starts (virtio_tx_claim()): in the first pool the device can
		 * reach, or with the default headroom where it reaches any. */
		q->claim_off = copy_claims()
				   ? (uint32_t)sizeof(struct tide_mbuf) +
					 (vp->npools ? tide_pktpool_headroom(vp->pools[0])
						     : TIDE_MBUF_HEADROOM)
				   : 0;
		__atomic_store_n(&q->pub.burst, virtio_tx_fn(q), __ATOMIC_RELAXED);
	}
	rc = vp->tr->start(vp);
	if (rc == 0)
		return 0;
fail:
	kickfds_close(vp);
	tide_mem_free(&vp->rings);
	return rc;
}

static void virtio_stop(struct tide_port *p)
{
	struct virtio_port *vp = virtio_vport(p);

	vp->tr->stop(vp); /* every queue is off, the device no longer writes */
	for (unsigned i = 0; i < p->nb_rxq; i++)
		virtio_rxq_flush((struct virtio_rxq *)p->rxq[i]);
	for (unsigned i = 0; i < p->nb_txq; i++)
		virtio_txq_flush((struct virtio_txq *)p->txq[i]);
	kickfds_close(vp);
	tide_mem_free(&vp->rings);
}

/* ---- the device, over the transport (control thread) ---- */

void virtio_queues_off(struct virtio_port *vp)
{
	struct tide_port *p = vp->port;
	uint32_t *live, *busy;
	struct virtio_fault_slot *fault;
	int rc;

	for (unsigned v = 0; v < nb_vrings(p); v++)
		if (vring_queue(vp, v, &live, &busy, &fault) != NULL)
			__atomic_store_n(live, 0, __ATOMIC_RELAXED);
	/* Pair of quiesce_enter(): after the barrier a worker either sees live == 0 or shows
	 * busy until its burst ends. */
	rc = quiesce_barrier(vp->fence);
	if (rc < 0)
		quiesce_fallback(p->name, rc);
	for (unsigned v = 0; v < nb_vrings(p); v++)
		if (vring_queue(vp, v, &live, &busy, &fault) != NULL)
			while (__atomic_load_n(busy, __ATOMIC_ACQUIRE))
				tide_pause();
}

/* A vring as a new connection finds it: zeroed, we poll (no interrupts wanted), and the
 * transmit avail ring is the identity (descriptor i at position i, for good). Packed: the
 * descriptor ring zeroed, the driver event area DISABLE. (The area is laid out for the
 * split ring, which is larger: the layout is known only once the device has answered.) */
static void ring_reset(const struct virtio_vring_addr *a, bool tx, bool packed)
{
	memset(a->desc, 0, vring_desc_bytes(a->num));
	memset(a->avail, 0, vring_avail_bytes(a->num));
	memset(a->used, 0, vring_used_bytes(a->num));
	if (packed) {
		((struct vring_packed_event *)(void *)a->avail)->flags =
			VRING_PACKED_EVENT_F_DISABLE;
		return;
	}
	a->avail->flags = VRING_AVAIL_F_NO_INTERRUPT;
	if (tx)
		for (unsigned i = 0; i < a->num; i++)
			a->avail->ring[i] = (uint16_t)i;
}

struct rx_wait {
	struct virtio_port *vp;
	uint32_t live;
};

/* Whether every Rx queue's worker has run since the connection @live (or the port stops). */
static bool rx_posted(void *arg)
{
	const struct rx_wait *w = arg;
	const struct tide_port *p = w->vp->port;
	unsigned i = 0;

	/* Acquire: pairs with the release store of seen in the worker's resync. */
	while (i < p->nb_rxq &&
	       virtio_live_seen(w->live, __atomic_load_n(&((struct virtio_rxq *)p->rxq[i])->seen,
							 __ATOMIC_ACQUIRE)))
		i++;
	return i == p->nb_rxq || __atomic_load_n(&w->vp->quit, __ATOMIC_ACQUIRE);
}

/*
 * Until every Rx queue's worker has posted its receive buffers for the connection whose
 * live value is @live (its first Rx burst since), at most VIRTIO_RX_WAIT_MS: a queue
 * nobody polls does not hold the port back for longer. Port stop ends the wait.
 */
static void rx_wait_posted(struct virtio_port *vp, uint32_t live)
{
	struct rx_wait w = {.vp = vp, .live = live};

	(void)os_poll_ms(rx_posted, &w, VIRTIO_RX_WAIT_MS);
}

int virtio_dev_init(struct virtio_port *vp)
{
	const struct virtio_transport *tr = vp->tr;
	struct tide_port *p = vp->port;
	uint64_t dev, want;
	uint8_t status = VIRTIO_STATUS_ACK | VIRTIO_STATUS_DRIVER;
	uint32_t *live, *busy, gen;
	struct virtio_fault_slot *fault;
	int rc;

	if ((rc = tr->status_set(vp, 0)) < 0 || (rc = tr->status_set(vp, status)) < 0 ||
	    (rc = tr->features_get(vp, &dev)) < 0)
		return rc;
	if (!(dev & VIRTIO_BIT(VIRTIO_F_VERSION_1))) {
		TIDE_LOG_ERR_(p->name, "the device does not offer VIRTIO_F_VERSION_1 (features 0x%llx)",
			      (unsigned long long)dev);
		return -ENOTSUP;
	}
	if (vp->packed && !(dev & VIRTIO_BIT(VIRTIO_F_RING_PACKED))) {
		if (tr->packed_strict) {
			TIDE_LOG_ERR_(p->name, "packed=yes: the device (%s) does not offer VIRTIO_F_RING_PACKED (features 0x%llx)",
				      tr->name, (unsigned long long)dev);
			return -ENOTSUP;
		}
		TIDE_LOG_WARN_(p->name, "packed=yes: the device does not offer VIRTIO_F_RING_PACKED (features 0x%llx): split virtqueues",
			       (unsigned long long)dev);
	}
	want = VIRTIO_BIT(VIRTIO_F_VERSION_1) | (vp->mrg ? VIRTIO_BIT(VIRTIO_NET_F_MRG_RXBUF) : 0) |
	       (vp->packed ? VIRTIO_BIT(VIRTIO_F_RING_PACKED) : 0) |
	       (vp->event_idx ? VIRTIO_BIT(VIRTIO_F_EVENT_IDX) : 0) |
	       (vp->in_order ? VIRTIO_BIT(VIRTIO_F_IN_ORDER) : 0) |
	       VIRTIO_BIT(VIRTIO_F_INDIRECT_DESC) |
	       (nb_vrings(p) > 2 ? VIRTIO_BIT(VIRTIO_NET_F_MQ) : 0) | virtio_offload_features(vp);
	if (nb_vrings(p) > 2 && !(dev & VIRTIO_BIT(VIRTIO_NET_F_MQ))) {
		TIDE_LOG_ERR_(p->name, "%u queue pairs, but the device does not offer VIRTIO_NET_F_MQ",
			      nb_vrings(p) / 2);
		return -ENOTSUP;
	}
	vp->features = virtio_offload_deps(dev & want);
	if ((rc = tr->features_set(vp, vp->features)) < 0)
		return rc;
	status |= VIRTIO_STATUS_FEATURES_OK;
	if ((rc = tr->status_set(vp, status)) < 0 || (rc = tr->mem_set(vp)) < 0)
		return rc;
	for (unsigned v = 0; v < nb_vrings(p); v++) {
		struct virtio_vq *vq = vring_queue(vp, v, &live, &busy, &fault);

		if (vq == NULL)
			continue;
		vq->packed = vp->features & VIRTIO_BIT(VIRTIO_F_RING_PACKED);
		ring_reset(&vp->va[v], v % 2 == 1, vq->packed);
		vq->event_idx = vp->features & VIRTIO_BIT(VIRTIO_F_EVENT_IDX);
		vq->in_order = vp->features & VIRTIO_BIT(VIRTIO_F_IN_ORDER);
		vq->mrg = vp->features & VIRTIO_BIT(VIRTIO_NET_F_MRG_RXBUF);
		vq->indirect = vp->features & VIRTIO_BIT(VIRTIO_F_INDIRECT_DESC);
		if (v % 2)
			((struct virtio_txq *)p->txq[v / 2])->ol.dev = virtio_offload_dev(vp->features);
		if ((rc = tr->queue_set(vp, v, &vp->va[v], vp->kickfd[v])) < 0)
			return rc;
	}
	status |= VIRTIO_STATUS_DRIVER_OK;
	if ((rc = tr->status_set(vp, status)) < 0 ||
	    (tr->driver_ok != NULL && (rc = tr->driver_ok(vp)) < 0))
		return rc;
	/* The generation in 31 bits, the layout in the top one: never 0 nor SEEN_NONE. */
	gen = ++vp->gen;
	if (gen == 0 || gen >= VIRTIO_LIVE_PACKED)
		gen = vp->gen = 1;
	if (vp->features & VIRTIO_BIT(VIRTIO_F_RING_PACKED))
		gen |= VIRTIO_LIVE_PACKED;
	/* Release: the ring reset and the queue's fields before live; pairs with the acquire
	 * load in quiesce_enter(). Rx queues first: see virtio.h. */
	for (unsigned i = 0; i < p->nb_rxq; i++) {
		struct virtio_rxq *q = (struct virtio_rxq *)p->rxq[i];

		__atomic_store_n(&q->fault.why, NULL, __ATOMIC_RELAXED);
		__atomic_store_n(&q->live, gen, __ATOMIC_RELEASE);
	}
	if (!tr->rx_held)
		rx_wait_posted(vp, gen);
	for (unsigned i = 0; i < p->nb_txq; i++) {
		struct virtio_txq *q = (struct virtio_txq *)p->txq[i];

		__atomic_store_n(&q->fault.why, NULL, __ATOMIC_RELAXED);
		__atomic_store_n(&q->live, gen, __ATOMIC_RELEASE);
	}
	return 0;
}

/* ---- port ---- */

static void virtio_close(struct tide_port *p)
{
	struct virtio_port *vp = virtio_vport(p);

	if (vp->tr->close != NULL)
		vp->tr->close(vp);
}

static int virtio_link_get(struct tide_port *p, struct tide_link *out)
{
	struct virtio_port *vp = virtio_vport(p);

	out->speed_mbps = 0;
	if (vp->tr->link_get != NULL)
		return vp->tr->link_get(vp, &out->up);
	out->up = __atomic_load_n(&vp->up, __ATOMIC_RELAXED);
	return 0;
}

/* PCI: the link (and a faulted queue); vhost-user's control thread needs no call. */
static int virtio_poll_ctl(struct tide_port *p)
{
	struct virtio_port *vp = virtio_vport(p);

	return vp->pci ? virtio_pci_poll_ctl(vp) : 0;
}

static unsigned virtio_xstats(struct tide_port *p, const char **names, uint64_t *values,
			      unsigned max)
{
	static const char *const n[] = {
		"connects", "disconnects", "faults", "ctl_errors", "tx_bounced", "tx_kicks", "rx_kicks",
		"tx_offload_refused", "tx_sw_cksum", "tx_sw_tso",
		/* Rx headers refused, by reason (enum offload_vnet_reason, from 1) */
		"rx_hdr_flags", "rx_hdr_csum_beyond", "rx_hdr_csum_align", "rx_hdr_csum_field",
		"rx_hdr_gso_type", "rx_hdr_gso_size", "rx_hdr_gso_csum", "rx_hdr_gso_proto"};
	enum { NX = sizeof(n) / sizeof(n[0]), RX0 = 10 };
	struct virtio_port *vp = virtio_vport(p);
	uint64_t v[NX] = {
		__atomic_load_n(&vp->connects, __ATOMIC_RELAXED),
		__atomic_load_n(&vp->disconnects, __ATOMIC_RELAXED),
		__atomic_load_n(&vp->faults, __ATOMIC_RELAXED),
		__atomic_load_n(&vp->ctl_errors, __ATOMIC_RELAXED),
	};

	for (unsigned i = 0; i < p->nb_txq; i++) {
		struct virtio_txq *q = (struct virtio_txq *)p->txq[i];

		if (q == NULL)
			continue;
		v[4] += __atomic_load_n(&q->bounced, __ATOMIC_RELAXED);
		v[5] += __atomic_load_n(&q->kicks, __ATOMIC_RELAXED);
		v[7] += __atomic_load_n(&q->ol.refused, __ATOMIC_RELAXED);
		v[8] += __atomic_load_n(&q->ol.sw_cksum, __ATOMIC_RELAXED);
		v[9] += __atomic_load_n(&q->ol.sw_tso, __ATOMIC_RELAXED);
	}
	for (unsigned i = 0; i < p->nb_rxq; i++) {
		struct virtio_rxq *q = (struct virtio_rxq *)p->rxq[i];

		if (q == NULL)
			continue;
		v[6] += __atomic_load_n(&q->kicks, __ATOMIC_RELAXED);
		for (unsigned r = 1; r < OFFLOAD_VNET_NR_REASONS; r++)
			v[RX0 + r - 1] += __atomic_load_n(&q->ol.refused[r], __ATOMIC_RELAXED);
	}
	return tide_xstats_put(n, v, NX, names, values, max);
}

static void virtio_stats_reset(struct tide_port *p)
{
	struct virtio_port *vp = virtio_vport(p);

	tide_stat_zero(&vp->connects, 1);
	tide_stat_zero(&vp->disconnects, 1);
	tide_stat_zero(&vp->faults, 1);
	tide_stat_zero(&vp->ctl_errors, 1);
	for (unsigned i = 0; i < p->nb_txq; i++)
		if (p->txq[i] != NULL) {
			struct virtio_txq *q = (struct virtio_txq *)p->txq[i];

			tide_stat_zero(&q->bounced, 1);
			tide_stat_zero(&q->kicks, 1);
			tide_stat_zero(&q->ol.refused, 1);
			tide_stat_zero(&q->ol.sw_cksum, 1);
			tide_stat_zero(&q->ol.sw_tso, 1);
		}
	for (unsigned i = 0; i < p->nb_rxq; i++)
		if (p->rxq[i] != NULL) {
			struct virtio_rxq *q = (struct virtio_rxq *)p->rxq[i];

			tide_stat_zero(&q->kicks, 1);
			tide_stat_zero(q->ol.refused, OFFLOAD_VNET_NR_REASONS);
		}
}

/* Stated to the backend on the next connection (VHOST_USER_NET_SET_MTU, when offered);
 * the connection exists only while the port runs, hence mtu_stopped_only. */
static int virtio_mtu_set(struct tide_port *p, unsigned mtu)
{
	(void)mtu;
	virtio_vport(p)->mtu_given = true;
	return 0;
}

const struct tide_driver tide_driver_virtio = {
	.name = "virtio",
	.keys = "path, iface, role, pci, queues, queue_size, mrg_rxbuf, event_idx, in_order, packed",
	.open = virtio_open,
	.rxq_setup = virtio_rxq_setup,
	.txq_setup = virtio_txq_setup,
	.rxq_release = virtio_rxq_release,
	.txq_release = virtio_txq_release,
	.start = virtio_start,
	.stop = virtio_stop,
	.close = virtio_close,
	.mtu_set = virtio_mtu_set,
	.mtu_stopped_only = true,
	.link_get = virtio_link_get,
	.poll_ctl = virtio_poll_ctl,
	.rxq_intr_fd = virtio_rxq_intr_fd,
	.rxq_intr_set = virtio_rxq_intr_set,
	.stats_reset = virtio_stats_reset,
	.xstats = virtio_xstats,
	.pci_ids = virtio_pci_ids,
	.pci_open = virtio_pci_open,
};
