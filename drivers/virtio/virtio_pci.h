/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * virtio driver: the modern (virtio 1.0+) PCI transport. A virtio-net function (1af4:1041)
 * through the PCI layer (src/pci.h): its vendor capabilities name the regions of its BARs
 * that hold the common configuration (features, status, queue registers), the notify area,
 * the ISR byte and the device configuration (MAC, link status, MTU). The frontend's calls
 * (struct virtio_transport) become register accesses there; the device reaches the rings
 * and the Rx pools through the IOMMU at IOVA = our virtual address (VIRTIO_F_ACCESS_PLATFORM).
 *
 * The parsing and checking of what the device presents are plain functions over bytes
 * (below) so that a unit test can feed them a config space of its own.
 */
#ifndef TIDE_VIRTIO_PCI_H_INTERNAL
#define TIDE_VIRTIO_PCI_H_INTERNAL

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "driver.h"
#include "virtio_ring.h"

#define VIRTIO_PCI_VENDOR    0x1af4
#define VIRTIO_PCI_DEV_NET   0x1041 /* modern virtio-net (0x1040 + device type 1) */

/* Feature bits the transport handles itself (the frontend's are in virtio_ring.h). */
#define VIRTIO_NET_F_MTU	 3
#define VIRTIO_NET_F_STATUS	 16
#define VIRTIO_NET_F_CTRL_VQ	 17
#define VIRTIO_F_ACCESS_PLATFORM 33

/* Vendor capability types (virtio 1.x section 4.1.4). */
#define VPCI_CAP_COMMON 1
#define VPCI_CAP_NOTIFY 2
#define VPCI_CAP_ISR	3
#define VPCI_CAP_DEVICE 4
#define VPCI_NCAPS	4

/* Common configuration layout (section 4.1.4.3): byte offsets. */
#define VPCI_DFSELECT	0
#define VPCI_DF		4
#define VPCI_GFSELECT	8
#define VPCI_GF		12
#define VPCI_MSIX_CONFIG 16
#define VPCI_NUM_QUEUES 18
#define VPCI_STATUS	20
#define VPCI_CFG_GEN	21
#define VPCI_Q_SELECT	22
#define VPCI_Q_SIZE	24
#define VPCI_Q_MSIX	26
#define VPCI_Q_ENABLE	28
#define VPCI_Q_NOFF	30
#define VPCI_Q_DESC	32
#define VPCI_Q_DRIVER	40
#define VPCI_Q_DEVICE	48
#define VPCI_COMMON_LEN 56
#define VPCI_NO_VECTOR	0xffff

/* virtio-net device configuration (section 5.1.4). */
#define VPCI_NET_MAC	0
#define VPCI_NET_STATUS 6
#define VPCI_NET_MAX_QP 8 /* max_virtqueue_pairs (VIRTIO_NET_F_MQ) */
#define VPCI_NET_MTU	10
#define VPCI_NET_S_LINK_UP 1

/* The control virtqueue (section 5.1.6.5): a command is a chain of three descriptors, the
 * header (class, command), the data and the ack byte the device writes. */
#define VIRTIO_NET_CTRL_MQ		4
#define VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET 0
#define VIRTIO_NET_OK			0
#define VPCI_CTRL_NUM			4    /* ring entries: one command at a time */
#define VPCI_CTRL_WAIT_MS		1000 /* a command not used by then fails */

/* MSI-X vectors: config changes (link), then one per Rx queue; Tx and control: none. */
#define VPCI_VEC_CONFIG 0
#define VPCI_VEC_RX0	1

/* A region of a BAR named by a capability. */
struct vpci_region {
	bool found;
	uint8_t bar;
	uint32_t off, len;
};

struct vpci_caps {
	struct vpci_region r[VPCI_NCAPS]; /* by type - 1 */
	uint32_t notify_mult;		  /* notify_off_multiplier */
};

/*
 * Read the vendor capability list of a config space (@cfg: its first 256 bytes). The first
 * capability of each type is taken (the specification's advice); capabilities naming a
 * reserved BAR (above 5) are skipped. Returns 0, or -ENODEV (no capability list, or no
 * common, notify or ISR capability: not a modern virtio device) or -EINVAL (a list that
 * points into the header, runs off the config space or loops, a capability shorter than
 * its type needs), logged under @name.
 */
