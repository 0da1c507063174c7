/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tide/pci.h - extras of ports on PCI devices ("pci:" and "e1000e:" ports; Linux, VFIO).
 *
 * A PCI port is opened from the device's address once the device is bound to vfio-pci
 * (scripts/tide-devbind --bind=vfio-pci 0000:00:03.0):
 *
 *   pci:0000:00:03.0[,key=value...]   the driver that claims the vendor/device ID
 *   e1000e:pci=0000:00:03.0[,...]     the e1000e driver by name (Intel 82574L, 8086:10d3)
 *
 * The device reaches memory only through the IOMMU, at IOVA = virtual address. The pool of
 * every Rx queue is mapped for it when the queue is set up. A packet sent from memory that
 * is not mapped is refused (freed and counted in oerrors), never handed to the device: a
 * Tx-only pool needs tide_pci_dma_map() first. Everything is unmapped at close.
 */
#ifndef TIDE_PCI_H
#define TIDE_PCI_H

#include <tide/common.h>
#include <tide/pool.h>
#include <tide/port.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Map @pool's memory for the device of PCI port @p, until the port closes (mapping a pool
 * twice is harmless). Control thread. Returns 0, -EINVAL (not a PCI port), -ENOSPC (too
 * many mapped regions) or the IOMMU's -errno (logged; -ENOMEM: see ulimit -l).
 */
TIDE_EXPORT int tide_pci_dma_map(struct tide_port *p, struct tide_pool *pool);

/*
 * A file descriptor that becomes readable (POLLIN) when the link of PCI port @p changes
 * (the device's link-change interrupt). Then call tide_port_poll_ctl(), which clears it,
 * and tide_port_link_get(). Returns the fd, -EINVAL (not a PCI port) or -ENOTSUP (no
 * interrupt vectors).
 */
TIDE_EXPORT int tide_pci_link_fd(struct tide_port *p);

#ifdef __cplusplus
}
#endif

#endif /* TIDE_PCI_H */
