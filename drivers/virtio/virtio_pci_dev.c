/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * virtio driver, virtio-pci transport: what the device presents and what the driver decides
 * from it, as plain functions over bytes and numbers (no device access), so that the unit
 * test (tests/virtio_pci/test_vpci.c) runs every rule against config spaces of its own:
 * the vendor capability list and its regions inside their BARs, the notify register's
 * place, the features taken, the queue sizes, FEATURES_OK kept, the queue pairs, and the
 * control queue's one-command ring. The register accesses: virtio_pci.c.
 */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "osutil.h"
#include "virtio.h"
#include "virtio_pci.h"

#define PCI_STATUS	  0x06
#define PCI_STATUS_CAPS	  0x10
#define PCI_CAP_PTR	  0x34
#define PCI_CAP_VNDR	  0x09
#define CAP_WALK_MAX	  48 /* capabilities in 192 bytes: more means a loop */

static const char *const cap_names[VPCI_NCAPS] = {"common configuration", "notify", "ISR",
						  "device configuration"};

/* ---- what the device presents (plain functions: tests/virtio_pci/test_vpci.c) ---- */

static uint32_t le32(const uint8_t *b)
{
	return b[0] | b[1] << 8 | b[2] << 16 | (uint32_t)b[3] << 24;
}

int vpci_caps_parse(const uint8_t *cfg, struct vpci_caps *c, const char *name)
{
	unsigned ptr, walked = 0;

	memset(c, 0, sizeof(*c));
	if (!(cfg[PCI_STATUS] & PCI_STATUS_CAPS)) {
		TIDE_LOG_ERR_(name, "the device has no capability list: not a modern virtio device");
		return -ENODEV;
	}
	for (ptr = cfg[PCI_CAP_PTR] & 0xfc; ptr != 0; ptr = cfg[ptr + 1] & 0xfc) {
		unsigned len, type, bar;

		/* ptr <= 0xfc: the 4 bytes of the header are inside the config space. */
		if (ptr < 0x40 || ++walked > CAP_WALK_MAX) {
			TIDE_LOG_ERR_(name, "the capability list is broken (%s at 0x%x)",
				      walked > CAP_WALK_MAX ? "a loop" : "a pointer", ptr);
			return -EINVAL;
		}
		if (cfg[ptr] != PCI_CAP_VNDR)
			continue;
		len = cfg[ptr + 2];
		type = cfg[ptr + 3];
		if (len < 16 || ptr + len > 256) {
			TIDE_LOG_ERR_(name, "vendor capability at 0x%x: length %u (16 at least, inside the config space)",
				      ptr, len);
			return -EINVAL;
		}
		bar = cfg[ptr + 4];
		if (type < 1 || type > VPCI_NCAPS || bar > 5 || c->r[type - 1].found)
			continue;
		if (type == VPCI_CAP_NOTIFY) {
			if (len < 20) {
				TIDE_LOG_ERR_(name, "notify capability at 0x%x: length %u, 20 needed",
					      ptr, len);
				return -EINVAL;
			}
			c->notify_mult = le32(cfg + ptr + 16);
		}
		c->r[type - 1] = (struct vpci_region){.found = true, .bar = (uint8_t)bar,
						      .off = le32(cfg + ptr + 8),
						      .len = le32(cfg + ptr + 12)};
	}
	for (unsigned t = 0; t < VPCI_NCAPS; t++)
		if (!c->r[t].found && t + 1 != VPCI_CAP_DEVICE) {
			TIDE_LOG_ERR_(name, "no virtio %s capability: not a modern (1.0) virtio device (QEMU: virtio-net-pci,disable-legacy=on)",
				      cap_names[t]);
			return -ENODEV;
		}
	return 0;
}

int vpci_caps_check(const struct vpci_caps *c, const size_t *bar_len, const char *name)
{
	static const uint32_t least[VPCI_NCAPS] = {VPCI_COMMON_LEN, 2, 1, 0};

	for (unsigned t = 0; t < VPCI_NCAPS; t++) {
		const struct vpci_region *r = &c->r[t];

		if (!r->found)
			continue;
		if (r->len < least[t] || (uint64_t)r->off + r->len > bar_len[r->bar]) {
			TIDE_LOG_ERR_(name, "the %s (BAR%u + 0x%x, %u bytes) is outside its BAR (%zu bytes) or shorter than %u bytes",
				      cap_names[t], r->bar, r->off, r->len, bar_len[r->bar], least[t]);
			return -EINVAL;
		}
	}
	return 0;
}