int vpci_caps_parse(const uint8_t *cfg, struct vpci_caps *c, const char *name);

/*
 * Check each region against its BAR (@bar_len[i]: bytes of BAR i, 0 when it cannot be
 * mapped) and the least length of its type (common 56, notify 2, ISR 1). 0 or -EINVAL
 * (logged).
 */
int vpci_caps_check(const struct vpci_caps *c, const size_t *bar_len, const char *name);

/* The byte offset of a queue's notify register in the notify region (queue_notify_off
 * times the multiplier), or -ERANGE when the 2-byte register is not inside it (logged). */
long vpci_notify_at(const struct vpci_caps *c, uint16_t notify_off, unsigned vring,
		    const char *name);

/*
 * The features to write: @want (the frontend's pick, a subset of @dev) plus what the
 * transport takes: VIRTIO_F_ACCESS_PLATFORM (required: the device goes through the IOMMU),
 * MAC, STATUS and MTU when offered, MQ with CTRL_VQ when both are offered. -ENOTSUP (logged) without ACCESS_PLATFORM.
 */
int vpci_features(uint64_t dev, uint64_t want, uint64_t *out, const char *name);

/* A vring of @want entries on a device queue of at most @dev: 0, or -ENODEV (size 0: no
 * such queue) / -EINVAL (larger than the device takes), logged. */
int vpci_queue_size_check(uint16_t dev, unsigned want, unsigned vring, const char *name);

/* After writing @written to the status register the device reads back @readback: 0 when it
 * kept FEATURES_OK (if written), else -ENOTSUP (logged: the device refused the features). */
int vpci_status_check(uint8_t written, uint8_t readback, uint64_t features, const char *name);

/* The device offers queue pairs with the control queue that sets them; the transport then
 * takes both, whatever the number of pairs. */
static inline bool vpci_has_mq(uint64_t dev)
{
	uint64_t mq = VIRTIO_BIT(VIRTIO_NET_F_MQ) | VIRTIO_BIT(VIRTIO_NET_F_CTRL_VQ);

	return (dev & mq) == mq;
}

/*
 * With @pairs queue pairs wanted (the port's queues key): 0, or -ENOTSUP (more than one
 * and the device does not offer VIRTIO_NET_F_MQ with VIRTIO_NET_F_CTRL_VQ), -EINVAL (more
 * than its max_virtqueue_pairs @max_qp) or -ENODEV (an MQ device whose @max_qp is 0),
 * logged. The device's queue count is checked at start, once the features are set: a
 * device may add its queues then (QEMU does).
 */
int vpci_mq_check(uint64_t dev, uint16_t max_qp, unsigned pairs, const char *name);

/*
 * The control virtqueue's ring and command buffer, in one page of ours the device reads
 * (IOVA = address). Its layout is the device's: split, or packed once the features took
 * VIRTIO_F_RING_PACKED (the device then lays out every queue packed). The three areas
 * the common configuration is given are desc, avail and used either way; packed, they
 * are the descriptor ring and the driver and device event suppression areas (pdesc,
 * driver_event, device_event: the same addresses).
 *
 * Packed: one command is a chain of three descriptors at the positions after the last
 * one's, wrapping round the ring (and the driver's wrap counter) as it goes; its buffer
 * id is its first position, where the device writes the used element.
 */
struct vpci_ctrl {
	uint8_t *mem;
	bool packed;
	struct vring_desc *desc;
	struct vring_avail *avail;
	struct vring_used *used;
	uint8_t *hdr, *data, *ack;
	uint16_t avail_idx, last_used;	/* split */
	struct vring_packed_desc *pdesc; /* packed */
	struct vring_packed_event *driver_event, *device_event;
	uint16_t next;	     /* packed: the next position to make available ... */
	bool wrap;	     /* ... and the driver's wrap counter there */
	uint16_t head;	     /* packed: the posted command's first position ... */
	bool head_wrap;	     /* ... and the wrap counter there (the used element's) */
	bool posted;	     /* packed: a command awaits its used element */
	uint64_t acked;	/* commands the device acknowledged with VIRTIO_NET_OK */
};

