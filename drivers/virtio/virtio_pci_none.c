/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * virtio driver without the PCI layer (no VFIO on this system): virtio:pci=... is refused
 * and no PCI ID is claimed. The vhost-user transport is unaffected.
 */
#include <errno.h>

#include "log.h"
#include "virtio.h"
#include "virtio_pci.h"

const struct tide_pci_id virtio_pci_ids[] = {{0, 0}};

/* Never reached: virtio_pci_attach() refuses first. */
const struct virtio_transport virtio_pci_transport = {.name = "virtio-pci (not built)"};

int virtio_pci_attach(struct virtio_port *vp, const char *bdf)
{
	(void)vp;
	TIDE_LOG_ERR_("virtio", "pci=%s: this build of tide has no PCI layer (VFIO)", bdf);
	return -ENOTSUP;
}

int virtio_pci_addr(const char *addr, char *bdf)
{
	(void)bdf;
	TIDE_LOG_ERR_("virtio", "pci=%s: this build of tide has no PCI layer (VFIO)", addr);
	return -ENOTSUP;
}

int virtio_pci_poll_ctl(struct virtio_port *vp)
{
	(void)vp;
	return 0;
}

int virtio_pci_pool_map(struct virtio_port *vp, struct tide_pool *pool)
{
	(void)vp;
	(void)pool;
	return -ENOTSUP;
}

void virtio_pci_pool_unmap(struct virtio_port *vp, struct tide_pool *pool)
{
	(void)vp;
	(void)pool;
}
