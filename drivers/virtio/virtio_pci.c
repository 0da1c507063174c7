/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * virtio driver: the modern virtio-pci transport (virtio_pci.h) and the PCI port's control
 * side (open, link, Rx interrupts).
 *
 * There is no connection and no control thread: port start runs the generic bring-up
 * (virtio_dev_init: reset, ACKNOWLEDGE | DRIVER, features, FEATURES_OK read back, the rings
 * mapped for the device, each vring's size, addresses, MSI-X vector and enable, DRIVER_OK)
 * and the queues go live; port stop takes them off and resets the device, which then uses
 * no buffer any more. A queue that finds the device breaking a rule faults (virtio.h);
 * tide_port_poll_ctl() or tide_port_link_get() then logs it, counts it and resets the
 * device (link down) until the port is restarted.
 *
 * Registers are little-endian MMIO in mapped BARs; 64-bit queue addresses are written as
 * two 32-bit halves, low first (section 4.1.3.1).
 */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "osutil.h"
#include "pci.h"
#include "virtio.h"
#include "virtio_pci.h"

#define RESET_WAIT_MS	  1000

/* ---- registers ---- */

static struct virtio_pci *vpci(struct virtio_port *vp)
{
	return vp->vpci;
}

static uint8_t rd8(volatile uint8_t *b, unsigned off)
{
	return b[off];
}

static uint16_t rd16(volatile uint8_t *b, unsigned off)
{
	return *(volatile uint16_t *)(volatile void *)(b + off);
}

static uint32_t rd32(volatile uint8_t *b, unsigned off)
{
	return *(volatile uint32_t *)(volatile void *)(b + off);
}

static void wr8(volatile uint8_t *b, unsigned off, uint8_t v)
{
	b[off] = v;
}

static void wr16(volatile uint8_t *b, unsigned off, uint16_t v)
{
	*(volatile uint16_t *)(volatile void *)(b + off) = v;
}

static void wr32(volatile uint8_t *b, unsigned off, uint32_t v)
{
	*(volatile uint32_t *)(volatile void *)(b + off) = v;
}

static void wr64(volatile uint8_t *b, unsigned off, uint64_t v)
{
	wr32(b, off, (uint32_t)v);
	wr32(b, off + 4, (uint32_t)(v >> 32));
}

static bool status_reads_zero(void *common)
{
	return rd8(common, VPCI_STATUS) == 0;
}

/* Status 0 resets the device; it is done when the register reads 0 (section 4.1.4.3.2). */
static int dev_reset(struct virtio_port *vp)
{
	volatile uint8_t *cc = vpci(vp)->common;

	wr8(cc, VPCI_STATUS, 0);
	if (os_poll_ms(status_reads_zero, (void *)(uintptr_t)cc, RESET_WAIT_MS))
		return 0;
	TIDE_LOG_ERR_(vp->port->name, "the device did not come out of reset in %u ms",
		      RESET_WAIT_MS);
	return -ETIMEDOUT;
}

static uint64_t dev_features_read(volatile uint8_t *cc)
{
	uint64_t f;

	wr32(cc, VPCI_DFSELECT, 0);
	f = rd32(cc, VPCI_DF);
	wr32(cc, VPCI_DFSELECT, 1);
	return f | (uint64_t)rd32(cc, VPCI_DF) << 32;
}

/* ---- the transport ---- */

static int vp_features_get(struct virtio_port *vp, uint64_t *out)
{
	struct virtio_pci *v = vpci(vp);

	v->dev_features = dev_features_read(v->common);
	*out = v->dev_features;
	return 0;
}

static int vp_features_set(struct virtio_port *vp, uint64_t want)
{
	struct virtio_pci *v = vpci(vp);
	uint64_t f;
	int rc = vpci_features(v->dev_features, want, &f, vp->port->name);

	if (rc < 0)
		return rc;
	vp->features = f;
	wr32(v->common, VPCI_GFSELECT, 0);
	wr32(v->common, VPCI_GF, (uint32_t)f);
	wr32(v->common, VPCI_GFSELECT, 1);
	wr32(v->common, VPCI_GF, (uint32_t)(f >> 32));
	return 0;
}

/* The control queue (with VIRTIO_NET_F_MQ): a new ring on vring 2 * max_qp, polled (no
 * vector), in the layout the features chose for every queue. Before DRIVER_OK, like every
 * queue. */
static int ctrl_set(struct virtio_port *vp)
{
	struct virtio_pci *v = vpci(vp);
	volatile uint8_t *cc = v->common;
	unsigned vr = 2u * v->max_qp;
	long at;
	int rc;

	wr16(cc, VPCI_Q_SELECT, (uint16_t)vr); /* none there: size 0, refused */
	rc = vpci_queue_size_check(rd16(cc, VPCI_Q_SIZE), VPCI_CTRL_NUM, vr, vp->port->name);
	if (rc < 0)
		return rc;
	at = vpci_notify_at(&v->caps, rd16(cc, VPCI_Q_NOFF), vr, vp->port->name);
	if (at < 0)
		return (int)at;
	vpci_ctrl_init(&v->ctrl, v->ctrl.mem, vp->features & VIRTIO_BIT(VIRTIO_F_RING_PACKED));
	wr16(cc, VPCI_Q_SIZE, VPCI_CTRL_NUM);
	wr16(cc, VPCI_Q_MSIX, VPCI_NO_VECTOR);
	wr64(cc, VPCI_Q_DESC, (uintptr_t)v->ctrl.desc);
	wr64(cc, VPCI_Q_DRIVER, (uintptr_t)v->ctrl.avail);
	wr64(cc, VPCI_Q_DEVICE, (uintptr_t)v->ctrl.used);
	wr16(cc, VPCI_Q_ENABLE, 1);
	v->ctrl_notify = (volatile uint16_t *)(volatile void *)(v->notify + at);
	return 0;
}

/* One command on the control queue, waited for (VPCI_CTRL_WAIT_MS at most). */
static int ctrl_cmd(struct virtio_port *vp, uint8_t cls, uint8_t cmd, const void *data,
		    unsigned len)
{
	struct virtio_pci *v = vpci(vp);

	vpci_ctrl_post(&v->ctrl, cls, cmd, data, len);
	*v->ctrl_notify = (uint16_t)(2u * v->max_qp);
	return vpci_ctrl_wait(&v->ctrl, VPCI_CTRL_WAIT_MS, vp->port->name);
}

/* After DRIVER_OK, before the queues go live: the device takes as many queue pairs as the
 * port set up (it starts with one). */
static int vp_driver_ok(struct virtio_port *vp)
{
	struct tide_port *p = vp->port;
	unsigned n = p->nb_rxq > p->nb_txq ? p->nb_rxq : p->nb_txq;
	uint8_t pairs[2] = {(uint8_t)n, (uint8_t)(n >> 8)}; /* le16 */
	int rc;

	if (!(vp->features & VIRTIO_BIT(VIRTIO_NET_F_MQ)))
		return 0;
	rc = ctrl_cmd(vp, VIRTIO_NET_CTRL_MQ, VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET, pairs, sizeof(pairs));
	if (rc == 0)
		TIDE_LOG_INFO_(p->name, "%u queue pair%s (control queue: acked)", n, n == 1 ? "" : "s");
	return rc;
}

/* The rings' area into the IOMMU domain (the Rx pools are mapped at queue setup); the
 * config vector, which a reset cleared; the control queue. */
static int vp_mem_set(struct virtio_port *vp)
{
	struct virtio_pci *v = vpci(vp);
	int rc;

	if (!v->rings_mapped) {
		rc = pci_dma_map(vp->pci, vp->rings.base, vp->rings.len, vp->rings.huge ? 2u << 20 : 0);
		if (rc < 0) {
			TIDE_LOG_ERR_(vp->port->name, "the rings (%zu bytes at %p) cannot be mapped for the device",
				      vp->rings.len, vp->rings.base);
			return rc;
		}
		v->rings_mapped = true;
	}
	if (v->irq) {
		wr16(v->common, VPCI_MSIX_CONFIG, VPCI_VEC_CONFIG);
		if (rd16(v->common, VPCI_MSIX_CONFIG) != VPCI_VEC_CONFIG)
			TIDE_LOG_WARN_(vp->port->name, "the device refused MSI-X vector %u for config changes: no link interrupts",
				       VPCI_VEC_CONFIG);
	}
	/* The queues as the features made them: a device may add pairs once it has MQ (QEMU
	 * does, at FEATURES_OK). */
	v->num_queues = rd16(v->common, VPCI_NUM_QUEUES); /* after FEATURES_OK */
	if (vp->features & VIRTIO_BIT(VIRTIO_NET_F_MQ))
		return ctrl_set(vp);
	return 0;
}

static struct virtio_vq *vring_vq(struct virtio_port *vp, unsigned vr)
{
	struct tide_port *p = vp->port;

	return vr % 2 == 0 ? &((struct virtio_rxq *)p->rxq[vr / 2])->vq
			   : &((struct virtio_txq *)p->txq[vr / 2])->vq;
}

static int vp_queue_set(struct virtio_port *vp, unsigned vr, const struct virtio_vring_addr *a,
			int kickfd)
{
	struct virtio_pci *v = vpci(vp);
	volatile uint8_t *cc = v->common;
	const char *name = vp->port->name;
	struct virtio_vq *vq = vring_vq(vp, vr);
	uint16_t vec = VPCI_NO_VECTOR;
	long at;
	int rc;

	(void)kickfd; /* a notify is a register write */
	if (vr >= v->num_queues) {
		TIDE_LOG_ERR_(name, "vring %u: the device has %u queues", vr, v->num_queues);
		return -ENODEV;
	}
	wr16(cc, VPCI_Q_SELECT, (uint16_t)vr);
	rc = vpci_queue_size_check(rd16(cc, VPCI_Q_SIZE), a->num, vr, name);
	if (rc < 0)
		return rc;
	at = vpci_notify_at(&v->caps, rd16(cc, VPCI_Q_NOFF), vr, name);
	if (at < 0)
		return (int)at;
	wr16(cc, VPCI_Q_SIZE, (uint16_t)a->num);
	if (v->irq && vr % 2 == 0)
		vec = (uint16_t)(VPCI_VEC_RX0 + vr / 2);
	wr16(cc, VPCI_Q_MSIX, vec);
	if (rd16(cc, VPCI_Q_MSIX) != vec)
		TIDE_LOG_WARN_(name, "vring %u: the device refused MSI-X vector %u", vr, vec);
	wr64(cc, VPCI_Q_DESC, (uintptr_t)a->desc);
	wr64(cc, VPCI_Q_DRIVER, (uintptr_t)a->avail);
	wr64(cc, VPCI_Q_DEVICE, (uintptr_t)a->used);
	wr16(cc, VPCI_Q_ENABLE, 1);
	vq->notify = (volatile uint16_t *)(volatile void *)(v->notify + at);
	vq->notify_val = (uint16_t)vr;
	return 0;
}

static int vp_status_set(struct virtio_port *vp, uint8_t status)
{
	struct virtio_pci *v = vpci(vp);

	if (status == 0)
		return dev_reset(vp);
	wr8(v->common, VPCI_STATUS, status);
	return vpci_status_check(status, rd8(v->common, VPCI_STATUS), vp->features,
				 vp->port->name);
}

/* A consistent read: the generation must not change across it (section 4.1.4.3.1). */
static int vp_config_read(struct virtio_port *vp, unsigned off, void *buf, unsigned len)
{
	struct virtio_pci *v = vpci(vp);

	if (v->device == NULL || off + len > v->device_len)
		return -ENOTSUP;
	for (unsigned tries = 0; tries < 16; tries++) {
		uint8_t gen = rd8(v->common, VPCI_CFG_GEN);

		for (unsigned i = 0; i < len; i++)
			((uint8_t *)buf)[i] = rd8(v->device, off + i);
		if (rd8(v->common, VPCI_CFG_GEN) == gen)
			return 0;
	}
	return -EAGAIN;
}

static void rings_unmap(struct virtio_port *vp)
{
	struct virtio_pci *v = vpci(vp);

	if (v->rings_mapped)
		pci_dma_unmap(vp->pci, vp->rings.base);
	v->rings_mapped = false;
}

/* The device stops: reset (no more DMA), then the rings leave its IOMMU domain. */
static void dev_stop(struct virtio_port *vp)
{
	(void)dev_reset(vp); /* the device uses no buffer after this */
	rings_unmap(vp);
	if (vpci(vp)->irq)
		for (unsigned i = 0; i < vp->port->nb_rxq; i++)
			(void)pci_irq_drain(vp->pci->irq_fd[VPCI_VEC_RX0 + i]);
}

static int vp_start(struct virtio_port *vp)
{
	struct virtio_pci *v = vpci(vp);
	int rc;

	__atomic_store_n(&v->failed, false, __ATOMIC_RELAXED);
	rc = virtio_dev_init(vp);
	if (rc < 0) {
		wr8(v->common, VPCI_STATUS, rd8(v->common, VPCI_STATUS) | VIRTIO_STATUS_FAILED);
		virtio_queues_off(vp);
		dev_stop(vp);
		return rc;
	}
	TIDE_LOG_INFO_(vp->port->name, "%s: features 0x%llx", vp->pci->bdf,
		       (unsigned long long)vp->features);
	(void)virtio_pci_link(vp);
	return 0;
}

static void vp_stop(struct virtio_port *vp)
{
	virtio_queues_off(vp);
	dev_stop(vp);
}

static int vp_link_get(struct virtio_port *vp, int *up)
{
	*up = virtio_pci_link(vp);
	return 0;
}

const struct virtio_transport virtio_pci_transport = {
	.name = "virtio-pci",
	.features_get = vp_features_get,
	.features_set = vp_features_set,
	.mem_set = vp_mem_set,
	.queue_set = vp_queue_set,
	.status_set = vp_status_set,
	.driver_ok = vp_driver_ok,
	.config_read = vp_config_read,
	.start = vp_start,
	.stop = vp_stop,
	.close = virtio_pci_detach,
	.link_get = vp_link_get,
	.rx_intr_fd = virtio_pci_rxq_intr_fd,
	.any_pool = true, /* once in the IOMMU domain: virtio_pci_pool_map() at Rx queue setup */
};

/* ---- the port's control side ---- */

/* A queue the device broke a rule on. Acquire: pairs with the release in quiesce_fault(). */
static const char *fault_reason(struct virtio_port *vp, unsigned *vring)
{
	struct tide_port *p = vp->port;

	for (unsigned i = 0; i < 2 * VIRTIO_MAX_QP; i++) {
		void *q = i % 2 == 0 ? (i / 2 < p->nb_rxq ? (void *)p->rxq[i / 2] : NULL)
				     : (i / 2 < p->nb_txq ? (void *)p->txq[i / 2] : NULL);
		const char *why;

		if (q == NULL)
			continue;
		why = __atomic_load_n(i % 2 == 0 ? &((struct virtio_rxq *)q)->fault.why
						 : &((struct virtio_txq *)q)->fault.why,
				      __ATOMIC_ACQUIRE);
		if (why != NULL) {
			*vring = i;
			return why;
		}
	}
	return NULL;
}

static void link_set(struct virtio_port *vp, int up)
{
	struct virtio_pci *v = vpci(vp);

	__atomic_store_n(&vp->up, up, __ATOMIC_RELAXED);
	if (v->link_up == up)
		return;
	v->link_up = up;
	v->link_changes++;
	TIDE_LOG_INFO_(vp->port->name, "link %s", up ? "up" : "down");
	tide_port_link_changed(vp->port);
}

/* The link as the device reports it (up when it reports none; down once failed). No side
 * effect: the Rx interrupt calls of a worker read it too. */
static int link_status(struct virtio_port *vp)
{
	struct virtio_pci *v = vpci(vp);
	uint16_t st = VPCI_NET_S_LINK_UP;

	if (__atomic_load_n(&v->failed, __ATOMIC_RELAXED))
		return 0;
	if ((v->dev_features & VIRTIO_BIT(VIRTIO_NET_F_STATUS)) &&
	    vp_config_read(vp, VPCI_NET_STATUS, &st, sizeof(st)) < 0)
		return 0;
	return (st & VPCI_NET_S_LINK_UP) != 0;
}

/* The link, with its change signalled (control thread); a faulted queue first takes the
 * device down. */
int virtio_pci_link(struct virtio_port *vp)
{
	struct virtio_pci *v = vpci(vp);
	const char *why;
	unsigned vr = 0;

	if (!v->failed && (why = fault_reason(vp, &vr)) != NULL) {
		__atomic_store_n(&v->failed, true, __ATOMIC_RELAXED);
		__atomic_fetch_add(&vp->faults, 1, __ATOMIC_RELAXED);
		TIDE_LOG_WARN_(vp->port->name, "device faulted: vring %u: %s; it is reset until the port restarts",
			       vr, why);
		virtio_queues_off(vp);
		(void)dev_reset(vp);
	}
	link_set(vp, link_status(vp));
	return v->link_up;
}

/* The config-change vector fired (or not): clear it and read the link. */
int virtio_pci_poll_ctl(struct virtio_port *vp)
{
	if (vpci(vp)->irq)
		(void)pci_irq_drain(vp->pci->irq_fd[VPCI_VEC_CONFIG]);
	(void)virtio_pci_link(vp);
	return 0;
}

int virtio_pci_rxq_intr_fd(struct virtio_port *vp, unsigned qid)
{
	if (!vpci(vp)->irq)
		return -ENOTSUP;
	return link_status(vp) ? vp->pci->irq_fd[VPCI_VEC_RX0 + qid] : -ENOTCONN;
}

int virtio_pci_pool_map(struct virtio_port *vp, struct tide_pool *pool)
{
	struct tide_pool_mem mi;
	int rc;

	tide_pool_mem_info(pool, &mi);
	rc = pci_dma_map(vp->pci, mi.base, mi.len, mi.hugepages ? 2u << 20 : 0);
	if (rc < 0)
		TIDE_LOG_ERR_(vp->port->name, "pool %s (%zu bytes at %p) cannot be mapped for the device",
			      tide_pool_name(pool), mi.len, mi.base);
	return rc;
}

void virtio_pci_pool_unmap(struct virtio_port *vp, struct tide_pool *pool)
{
	struct tide_pool_mem mi;

	tide_pool_mem_info(pool, &mi);
	pci_dma_unmap(vp->pci, mi.base);
}

static volatile uint8_t *region(struct virtio_port *vp, const struct vpci_region *r)
{
	uint8_t *bar = r->found ? pci_bar(vp->pci, r->bar, NULL) : NULL;

	return bar ? bar + r->off : NULL;
}

int virtio_pci_attach(struct virtio_port *vp, const char *bdf)
{
	struct tide_port *p = vp->port;
	struct virtio_pci *v;
	uint8_t cfg[256];
	size_t bar_len[PCI_MAX_BARS] = {0};
	uint64_t f;
	int rc;

	v = calloc(1, sizeof(*v));
	if (v == NULL)
		return -ENOMEM;
	vp->vpci = v;
	v->link_up = -1;
	rc = pci_open(bdf, &vp->pci);
	if (rc < 0)
		return rc;
	if (pci_cfg_read(vp->pci, 0, cfg, sizeof(cfg)) < 0) {
		TIDE_LOG_ERR_(p->name, "cannot read the config space");
		return -EIO;
	}
	rc = vpci_caps_parse(cfg, &v->caps, p->name);
	if (rc < 0)
		return rc;
	for (unsigned t = 0; t < VPCI_NCAPS; t++)
		if (v->caps.r[t].found && bar_len[v->caps.r[t].bar] == 0 &&
		    pci_bar(vp->pci, v->caps.r[t].bar, &bar_len[v->caps.r[t].bar]) == NULL)
			bar_len[v->caps.r[t].bar] = 0;
	rc = vpci_caps_check(&v->caps, bar_len, p->name);
	if (rc < 0)
		return rc;
	v->common = region(vp, &v->caps.r[VPCI_CAP_COMMON - 1]);
	v->notify = region(vp, &v->caps.r[VPCI_CAP_NOTIFY - 1]);
	v->isr = region(vp, &v->caps.r[VPCI_CAP_ISR - 1]);
	v->device = region(vp, &v->caps.r[VPCI_CAP_DEVICE - 1]);
	v->device_len = v->caps.r[VPCI_CAP_DEVICE - 1].len;
	v->notify_len = v->caps.r[VPCI_CAP_NOTIFY - 1].len;
	rc = dev_reset(vp);
	if (rc < 0)
		return rc;
	v->dev_features = f = dev_features_read(v->common);
	v->num_queues = rd16(v->common, VPCI_NUM_QUEUES);
	wr16(v->common, VPCI_Q_SELECT, 0);
	v->max_size = rd16(v->common, VPCI_Q_SIZE);
	if (!(f & VIRTIO_BIT(VIRTIO_F_VERSION_1))) {
		TIDE_LOG_ERR_(p->name, "the device does not offer VIRTIO_F_VERSION_1 (features 0x%llx)",
			      (unsigned long long)f);
		return -ENOTSUP;
	}
	if ((rc = vpci_features(f, 0, &f, p->name)) < 0 ||
	    (rc = vpci_queue_size_check(v->max_size, p->info.min_desc, 0, p->name)) < 0)
		return rc;
	if (v->num_queues < 2) {
		TIDE_LOG_ERR_(p->name, "the device has %u queues: a receive and a transmit queue are needed",
			      v->num_queues);
		return -ENODEV;
	}
	v->max_qp = 1;
	if (vpci_has_mq(f) &&
	    vp_config_read(vp, VPCI_NET_MAX_QP, &v->max_qp, sizeof(v->max_qp)) < 0)
		v->max_qp = 0; /* no device configuration to read it from: refused below */
	rc = vpci_mq_check(f, v->max_qp, vp->queues, p->name);
	if (rc < 0)
		return rc;
	if (vpci_has_mq(f)) {
		v->ctrl.mem = aligned_alloc(VPCI_CTRL_MEM, VPCI_CTRL_MEM);
		if (v->ctrl.mem == NULL)
			return -ENOMEM;
		rc = pci_dma_map(vp->pci, v->ctrl.mem, VPCI_CTRL_MEM, 0);
		if (rc < 0) {
			TIDE_LOG_ERR_(p->name, "the control queue cannot be mapped for the device");
			return rc;
		} /* until pci_close() */
	}
	if ((v->dev_features & VIRTIO_BIT(VIRTIO_NET_F_MAC)) &&
	    vp_config_read(vp, VPCI_NET_MAC, p->info.mac, 6) < 0)
		TIDE_LOG_WARN_(p->name, "cannot read the MAC address from the device configuration");
	if ((v->dev_features & VIRTIO_BIT(VIRTIO_NET_F_MTU)) &&
	    vp_config_read(vp, VPCI_NET_MTU, &v->mtu, sizeof(v->mtu)) < 0)
		v->mtu = 0;
	/* One vector for config changes, one per Rx queue. */
	if ((rc = pci_irq_enable(vp->pci, VPCI_VEC_RX0 + vp->queues)) == 0) {
		v->irq = true;
		vp->pci->link_vector = VPCI_VEC_CONFIG;
	} else {
		TIDE_LOG_WARN_(p->name, "%u MSI-X vectors (config, one per Rx queue) cannot be had (%d; QEMU: vectors=%u): Rx interrupts and link-change interrupts are off",
			       VPCI_VEC_RX0 + vp->queues, rc, 2 * vp->queues + 2);
	}
	p->info.max_desc = v->max_size < p->info.max_desc ? v->max_size : p->info.max_desc;
	if (p->info.rx_desc_pref > p->info.max_desc)
		p->info.rx_desc_pref = p->info.tx_desc_pref = p->info.max_desc;
	p->info.needs_poll_ctl = 0; /* link_get reads the device; poll_ctl only clears the vector */
	(void)virtio_pci_link(vp);
	TIDE_LOG_INFO_(p->name, "%s: virtio-net, %u queues of up to %u descriptors, MTU %u%s", bdf,
		       v->num_queues, v->max_size, v->mtu, v->mtu ? "" : " (not reported)");
	return 0;
}

int virtio_pci_addr(const char *addr, char *bdf)
{
	if (pci_bdf_parse(addr, bdf) < 0) {
		TIDE_LOG_ERR_("virtio", "pci=%s: not a PCI address (DOMAIN:BUS:DEV.FN in hex, e.g. 0000:00:03.0)",
			      addr);
		return -EINVAL;
	}
	return 0;
}

void virtio_pci_detach(struct virtio_port *vp)
{
	if (vp->pci != NULL) {
		if (vp->vpci != NULL && vp->vpci->common != NULL)
			(void)dev_reset(vp);
		pci_close(vp->pci); /* interrupts off, bus master off, every mapping removed */
	}
	vp->pci = NULL;
	if (vp->vpci != NULL)
		free(vp->vpci->ctrl.mem);
	free(vp->vpci);
	vp->vpci = NULL;
}

const struct tide_pci_id virtio_pci_ids[] = {
	{VIRTIO_PCI_VENDOR, VIRTIO_PCI_DEV_NET},
	{0, 0},
};
