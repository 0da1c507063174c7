/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the virtio 1.x specification defines for a virtio-net device, as both ends of a
 * virtqueue see it: feature bits, device status, the split (section 2.7) and packed (2.8)
 * virtqueue layouts with their event suppression, and the virtio-net header (5.1.6).
 * Layouts are pinned with static_assert; everything is little-endian (tide runs on
 * little-endian hosts only). Internal: the virtio frontend (drivers/virtio) and the vhost
 * backend (drivers/vhost) include it; the vhost-user messages are in vhost_user.h.
 *
 * Who writes what in a split virtqueue:
 *
 *   descriptor table  driver    addr, len, flags, next of each buffer
 *   avail ring        driver    flags, idx, ring[num] (descriptor heads), used_event
 *   used ring         device    flags, idx, ring[num] ({id, len}), avail_event
 *
 * In a packed virtqueue one ring of descriptors goes both ways: the driver writes a
 * descriptor and then its flags (AVAIL = its wrap counter, USED = the inverse); the device
 * overwrites the first descriptor of a buffer with the used element (AVAIL = USED = its
 * wrap counter). Each side's event suppression area is written by that side.
 */
#ifndef TIDE_SRC_VIRTIO_RING_H
#define TIDE_SRC_VIRTIO_RING_H

#include <assert.h>
#include <stdbool.h>
#include <stdint.h>

/* ---- feature bits (section 5.1.3 and 6) ---- */
#define VIRTIO_NET_F_MTU	   3
#define VIRTIO_NET_F_MAC	   5
#define VIRTIO_NET_F_MRG_RXBUF	   15
#define VIRTIO_NET_F_MQ		   22
#define VIRTIO_F_ANY_LAYOUT	   27
#define VIRTIO_F_INDIRECT_DESC	   28
#define VIRTIO_F_EVENT_IDX	   29
#define VIRTIO_F_VERSION_1	   32
#define VIRTIO_F_ACCESS_PLATFORM   33 /* addresses are IOVAs behind the platform's IOMMU */
#define VIRTIO_F_RING_PACKED	   34
#define VIRTIO_F_IN_ORDER	   35

#define VIRTIO_BIT(b) (1ull << (b))

/* ---- device status (section 2.1) ---- */
#define VIRTIO_STATUS_ACK	  1
#define VIRTIO_STATUS_DRIVER	  2
#define VIRTIO_STATUS_DRIVER_OK	  4
#define VIRTIO_STATUS_FEATURES_OK 8
#define VIRTIO_STATUS_FAILED	  128

/* The largest queue size (section 2.7 and 2.8). */
#define VRING_MAX_SIZE 32768

/* ---- split virtqueue ---- */
#define VRING_DESC_F_NEXT	   1
#define VRING_DESC_F_WRITE	   2
#define VRING_DESC_F_INDIRECT	   4
#define VRING_AVAIL_F_NO_INTERRUPT 1
#define VRING_USED_F_NO_NOTIFY	   1

struct vring_desc {
	uint64_t addr; /* guest physical */
	uint32_t len;
	uint16_t flags;
	uint16_t next;
};
static_assert(sizeof(struct vring_desc) == 16, "descriptor is 16 bytes");

struct vring_avail {
	uint16_t flags;
	uint16_t idx;
	uint16_t ring[]; /* num entries, then used_event */
};

struct vring_used_elem {
	uint32_t id;
	uint32_t len;
};
static_assert(sizeof(struct vring_used_elem) == 8, "used element is 8 bytes");

struct vring_used {
	uint16_t flags;
	uint16_t idx;
	struct vring_used_elem ring[]; /* num entries, then avail_event */
};

static inline uint64_t vring_desc_bytes(uint32_t num)
{
	return 16ull * num;
}
static inline uint64_t vring_avail_bytes(uint32_t num)
{
	return 4 + 2ull * num + 2;
}
static inline uint64_t vring_used_bytes(uint32_t num)
{
	return 4 + 8ull * num + 2;
}

/* Event index: has the other side asked to hear about index @new_idx (old: the last one)? */
static inline int vring_need_event(uint16_t event, uint16_t new_idx, uint16_t old)
{
	return (uint16_t)(new_idx - event - 1) < (uint16_t)(new_idx - old);
}

