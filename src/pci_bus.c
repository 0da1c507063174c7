/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The "pci" driver: spec pci:DOMAIN:BUS:DEV.FN[,key=value...] opens the device with the
 * driver that claims its vendor/device ID (struct tide_driver pci_ids), as DPDK's -a BDF.
 * The address is the spec's first key; the other keys go to that driver.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <tide/pci.h>

#include "driver.h"
#include "log.h"
#include "pci.h"

static const struct tide_driver *claiming_driver(uint16_t vendor, uint16_t device)
{
	const struct tide_driver *d;

	for (unsigned i = 0; (d = tide_driver_at(i)) != NULL; i++)
		for (const struct tide_pci_id *id = d->pci_ids; id && id->vendor; id++)
			if (id->vendor == vendor && id->device == device)
				return d;
	return NULL;
}

/* "e1000e 8086:10d3, ..." for the error message. */
static void claimed_list(char *buf, size_t n)
{
	const struct tide_driver *d;
	size_t used = 0;

	buf[0] = '\0';
	for (unsigned i = 0; (d = tide_driver_at(i)) != NULL; i++)
		for (const struct tide_pci_id *id = d->pci_ids; id && id->vendor; id++) {
			int k = snprintf(buf + used, n - used, "%s%s %04x:%04x", used ? ", " : "",
					 d->name, id->vendor, id->device);

			if (k < 0 || (size_t)k >= n - used)
				return;
			used += (size_t)k;
		}
}

static int pci_bus_open(struct tide_kvargs *kv, struct tide_port **ports, unsigned max)
{
	char bdf[PCI_BDF_LEN], list[256];
	const struct tide_driver *drv;
	uint16_t vendor, device;
	int rc;

	if (kv->n == 0 || strcmp(kv->kv[0].val, "yes") != 0) {
		TIDE_LOG_ERR_("pci", "the spec names no device: pci:DOMAIN:BUS:DEV.FN[,key=value...], "
			      "e.g. pci:0000:00:03.0 (scripts/tide-devbind --status lists them)");
		return -EINVAL;
	}
	if (pci_bdf_parse(kv->kv[0].key, bdf) < 0) {
		TIDE_LOG_ERR_("pci", "'%s' is not a PCI address: DOMAIN:BUS:DEV.FN in hex, e.g. "
			      "0000:00:03.0", kv->kv[0].key);
		return -EINVAL;
	}
	(void)tide_kvargs_get(kv, kv->kv[0].key);
	rc = pci_id_read(bdf, &vendor, &device);
	if (rc < 0)
		return rc;
	drv = claiming_driver(vendor, device);
	if (drv == NULL) {
		claimed_list(list, sizeof(list));
		TIDE_LOG_ERR_("pci", "%s is %04x:%04x: no driver of tide claims it (claimed: %s)",
			      bdf, vendor, device, list[0] ? list : "none built in");
		return -ENODEV;
	}
	return drv->pci_open(kv, bdf, ports, max);
}

const struct tide_driver tide_driver_pci = {
	.name = "pci",
	.keys = "DOMAIN:BUS:DEV.FN first, then the keys of the driver that claims the device "
		"(e1000e: promisc, allmulti, rx_chain; virtio: queue_size, mrg_rxbuf, event_idx, "
		"in_order)",
	.open = pci_bus_open,
};

/* ---- public extras (tide/pci.h) ---- */

/* A PCI driver's private state starts with its device (e1000e.h says so too). */
static struct pci_dev *port_pci(const struct tide_port *p)
{
	return p != NULL && p->drv->pci_ids != NULL && p->priv != NULL
		       ? *(struct pci_dev *const *)p->priv
		       : NULL;
}

int tide_pci_dma_map(struct tide_port *p, struct tide_pool *pool)
{
	struct pci_dev *d = port_pci(p);
	struct tide_pool_mem mi;

	if (d == NULL || pool == NULL)
		return -EINVAL;
	tide_pool_mem_info(pool, &mi);
	if (pci_dma_find(d, mi.base, mi.len) != NULL)
		return 0;
	return pci_dma_map(d, mi.base, mi.len, mi.hugepages ? 2u << 20 : 0);
}

int tide_pci_link_fd(struct tide_port *p)
{
	struct pci_dev *d = port_pci(p);

	if (d == NULL)
		return -EINVAL;
	return d->link_vector >= 0 && (unsigned)d->link_vector < d->nb_irq
		       ? d->irq_fd[d->link_vector]
		       : -ENOTSUP;
}