long vpci_notify_at(const struct vpci_caps *c, uint16_t notify_off, unsigned vring,
		    const char *name)
{
	uint64_t at = (uint64_t)notify_off * c->notify_mult;

	if (at + 2 > c->r[VPCI_CAP_NOTIFY - 1].len) {
		TIDE_LOG_ERR_(name, "vring %u: its notify register (offset %u x %u) is outside the notify area (%u bytes)",
			      vring, notify_off, c->notify_mult, c->r[VPCI_CAP_NOTIFY - 1].len);
		return -ERANGE;
	}
	return (long)at;
}

int vpci_features(uint64_t dev, uint64_t want, uint64_t *out, const char *name)
{
	if (!(dev & VIRTIO_BIT(VIRTIO_F_ACCESS_PLATFORM))) {
		TIDE_LOG_ERR_(name, "the device does not offer VIRTIO_F_ACCESS_PLATFORM (features 0x%llx): it would bypass the IOMMU, where tide's addresses mean nothing (QEMU: iommu_platform=on)",
			      (unsigned long long)dev);
		return -ENOTSUP;
	}
	want &= dev; /* the frontend's pick, as offered */
	if (vpci_has_mq(dev)) /* even for one pair: the control queue's command is checked at each start */
		want |= VIRTIO_BIT(VIRTIO_NET_F_MQ) | VIRTIO_BIT(VIRTIO_NET_F_CTRL_VQ);
	*out = want | VIRTIO_BIT(VIRTIO_F_ACCESS_PLATFORM) |
	       (dev & (VIRTIO_BIT(VIRTIO_NET_F_MAC) | VIRTIO_BIT(VIRTIO_NET_F_STATUS) |
		       VIRTIO_BIT(VIRTIO_NET_F_MTU)));
	return 0;
}

int vpci_queue_size_check(uint16_t dev, unsigned want, unsigned vring, const char *name)
{
	if (dev == 0) {
		TIDE_LOG_ERR_(name, "vring %u: the device has no such queue (queue size 0)", vring);
		return -ENODEV;
	}
	if (want > dev) {
		TIDE_LOG_ERR_(name, "vring %u: %u descriptors, the device takes %u at most", vring,
			      want, dev);
		return -EINVAL;
	}
	return 0;
}

int vpci_status_check(uint8_t written, uint8_t readback, uint64_t features, const char *name)
{
	if ((written & VIRTIO_STATUS_FEATURES_OK) && !(readback & VIRTIO_STATUS_FEATURES_OK)) {
		TIDE_LOG_ERR_(name, "the device did not keep FEATURES_OK: it refused features 0x%llx",
			      (unsigned long long)features);
		return -ENOTSUP;
	}
	return 0;
}

int vpci_mq_check(uint64_t dev, uint16_t max_qp, unsigned pairs, const char *name)
{
	if (pairs <= 1 && !vpci_has_mq(dev))
		return 0;
	if (!vpci_has_mq(dev)) {
		TIDE_LOG_ERR_(name, "queues=%u: the device does not offer VIRTIO_NET_F_MQ with the control queue (features 0x%llx; QEMU: mq=on and a multiqueue netdev)",
			      pairs, (unsigned long long)dev);
		return -ENOTSUP;
	}
	if (max_qp < 1) {
		TIDE_LOG_ERR_(name, "the device offers VIRTIO_NET_F_MQ with max_virtqueue_pairs 0 (or no device configuration to read it from)");
		return -ENODEV;
	}
	if (pairs > max_qp) {
		TIDE_LOG_ERR_(name, "queues=%u: the device has %u queue pair%s at most (QEMU: a netdev with queues=N)",
			      pairs, max_qp, max_qp == 1 ? "" : "s");
		return -EINVAL;
	}
	return 0;
}

/* One page: descriptors, avail ring, used ring (4-byte aligned), then the command. A packed
 * ring uses the same places: its descriptors (16-byte aligned), the driver's event area
 * (4-byte aligned) where the avail ring is, the device's where the used ring is. */