/* ---- packed virtqueue ---- */
#define VRING_PACKED_DESC_F_AVAIL    (1u << 7)
#define VRING_PACKED_DESC_F_USED     (1u << 15)
#define VRING_PACKED_DESC_F_AVAIL_USED (VRING_PACKED_DESC_F_AVAIL | VRING_PACKED_DESC_F_USED)
#define VRING_PACKED_EVENT_F_ENABLE  0 /* event area flags: notify on every used buffer */
#define VRING_PACKED_EVENT_F_DISABLE 1 /* never */
#define VRING_PACKED_EVENT_F_DESC    2 /* at the offset and wrap in off_wrap (EVENT_IDX) */
#define VRING_PACKED_WRAP	     (1u << 15) /* the wrap counter bit of off_wrap */

/* One descriptor; the device overwrites it with the used element (id, len, flags). */
struct vring_packed_desc {
	uint64_t addr; /* guest physical */
	uint32_t len;
	uint16_t id;
	uint16_t flags;
};
static_assert(sizeof(struct vring_packed_desc) == 16, "packed descriptor is 16 bytes");

/* The driver and the device event suppression areas (vhost-user: avail and used addresses). */
struct vring_packed_event {
	uint16_t off_wrap; /* bits 0-14 ring offset, bit 15 wrap counter */
	uint16_t flags;	   /* VRING_PACKED_EVENT_F_* */
};
static_assert(sizeof(struct vring_packed_event) == 4, "event suppression area is 4 bytes");

/* The AVAIL and USED flags of a descriptor the driver made available in pass @wrap. */
static inline uint16_t vring_packed_avail_flags(bool wrap)
{
	return wrap ? VRING_PACKED_DESC_F_AVAIL : VRING_PACKED_DESC_F_USED;
}

/* The AVAIL and USED flags of a used element the device wrote in pass @wrap (both equal to
 * the wrap counter). The available form is this one ^ VRING_PACKED_DESC_F_USED. */
static inline uint16_t vring_packed_used_flags(bool wrap)
{
	return wrap ? VRING_PACKED_DESC_F_AVAIL_USED : 0;
}

/* Is a descriptor with @flags available in the pass whose wrap counter is @wrap? */
static inline bool vring_packed_desc_avail(uint16_t flags, bool wrap)
{
	return (flags & VRING_PACKED_DESC_F_AVAIL_USED) == vring_packed_avail_flags(wrap);
}

/*
 * Event index of a packed ring (section 2.8.10): has the other side, whose event area says
 * @off_wrap, asked to hear about the positions [@old_pos in pass @old_wrap, @new_pos in pass
 * @new_wrap) of a ring of @num descriptors? Positions count modulo twice the queue size, m
 * (the wrap counter adds the queue size), so any size works, not only powers of two. The
 * event position ev was passed when n - ev - 1 < n - o (mod m), with e = ev + 1. o and n are
 * below m; an offset beyond the queue size can only make the answer wrong for its sender.
 */
static inline bool vring_packed_need_event(uint16_t off_wrap, uint16_t old_pos, bool old_wrap,
					   uint16_t new_pos, bool new_wrap, uint32_t num)
{
	uint32_t m = 2u * num, o, n, e, ne, no;

	o = old_pos + (old_wrap ? num : 0u);
	n = new_pos + (new_wrap ? num : 0u);
	e = (off_wrap & ~VRING_PACKED_WRAP) + ((off_wrap & VRING_PACKED_WRAP) ? num : 0u) + 1u;
	ne = n >= e ? n - e : n + m - e; /* n - e - 1 (mod m) */
	no = n >= o ? n - o : n + m - o;
	return ne < no;
}

/* ---- virtio-net header ---- */
/* 12 bytes with VIRTIO_F_VERSION_1 or MRG_RXBUF (num_buffers last), else the first 10. */
struct virtio_net_hdr_mrg {
	uint8_t flags;
	uint8_t gso_type;
	uint16_t hdr_len;
	uint16_t gso_size;
	uint16_t csum_start;
	uint16_t csum_offset;
	uint16_t num_buffers;
};
static_assert(sizeof(struct virtio_net_hdr_mrg) == 12, "virtio-net header is 12 bytes");

#endif /* TIDE_SRC_VIRTIO_RING_H */
