/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The PCI layer: a PCI device in user space through VFIO type1 (Linux). Internal.
 *
 * Open: the device's sysfs entry must exist, be bound to vfio-pci and sit in an IOMMU group
 * that is viable (every device in it bound to vfio-pci or to no driver). The layer then
 * makes a container with the type1 IOMMU, adds the group, gets the device fd, reads the
 * config space, maps BARs on demand, resets the function when it can and turns bus
 * mastering on. Every failure is logged with what to do about it and returns -errno.
 *
 * DMA: the device sees memory only through the IOMMU, and only what the layer mapped. IOVA
 * is the virtual address (DPDK's "VA mode"), so descriptors carry plain pointers. Mappings
 * are reference-counted by base address (several queues share a pool); pci_dma_find()
 * tells whether an address range is mapped, which drivers use to refuse memory the device
 * cannot reach instead of handing it over.
 *
 * Interrupts: MSI-X vectors, each delivered to an eventfd (VFIO_DEVICE_SET_IRQS).
 *
 * Close: interrupts off, bus mastering off, function reset, every DMA mapping removed,
 * BARs unmapped, fds closed: the device is as vfio-pci handed it over.
 *
 * Not thread-safe: control thread only, except pci_dma_find() (read-only on a table that
 * changes only while the port is stopped).
 */
#ifndef TIDE_SRC_PCI_H
#define TIDE_SRC_PCI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PCI_BDF_LEN 13 /* "0000:00:03.0" and the terminator */
#define PCI_MAX_BARS 6
#define PCI_MAX_VECTORS 8
#define PCI_MAX_DMA 32

struct pci_dma {
	uintptr_t base;
	size_t len;
	size_t page;  /* the pages backing it (4 KiB, 2 MiB): DMA may not cross them as one */
	unsigned refs;
};

struct pci_dev {
	char bdf[PCI_BDF_LEN];
	uint16_t vendor, device;
	int container, group, fd;
	int group_id;
	uint64_t cfg_off;             /* config space region offset in the device fd */
	void *bar[PCI_MAX_BARS];
	size_t bar_len[PCI_MAX_BARS];
	uint16_t command;             /* the command register as open found it */
	int irq_fd[PCI_MAX_VECTORS];  /* eventfds of the MSI-X vectors, -1 when not set */
	unsigned nb_irq;
	int link_vector;              /* the vector of link changes, set by the driver; -1 */
	uint64_t iova_max;            /* highest IOVA the IOMMU domain takes */
	unsigned nb_dma;
	struct pci_dma dma[PCI_MAX_DMA];
};

/*
 * Normalise a PCI address: "DOMAIN:BUS:DEV.FN" (hex; domain 4 digits, bus 2, device 2
 * below 0x20, function 0-7) or the short "BUS:DEV.FN" (domain 0). Writes the 12-character
 * form to @out. Returns 0 or -EINVAL (not logged: callers say what the value was for).
 */
int pci_bdf_parse(const char *s, char out[PCI_BDF_LEN]);

/* Vendor and device ID of @bdf from sysfs. 0, -ENODEV (no such device, logged) or -EIO. */
int pci_id_read(const char *bdf, uint16_t *vendor, uint16_t *device);

/* Open @bdf through VFIO (see the top of this file). Returns 0 and the device, or -errno
 * (logged with the fix): -ENODEV no such device / no IOMMU group / no vfio-pci, -EBUSY
 * bound to another driver or group not viable, -EACCES no permission. */
int pci_open(const char *bdf, struct pci_dev **out);

/* Back to a clean state and free (NULL allowed). */
void pci_close(struct pci_dev *d);

/* Map BAR @i (memory BAR, mmap-able). Returns the address or NULL (logged). */
void *pci_bar(struct pci_dev *d, unsigned i, size_t *len);

/* Config space access; 0 or -EIO. */
int pci_cfg_read(struct pci_dev *d, unsigned off, void *buf, size_t len);
int pci_cfg_write(struct pci_dev *d, unsigned off, const void *buf, size_t len);

/*
 * Map [va, va + len) for device DMA at IOVA = va (read and write), memory backed by pages
 * of @page bytes (0: the system page). Page-aligned. A region
 * mapped before with the same base gains a reference (the length must match). Returns 0,
 * -ENOSPC (too many regions), -ERANGE (beyond the IOMMU's address width: IOVA = VA cannot
 * work), -EINVAL, or the ioctl's -errno (logged).
 */
int pci_dma_map(struct pci_dev *d, void *va, size_t len, size_t page);

/* Drop a reference; the mapping goes with the last one. */
void pci_dma_unmap(struct pci_dev *d, void *va);

/* The mapped region containing [va, va + len), or NULL. */
const struct pci_dma *pci_dma_find(const struct pci_dev *d, const void *va, size_t len);

/*
 * Enable @n MSI-X vectors, each signalling a new non-blocking eventfd (d->irq_fd[i]).
 * Returns 0, -ENOTSUP (the device has fewer vectors) or -errno (logged).
 */
int pci_irq_enable(struct pci_dev *d, unsigned n);

/* Disable the vectors and close their eventfds. */
void pci_irq_disable(struct pci_dev *d);

/* Read and clear an eventfd; returns the count (0 when nothing was pending). */
uint64_t pci_irq_drain(int fd);

/* Tests: where sysfs and /dev/vfio are (default "/sys/bus/pci" and "/dev/vfio"). */
void pci_set_roots(const char *sysfs_pci, const char *dev_vfio);

#endif
