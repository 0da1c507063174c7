/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vhost driver: spec, port and queue operations, and the tide/vhost.h extras. The spec
 * keys are documented in include/tide/vhost.h; the design (threads, control plane) in
 * vhost.h, the data path at the top of vhost_copy.h and of each layout (vhost_split.c,
 * vhost_packed.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "mem.h"
#include "vhost.h"

static int vhost_rxq_setup(struct tide_port *p, unsigned qid, unsigned nb_desc,
			   struct tide_pool *pool, const struct tide_rxq_conf *conf,
			   struct tide_rxq **out)
{
	struct vhost_rxq *q;
	unsigned room = tide_pktpool_data_room(pool);

	(void)nb_desc;
	if (room == 0 || room > UINT16_MAX) {
		TIDE_LOG_ERR_(p->name, "Rx queue %u: pool data room %u unusable", qid, room);
		return -EINVAL;
	}
	q = tide_zalloc_aligned(sizeof(*q));
	if (q == NULL)
		return -ENOMEM;
	q->pool = pool;
	q->dataroom = (uint16_t)room;
	q->fast_max = (uint16_t)(room < VHOST_MAX_PKT ? room : VHOST_MAX_PKT);
	q->vq.max_frame = VHOST_MAX_PKT;
	q->vq.ol_en = conf != NULL ? conf->offloads : 0;
	*out = &q->pub;
	return 0;
}

static int vhost_txq_setup(struct tide_port *p, unsigned qid, unsigned nb_desc,
			   const struct tide_txq_conf *conf, struct tide_txq **out)
{
	struct vhost_port *vp = vport(p);
	struct vhost_txq *q = tide_zalloc_aligned(sizeof(*q));
	struct txc_drv d = {.slots_empty = true, .count_mode = true,
			    .advance = vhost_tx_advance_ool};
	int rc;

	(void)qid;
	if (q == NULL)
		return -ENOMEM;
	d.drv = q;
	rc = txc_init(&q->txc, &q->pub, nb_desc, conf, &d);
	if (rc < 0) {
		free(q);
		return rc;
	}
	q->free_mode = vp->txfree_loop ? VHOST_FREE_LOOP : VHOST_FREE_AFTER;
	q->vq.ol_en = conf != NULL ? conf->offloads : 0;
	*out = &q->pub;
	return 0;
}

static void vhost_rxq_release(struct tide_rxq *q)
{
	free(q);
}

/*
 * The offload features to offer, from what the queues enabled (features are negotiated
 * after queue setup, at connection time). The guest's transmit offloads (partial checksums,
 * TSO) reach the application as Tx requests on received packets: offered only when every Rx
 * queue enabled what they take (TCP and UDP checksum status; TCP_LRO too for TSO), so that
 * no packet leaves tide with a partial checksum for an application that did not ask for
 * them: the guest then does that work itself. The guest's receive offloads are always
 * offered: tide's Tx does what the guest does not take in software.
 */
static uint64_t vhost_ol_features(const struct tide_port *p)
{
	const uint64_t csum = TIDE_OFFLOAD_RX_TCP_CKSUM | TIDE_OFFLOAD_RX_UDP_CKSUM;
	uint64_t f = VIRTIO_BIT(VIRTIO_NET_F_GUEST_CSUM) | VIRTIO_BIT(VIRTIO_NET_F_GUEST_TSO4) |
		     VIRTIO_BIT(VIRTIO_NET_F_GUEST_TSO6) | VIRTIO_BIT(VIRTIO_NET_F_GUEST_ECN);
	bool rx_csum = true, rx_tso = true;

	if (!vport(p)->offloads)
		return 0;
	for (unsigned i = 0; i < p->nb_rxq; i++) {
		uint64_t en = ((const struct vhost_rxq *)p->rxq[i])->vq.ol_en;

		rx_csum = rx_csum && (en & csum) == csum;
		rx_tso = rx_tso && (en & TIDE_OFFLOAD_RX_TCP_LRO);
	}
	if (rx_csum)
		f |= VIRTIO_BIT(VIRTIO_NET_F_CSUM);
	if (rx_csum && rx_tso)
		f |= VIRTIO_BIT(VIRTIO_NET_F_HOST_TSO4) | VIRTIO_BIT(VIRTIO_NET_F_HOST_TSO6) |
		     VIRTIO_BIT(VIRTIO_NET_F_HOST_ECN);
	return f;
}

static int vhost_start(struct tide_port *p)
{
	struct vhost_port *vp = vport(p);

	vp->offered = (vp->offered & ~VHOST_OL_FEATURES) | vhost_ol_features(p);

	vp->fence = quiesce_kind() == 0;
	if (vp->fence)
		TIDE_LOG_INFO_(p->name, "no membarrier(): bursts take a full fence each");
	for (unsigned i = 0; i < p->nb_rxq; i++) {
		struct vhost_rxq *q = (struct vhost_rxq *)p->rxq[i];

		q->live = 0;
		q->fault.why = NULL;
		q->fence = vp->fence;
		q->port_id = (uint16_t)p->id;
	}
	for (unsigned i = 0; i < p->nb_txq; i++) {
		struct vhost_txq *q = (struct vhost_txq *)p->txq[i];

		q->live = 0;
		q->fault.why = NULL;
		q->fence = vp->fence;
	}
	/* The queues' bursts, for either layout (the live word says which: vhost.h). Set
	 * before the control plane starts, whose thread may start vrings before this returns;
	 * port start publishes them once we return. */
	for (unsigned i = 0; i < p->nb_rxq; i++) {
		/* The offload burst where the guest may send requests (vhost_ol_features()). */
		bool ol = vp->offered & VIRTIO_BIT(VIRTIO_NET_F_CSUM);

		__atomic_store_n(&p->rxq[i]->burst, vhost_rx_fn(ol), __ATOMIC_RELAXED);
	}
	for (unsigned i = 0; i < p->nb_txq; i++) {
		struct vhost_txq *q = (struct vhost_txq *)p->txq[i];

		__atomic_store_n(&p->txq[i]->burst, vhost_tx_fn(q->free_mode, q->vq.ol_en != 0),
				 __ATOMIC_RELAXED);
	}
	return vhost_ctl_start(vp);
}

static void vhost_stop(struct tide_port *p)
{
	/* Copy mode: the queues hold no buffers; the engine's slots are empty. */
	vhost_ctl_stop(vport(p));
	for (unsigned i = 0; i < p->nb_txq; i++)
		txc_release_all(&((struct vhost_txq *)p->txq[i])->txc);
}

static void vhost_close(struct tide_port *p)
{
	pthread_mutex_destroy(&vport(p)->lock);
}

/* The frontend states the MTU (VHOST_USER_NET_SET_MTU); the control thread stores it. */
static int vhost_mtu_get(const struct tide_port *p, unsigned *mtu)
{
	const struct vhost_port *vp = p->priv;

	*mtu = __atomic_load_n(&vp->mtu, __ATOMIC_RELAXED);
	return 0;
}

static int vhost_link_get(struct tide_port *p, struct tide_link *out)
{
	out->up = __atomic_load_n(&vport(p)->up, __ATOMIC_RELAXED);
	out->speed_mbps = 0;
	return 0;
}

static int vhost_poll_ctl(struct tide_port *p)
{
	return vhost_ctl_poll(vport(p));
}

static void vhost_stats_add(const struct tide_port *p, struct tide_port_stats *st)
{
	st->ierrors += __atomic_load_n(&vport(p)->ctl_errors, __ATOMIC_RELAXED);
}

/*
 * A locally administered unicast MAC of its own for every vhost port of every process: the
 * process id (below 2^22, the kernel's pid_max limit) in the top 22 of the 40 free bits, the
 * port's open sequence number in this process in the low 18. Two ports in one process, or
 * ports of two processes in one pid namespace, never share one.
 */
static void vhost_mac(uint8_t mac[6], uint64_t pid, unsigned seq)
{
	uint64_t v = (pid & 0x3fffff) << 18 | (seq & 0x3ffff);

	mac[0] = 0x02;
	for (unsigned i = 0; i < 5; i++)
		mac[1 + i] = (uint8_t)(v >> (32 - 8 * i));
}

static int vhost_open(struct tide_kvargs *kv, struct tide_port **ports, unsigned max)
{
	static const char *const roles[] = {"server", "client", NULL};
	static unsigned seq;
	const char *sock = tide_kvargs_get(kv, "socket");
	bool mrg, eidx, inord, indir, loop, per_pkt, packed, unsealed, fmtu, ol;
	struct vhost_port *vp;
	struct tide_port *p;
	uint64_t queues;
	unsigned role;
	char pname[64];
	int rc;

	(void)max;
	if (tide_kvargs_choice(kv, "role", roles, 0, &role) ||
	    tide_kvargs_uint(kv, "queues", 1, 1, VHOST_MAX_QP, &queues) ||
	    tide_kvargs_bool(kv, "mrg_rxbuf", true, &mrg) ||
	    tide_kvargs_bool(kv, "event_idx", true, &eidx) ||
	    tide_kvargs_bool(kv, "in_order", true, &inord) ||
	    tide_kvargs_bool(kv, "indirect", true, &indir) ||
	    tide_kvargs_bench(kv, "txfree_loop", &loop) ||
	    tide_kvargs_bench(kv, "used_per_pkt", &per_pkt) ||
	    tide_kvargs_bool(kv, "packed", true, &packed) ||
	    tide_kvargs_bool(kv, "unsealed_mem", false, &unsealed) ||
	    tide_kvargs_bool(kv, "mtu", true, &fmtu) ||
	    tide_kvargs_bool(kv, "offloads", true, &ol))
		return -EINVAL;
	if (sock == NULL) {
		TIDE_LOG_ERR_("vhost", "socket=PATH is required");
		return -EINVAL;
	}
	if (sock[0] == '\0' || strlen(sock) >= sizeof(vp->path)) {
		TIDE_LOG_ERR_("vhost", "socket=%s: need a path of 1..%zu characters", sock,
			      sizeof(vp->path) - 1);
		return -EINVAL;
	}
	snprintf(pname, sizeof(pname), "vhost%u", seq++);
	rc = tide_port_alloc(&tide_driver_vhost, pname, sizeof(*vp), &p);
	if (rc < 0)
		return rc;
	vp = p->priv;
	vp->port = p;
	vp->server = role == 0;
	snprintf(vp->path, sizeof(vp->path), "%s", sock);
	vp->queues = (unsigned)queues;
	vp->mrg = mrg;
	vp->event_idx = eidx;
	vp->in_order = inord;
	vp->indirect = indir;
	vp->txfree_loop = loop;
	vp->used_per_pkt = per_pkt;
	vp->unsealed_mem = unsealed;
	vp->offloads = ol;
	vp->lfd = vp->cfd = vp->wakefd = vp->bfd = -1;
	vp->rx.fds.max = VHOST_USER_MAX_FDS;
	pthread_mutex_init(&vp->lock, NULL);
	for (unsigned v = 0; v < 2 * VHOST_MAX_QP; v++)
		vp->vr[v].kickfd = vp->vr[v].callfd = -1;
	vp->offered = VIRTIO_BIT(VIRTIO_F_VERSION_1) | VIRTIO_BIT(VHOST_USER_F_PROTOCOL_FEATURES) |
		      (mrg ? VIRTIO_BIT(VIRTIO_NET_F_MRG_RXBUF) : 0) |
		      (eidx ? VIRTIO_BIT(VIRTIO_F_EVENT_IDX) : 0) |
		      (inord ? VIRTIO_BIT(VIRTIO_F_IN_ORDER) : 0) |
		      (indir ? VIRTIO_BIT(VIRTIO_F_INDIRECT_DESC) : 0) |
		      (queues > 1 ? VIRTIO_BIT(VIRTIO_NET_F_MQ) : 0) |
		      (packed ? VIRTIO_BIT(VIRTIO_F_RING_PACKED) : 0) |
		      VIRTIO_BIT(VIRTIO_F_ACCESS_PLATFORM) | /* taken with VHOST_IOTLB_PROTO only */
		      (fmtu ? VIRTIO_BIT(VIRTIO_NET_F_MTU) : 0);
	vp->proto_offered = VIRTIO_BIT(VHOST_USER_PROTOCOL_F_MQ) |
			    VIRTIO_BIT(VHOST_USER_PROTOCOL_F_REPLY_ACK) |
			    VIRTIO_BIT(VHOST_USER_PROTOCOL_F_BACKEND_REQ) |
			    VIRTIO_BIT(VHOST_USER_PROTOCOL_F_NET_MTU);
	tide_port_frame_limit(p, VHOST_MAX_PKT);
	vp->mtu = p->info.mtu;
	p->info.max_rxq = vp->queues;
	p->info.max_txq = vp->queues;
	p->info.min_desc = 64;
	p->info.max_desc = 4096;
	p->info.count_completion = 1;
	p->info.needs_poll_ctl = 0; /* the control thread serves the frontend */
	if (ol) {
		/* Rx: the guest's header as checksum status and Tx requests; Tx: every request,
		 * through the guest's header or in software (UDP_SEG: neither). */
		p->info.rx_offload_capa = TIDE_OFFLOAD_RX_TCP_CKSUM | TIDE_OFFLOAD_RX_UDP_CKSUM |
					  TIDE_OFFLOAD_RX_TCP_LRO;
		p->info.tx_offload_capa = TIDE_OFFLOAD_TX_IPV4_CKSUM | TIDE_OFFLOAD_TX_TCP_CKSUM |
					  TIDE_OFFLOAD_TX_UDP_CKSUM | TIDE_OFFLOAD_TX_TCP_TSO;
	}
	vhost_mac(p->info.mac, (uint64_t)getpid(), seq - 1);
	ports[0] = p;
	return 1;
}

static unsigned vhost_xstats(struct tide_port *p, const char **xnames, uint64_t *values,
			     unsigned max);

const struct tide_driver tide_driver_vhost = {
	.name = "vhost",
	.keys = "socket, role, queues, mrg_rxbuf, event_idx, in_order, indirect, packed, unsealed_mem, mtu, offloads"
		TIDE_BENCH_KEYS("txfree_loop, used_per_pkt"),
	.open = vhost_open,
	.rxq_setup = vhost_rxq_setup,
	.txq_setup = vhost_txq_setup,
	.rxq_release = vhost_rxq_release,
	.txq_release = txc_txq_release,
	.start = vhost_start,
	.stop = vhost_stop,
	.close = vhost_close,
	.mtu_get = vhost_mtu_get,
	.link_get = vhost_link_get,
	.poll_ctl = vhost_poll_ctl,
	.stats_add = vhost_stats_add,
	.xstats = vhost_xstats,
};

/* The connection counters for tide_xstats_*(), read as tide_vhost_info_get() reads them
 * (under the port lock: the control thread writes them), then the offload counters, summed
 * over the queues (the workers', read relaxed). */
static unsigned vhost_xstats(struct tide_port *p, const char **xnames, uint64_t *values,
			     unsigned max)
{
	/* rx_hdr_<reason>: guest headers refused (offload_vnet.h), the packets dropped. */
	static const char *const n[] = {
		"connects", "disconnects", "violations", "call_errors",
		"rx_hdr_flags", "rx_hdr_csum_beyond", "rx_hdr_csum_align", "rx_hdr_csum_field",
		"rx_hdr_gso_type", "rx_hdr_gso_size", "rx_hdr_gso_csum", "rx_hdr_gso_proto",
		"tx_sw_cksum", "tx_sw_gso", "tx_ol_bad", "tx_ol_nombuf", "tx_gso_partial",
		"iotlb_misses"};
	enum { NR = sizeof(n) / sizeof(n[0]), RX = 4, TX = RX + OFFLOAD_VNET_NR_REASONS - 1 };
	struct tide_vhost_info vi = {.sz = sizeof(vi)};
	uint64_t v[NR] = {0};

	_Static_assert(TX + 6 == NR, "vhost xstats names");
	tide_vhost_info_get(p, &vi);
	v[0] = vi.connects;
	v[1] = vi.disconnects;
	v[2] = vi.violations;
	v[3] = vi.call_errors;
	for (unsigned i = 0; i < p->nb_rxq && p->rxq[i] != NULL; i++) {
		const struct vhost_rxq *q = (const struct vhost_rxq *)p->rxq[i];

		for (unsigned r = 1; r < OFFLOAD_VNET_NR_REASONS; r++)
			v[RX + r - 1] += __atomic_load_n(&q->hdr_drops[r], __ATOMIC_RELAXED);
	}
	for (unsigned i = 0; i < p->nb_txq && p->txq[i] != NULL; i++) {
		const struct vhost_tx_olstats *s = &((const struct vhost_txq *)p->txq[i])->ols;

		v[TX + 0] += __atomic_load_n(&s->sw_cksum, __ATOMIC_RELAXED);
		v[TX + 1] += __atomic_load_n(&s->sw_gso, __ATOMIC_RELAXED);
		v[TX + 2] += __atomic_load_n(&s->bad, __ATOMIC_RELAXED);
		v[TX + 3] += __atomic_load_n(&s->nombuf, __ATOMIC_RELAXED);
		v[TX + 4] += __atomic_load_n(&s->gso_partial, __ATOMIC_RELAXED);
	}
	v[TX + 5] = __atomic_load_n(&vport(p)->iotlb_misses, __ATOMIC_RELAXED);
	return tide_xstats_put(n, v, NR, xnames, values, max);
}

/* ---- tide/vhost.h ---- */

int tide_vhost_info_get(struct tide_port *p, struct tide_vhost_info *out)
{
	struct tide_vhost_info *dst = out, full;
	struct vhost_port *vp;

	if (p == NULL || p->drv != &tide_driver_vhost ||
	    tide_sized_check(dst, TIDE_SIZE_UPTO(struct tide_vhost_info, reason)) < 0)
		return -EINVAL;
	vp = vport(p);
	out = &full; /* filled whole, then handed out as far as the caller's sz goes */
	memset(out, 0, sizeof(*out));
	vhost_lock(vp); /* the control thread changes what follows */
	out->connected = __atomic_load_n(&vp->up, __ATOMIC_RELAXED);
	out->server = vp->server;
	out->features = vp->features;
	out->protocol_features = vp->proto;
	for (unsigned v = 0; v < 2 * vp->queues; v++)
		out->vrings_running += vp->vr[v].running;
	out->connects = vp->connects;
	out->disconnects = __atomic_load_n(&vp->disconnects, __ATOMIC_RELAXED);
	out->violations = __atomic_load_n(&vp->violations, __ATOMIC_RELAXED);
	for (unsigned i = 0; i < p->nb_rxq && p->rxq[i] != NULL; i++)
		out->call_errors += __atomic_load_n(&((struct vhost_rxq *)p->rxq[i])->vq.call_errors,
						    __ATOMIC_RELAXED);
	for (unsigned i = 0; i < p->nb_txq && p->txq[i] != NULL; i++)
		out->call_errors += __atomic_load_n(&((struct vhost_txq *)p->txq[i])->vq.call_errors,
						    __ATOMIC_RELAXED);
	snprintf(out->reason, sizeof(out->reason), "%s", vp->reason);
	pthread_mutex_unlock(&vp->lock);
	return tide_sized_put(dst, &full, sizeof(full));
}
