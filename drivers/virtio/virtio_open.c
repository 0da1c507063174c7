/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * virtio driver: the spec and the port's creation. The keys every transport takes, the
 * transport a spec selects (pci=BDF or a claimed PCI ID: virtio-pci; a vhost-net device
 * node or iface=: vhost-kernel; else vhost-user) and its own checks, the port's initial
 * info. Keys and behaviour: docs/drivers/virtio.md.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "pci.h" /* PCI_BDF_LEN */
#include "virtio.h"
#include "virtio_pci.h"

/* The keys every transport takes. */
struct open_keys {
	uint64_t queues, qsize;
	bool mrg, eidx, inord, packed;
};

static int keys_read(struct tide_kvargs *kv, struct open_keys *k)
{
	if (tide_kvargs_uint(kv, "queues", 1, 1, VIRTIO_MAX_QP, &k->queues) ||
	    tide_kvargs_uint(kv, "queue_size", 256, 64, 4096, &k->qsize) ||
	    tide_kvargs_bool(kv, "mrg_rxbuf", true, &k->mrg) ||
	    tide_kvargs_bool(kv, "event_idx", false, &k->eidx) ||
	    tide_kvargs_bool(kv, "in_order", true, &k->inord) ||
	    tide_kvargs_bool(kv, "packed", false, &k->packed))
		return -EINVAL;
	if (!tide_is_pow2(k->qsize)) {
		TIDE_LOG_ERR_("virtio", "queue_size=%llu: need a power of two",
			      (unsigned long long)k->qsize);
		return -EINVAL;
	}
	return 0;
}

static int port_make(const struct open_keys *k, const char *name, struct tide_port **out)
{
	struct virtio_port *vp;
	struct tide_port *p;
	int rc = tide_port_alloc(&tide_driver_virtio, name, sizeof(*vp), &p);

	if (rc < 0)
		return rc;
	vp = p->priv;
	vp->port = p;
	vp->queues = (unsigned)k->queues;
	vp->queue_size = (unsigned)k->qsize;
	vp->mrg = k->mrg;
	vp->event_idx = k->eidx;
	vp->in_order = k->inord;
	vp->packed = k->packed;
	vp->lfd = vp->cfd = vp->wakefd = -1;
	for (unsigned v = 0; v < 2 * VIRTIO_MAX_QP; v++)
		vp->kickfd[v] = vp->callfd[v] = -1;
	p->info.max_rxq = vp->queues;
	p->info.max_txq = vp->queues;
	p->info.min_desc = 64;
	p->info.max_desc = 4096;
	p->info.rx_desc_pref = vp->queue_size;
	p->info.tx_desc_pref = vp->queue_size;
	p->info.count_completion = 1;
	p->info.tx_reclaim_eager = 1; /* the backend copies out of the buffers: see port.h */
	p->info.needs_poll_ctl = 0; /* a control thread, or a device read when asked */
	/* What the frontend does, whatever the device (features are negotiated at each
	 * connection or start, after the queues enabled theirs): the Rx status and large
	 * packets through the device's header; Tx checksums and TSO by the device, or in
	 * software where it lacks them (the IPv4 header checksum always). */
	p->info.rx_offload_capa = TIDE_OFFLOAD_RX_TCP_CKSUM | TIDE_OFFLOAD_RX_UDP_CKSUM |
				  TIDE_OFFLOAD_RX_TCP_LRO;
	p->info.tx_offload_capa = TIDE_OFFLOAD_TX_IPV4_CKSUM | TIDE_OFFLOAD_TX_TCP_CKSUM |
				  TIDE_OFFLOAD_TX_UDP_CKSUM | TIDE_OFFLOAD_TX_TCP_TSO;
	*out = p;
	return 0;
}

/* virtio:pci=BDF or pci:BDF on a device virtio_pci_ids claims. */
int virtio_pci_open(struct tide_kvargs *kv, const char *bdf, struct tide_port **ports,
			   unsigned max)
{
	struct open_keys k;
	struct tide_port *p;
	char pname[48];
	int rc;

	if (max < 1)
		return -ENOSPC;
	if (keys_read(kv, &k) < 0)
		return -EINVAL;
	snprintf(pname, sizeof(pname), "virtio:%s", bdf);
	rc = port_make(&k, pname, &p);
	if (rc < 0)
		return rc;
	virtio_vport(p)->tr = &virtio_pci_transport;
	rc = virtio_pci_attach(virtio_vport(p), bdf);
	if (rc < 0) {
		tide_port_free_unregistered(p);
		return rc;
	}
	ports[0] = p;
	return 1;
}

int virtio_open(struct tide_kvargs *kv, struct tide_port **ports, unsigned max)
{
	static const char *const roles[] = {"client", "server", NULL};
	static unsigned seq;
	const char *path, *iface, *addr = tide_kvargs_get(kv, "pci");
	struct virtio_port *vp;
	struct tide_port *p;
	struct open_keys k;
	char bdf[PCI_BDF_LEN];
	unsigned role;
	char pname[64];
	bool kernel;
	int rc;

	if (addr != NULL) {
		rc = virtio_pci_addr(addr, bdf);
		return rc < 0 ? rc : virtio_pci_open(kv, bdf, ports, max);
	}
	path = tide_kvargs_get(kv, "path");
	iface = tide_kvargs_get(kv, "iface");
	kernel = virtio_kernel_wanted(path, iface);
	if (tide_kvargs_choice(kv, "role", roles, 0, &role) || keys_read(kv, &k) < 0)
		return -EINVAL;
	if (path == NULL || path[0] == '\0' || strlen(path) >= sizeof(vp->path)) {
		TIDE_LOG_ERR_("virtio", "path=%s: need the vhost-user socket or the vhost-net device node (or pci=BDF), a path of 1..%zu characters",
			      path ? path : "(none)", sizeof(vp->path) - 1);
		return -EINVAL;
	}
	if (kernel && role != 0) {
		TIDE_LOG_ERR_("virtio", "role=server: vhost-kernel (path=%s) has no server side",
			      path);
		return -EINVAL;
	}
	if (kernel && virtio_kernel_check(path, iface, (unsigned)k.queues) < 0)
		return -EINVAL;
	snprintf(pname, sizeof(pname), "virtio%u", seq++);
	rc = port_make(&k, pname, &p);
	if (rc < 0)
		return rc;
	vp = p->priv;
	vp->tr = kernel ? &virtio_kernel_transport : &virtio_user_transport;
	snprintf(vp->path, sizeof(vp->path), "%s", path);
	snprintf(vp->iface, sizeof(vp->iface), "%s", iface ? iface : "tap%d");
	vp->server = role == 1;
	p->info.mac[0] = 0x02;
	p->info.mac[1] = 0xfe;
	p->info.mac[2] = 0x69; /* 'i' */
	p->info.mac[3] = vp->server;
	p->info.mac[4] = (uint8_t)(p->id >> 8);
	p->info.mac[5] = (uint8_t)seq;
	if (kernel && (rc = virtio_kernel_open(vp)) < 0) {
		tide_port_free_unregistered(p);
		return rc;
	}
	ports[0] = p;
	return 1;
}