#define CTRL_AVAIL 64
#define CTRL_USED  128
#define CTRL_HDR   256
#define CTRL_DATA  264
#define CTRL_ACK   (CTRL_DATA + VPCI_CTRL_DATA_MAX)
#define CTRL_CHAIN 3 /* header, data, ack */
static_assert(CTRL_AVAIL >= VPCI_CTRL_NUM * sizeof(struct vring_desc), "ctrl desc");
static_assert(CTRL_USED >= CTRL_AVAIL + 6 + 2 * VPCI_CTRL_NUM, "ctrl avail");
static_assert(CTRL_HDR >= CTRL_USED + 6 + 8 * VPCI_CTRL_NUM, "ctrl used");
static_assert(CTRL_AVAIL >= VPCI_CTRL_NUM * sizeof(struct vring_packed_desc) &&
		      CTRL_USED >= CTRL_AVAIL + sizeof(struct vring_packed_event) &&
		      CTRL_HDR >= CTRL_USED + sizeof(struct vring_packed_event),
	      "ctrl packed areas");
static_assert(CTRL_CHAIN <= VPCI_CTRL_NUM, "a chain fits the ring");

void vpci_ctrl_init(struct vpci_ctrl *c, uint8_t *mem, bool packed)
{
	uint64_t acked = c->acked;

	memset(mem, 0, VPCI_CTRL_MEM);
	*c = (struct vpci_ctrl){.mem = mem, .packed = packed, .acked = acked};
	c->desc = (struct vring_desc *)(void *)mem;
	c->avail = (struct vring_avail *)(void *)(mem + CTRL_AVAIL);
	c->used = (struct vring_used *)(void *)(mem + CTRL_USED);
	c->hdr = mem + CTRL_HDR;
	c->data = mem + CTRL_DATA;
	c->ack = mem + CTRL_ACK;
	if (!packed) {
		c->avail->flags = VRING_AVAIL_F_NO_INTERRUPT; /* polled */
		return;
	}
	c->pdesc = (struct vring_packed_desc *)(void *)mem;
	c->driver_event = (struct vring_packed_event *)(void *)(mem + CTRL_AVAIL);
	c->device_event = (struct vring_packed_event *)(void *)(mem + CTRL_USED);
	c->driver_event->flags = VRING_PACKED_EVENT_F_DISABLE; /* polled */
	/* The first pass has wrap counter 1: a zeroed descriptor reads neither available nor
	 * used in it. */
	c->wrap = true;
}

/* The command's buffers; the ack preset to a value the device never writes. */
static void ctrl_buffers(struct vpci_ctrl *c, uint8_t cls, uint8_t cmd, const void *data,
			 unsigned len)
{
	c->hdr[0] = cls;
	c->hdr[1] = cmd;
	memcpy(c->data, data, len);
	*c->ack = 0xff; /* neither OK nor ERR until the device writes it */
}

/* The chain at the next CTRL_CHAIN positions, each descriptor's AVAIL and USED flags those
 * of its own pass; the first one's flags last, so that the device sees a whole chain. */
static void ctrl_post_packed(struct vpci_ctrl *c, unsigned len)
{
	const struct {
		uint8_t *buf;
		uint32_t len;
		uint16_t flags;
	} part[CTRL_CHAIN] = {{c->hdr, 2, VRING_DESC_F_NEXT},
			      {c->data, len, VRING_DESC_F_NEXT},
			      {c->ack, 1, VRING_DESC_F_WRITE}};
	uint16_t head_flags = 0;

	c->head = c->next;
	c->head_wrap = c->wrap;
	for (unsigned i = 0; i < CTRL_CHAIN; i++) {
		struct vring_packed_desc *d = &c->pdesc[c->next];
		uint16_t f = (uint16_t)(part[i].flags | vring_packed_avail_flags(c->wrap));

		d->addr = (uintptr_t)part[i].buf;
		d->len = part[i].len;
		d->id = c->head;
		if (i == 0)
			head_flags = f;
		else
			d->flags = f;
		if (++c->next == VPCI_CTRL_NUM) {
			c->next = 0;
			c->wrap = !c->wrap;
		}
	}
	c->posted = true;
	/* Release: the chain and the buffers before the flags that make it available. */
	__atomic_store_n(&c->pdesc[c->head].flags, head_flags, __ATOMIC_RELEASE);
}