#define VPCI_CTRL_MEM	 4096
#define VPCI_CTRL_DATA_MAX 8

/* Lay the ring (VPCI_CTRL_NUM entries; @packed: the packed layout) and the buffers out in
 * @mem (VPCI_CTRL_MEM bytes, page-aligned) and zero them: a new ring, as after a device
 * reset. Either layout tells the device not to interrupt (the driver polls). */
void vpci_ctrl_init(struct vpci_ctrl *c, uint8_t *mem, bool packed);
/* Post one command (@len <= VPCI_CTRL_DATA_MAX bytes of data), the previous one reaped:
 * split, the chain at descriptor 0 and the avail index published; packed, the chain at
 * the next three positions and its first descriptor's flags written last (release). The
 * caller then notifies the device. */
void vpci_ctrl_post(struct vpci_ctrl *c, uint8_t cls, uint8_t cmd, const void *data,
		    unsigned len);
/* The device's answer to the posted command: -EAGAIN (not used yet), 0 (acked OK), -EIO
 * (the device refused it: ack not VIRTIO_NET_OK) or -EPROTO, logged: a used entry that is
 * not the posted chain (split: another id, or the used index moved by more than one;
 * packed: another id, flags neither available nor used in the chain's pass, or a used
 * element past the chain, where nothing was made available). */
int vpci_ctrl_reap(struct vpci_ctrl *c, const char *name);
/* Reap the posted command (the device notified), polling every millisecond for @wait_ms at
 * least: vpci_ctrl_reap()'s answer, or -ETIMEDOUT (logged) when there is none by then.
 * The ring is left as it is: the next vpci_ctrl_init() (a device reset) starts it again. */
int vpci_ctrl_wait(struct vpci_ctrl *c, unsigned wait_ms, const char *name);

/* The PCI transport's state (virtio_port.vpci). */
struct virtio_pci {
	struct vpci_caps caps;
	volatile uint8_t *common, *isr, *device, *notify;
	uint32_t device_len, notify_len;
	uint16_t num_queues, max_size;
	uint16_t max_qp;  /* max_virtqueue_pairs (1 without VIRTIO_NET_F_MQ); the control
			   * queue is vring 2 * max_qp */
	struct vpci_ctrl ctrl; /* ctrl.mem NULL: no control queue (one pair) */
	volatile uint16_t *ctrl_notify;
	uint16_t mtu;	  /* the device's MTU (VIRTIO_NET_F_MTU), 0 when not offered */
	uint64_t dev_features;
	bool irq;	  /* MSI-X vectors are set up */
	bool rings_mapped;
	bool failed;	  /* a queue faulted: the device is reset until the port restarts
			   * (written by the control thread, read by workers: relaxed) */
	int link_up;
	uint64_t link_changes;
};

extern const struct virtio_transport virtio_pci_transport;
extern const struct tide_pci_id virtio_pci_ids[];

struct virtio_port;

/* Open the device for a port being made: VFIO, capabilities, reset, MSI-X, MAC, queue
 * limits into the port's info. 0 or -errno (logged); the port's close undoes it. */
int virtio_pci_attach(struct virtio_port *vp, const char *bdf);
/* pci=ADDR normalised into @bdf (PCI_BDF_LEN bytes): 0 or -EINVAL (logged); -ENOTSUP in a
 * build without the PCI layer. */
int virtio_pci_addr(const char *addr, char *bdf);
void virtio_pci_detach(struct virtio_port *vp);
int virtio_pci_poll_ctl(struct virtio_port *vp);
int virtio_pci_link(struct virtio_port *vp);
int virtio_pci_rxq_intr_fd(struct virtio_port *vp, unsigned qid);
/* Map (and unmap) an Rx pool for the device. */
int virtio_pci_pool_map(struct virtio_port *vp, struct tide_pool *pool);
void virtio_pci_pool_unmap(struct virtio_port *vp, struct tide_pool *pool);

#endif