void vpci_ctrl_post(struct vpci_ctrl *c, uint8_t cls, uint8_t cmd, const void *data,
		    unsigned len)
{
	ctrl_buffers(c, cls, cmd, data, len);
	if (c->packed) {
		ctrl_post_packed(c, len);
		return;
	}
	c->desc[0] = (struct vring_desc){.addr = (uintptr_t)c->hdr, .len = 2,
					 .flags = VRING_DESC_F_NEXT, .next = 1};
	c->desc[1] = (struct vring_desc){.addr = (uintptr_t)c->data, .len = len,
					 .flags = VRING_DESC_F_NEXT, .next = 2};
	c->desc[2] = (struct vring_desc){.addr = (uintptr_t)c->ack, .len = 1,
					 .flags = VRING_DESC_F_WRITE};
	c->avail->ring[c->avail_idx % VPCI_CTRL_NUM] = 0;
	/* Release: the chain and the ring entry before the index the device reads. */
	__atomic_store_n(&c->avail->idx, ++c->avail_idx, __ATOMIC_RELEASE);
}

/* The command used: what the device wrote in the ack. */
static int ctrl_acked(struct vpci_ctrl *c, const char *name)
{
	if (*c->ack != VIRTIO_NET_OK) {
		TIDE_LOG_ERR_(name, "control queue: the device refused command %u.%u (ack %u)",
			      c->hdr[0], c->hdr[1], *c->ack);
		return -EIO;
	}
	c->acked++;
	return 0;
}

/*
 * Packed: the used element is at the chain's first position, its AVAIL and USED flags
 * both the wrap counter of that pass, its id the chain's. The position after the chain
 * holds what the driver wrote in the pass before (or zeros in the first): used in the
 * current pass there means the device used a buffer nobody made available.
 */
static int ctrl_reap_packed(struct vpci_ctrl *c, const char *name)
{
	uint16_t flags, id, past;

	if (!c->posted)
		return -EAGAIN;
	/* Acquire: pairs with the device's write of the flags after the element and the ack. */
	flags = __atomic_load_n(&c->pdesc[c->head].flags, __ATOMIC_ACQUIRE);
	if (vring_packed_desc_avail(flags, c->head_wrap))
		return -EAGAIN;
	id = c->pdesc[c->head].id;
	if ((flags & VRING_PACKED_DESC_F_AVAIL_USED) != vring_packed_used_flags(c->head_wrap) ||
	    id != c->head) {
		TIDE_LOG_ERR_(name, "control queue: used element at %u: flags 0x%x, id %u (wrap counter %u, id %u posted): not the command posted",
			      c->head, flags, id, c->head_wrap, c->head);
		return -EPROTO;
	}
	past = __atomic_load_n(&c->pdesc[c->next].flags, __ATOMIC_ACQUIRE);
	if ((past & VRING_PACKED_DESC_F_AVAIL_USED) == vring_packed_used_flags(c->wrap)) {
		TIDE_LOG_ERR_(name, "control queue: a used element at %u, past the command posted at %u",
			      c->next, c->head);
		return -EPROTO;
	}
	c->posted = false;
	return ctrl_acked(c, name);
}

int vpci_ctrl_reap(struct vpci_ctrl *c, const char *name)
{
	uint16_t idx;
	uint32_t id;

	if (c->packed)
		return ctrl_reap_packed(c, name);
	/* Acquire: pairs with the device's write of the used entry and the ack before it. */
	idx = __atomic_load_n(&c->used->idx, __ATOMIC_ACQUIRE);
	if (idx == c->last_used)
		return -EAGAIN;
	id = c->used->ring[c->last_used % VPCI_CTRL_NUM].id;
	if ((uint16_t)(idx - c->last_used) != 1 || id != 0) {
		TIDE_LOG_ERR_(name, "control queue: used index %u after %u, id %u: not the command posted",
			      idx, c->last_used, id);
		return -EPROTO;
	}
	c->last_used = idx;
	return ctrl_acked(c, name);
}

struct ctrl_wait {
	struct vpci_ctrl *c;
	const char *name;
	int rc;
};

static bool ctrl_answered(void *arg)
{
	struct ctrl_wait *w = arg;

	w->rc = vpci_ctrl_reap(w->c, w->name);
	return w->rc != -EAGAIN;
}

int vpci_ctrl_wait(struct vpci_ctrl *c, unsigned wait_ms, const char *name)
{
	struct ctrl_wait w = {.c = c, .name = name};

	if (os_poll_ms(ctrl_answered, &w, wait_ms))
		return w.rc;
	TIDE_LOG_ERR_(name, "control queue: command %u.%u not answered in %u ms", c->hdr[0],
		      c->hdr[1], wait_ms);
	return -ETIMEDOUT;
}
