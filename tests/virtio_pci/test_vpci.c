/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The virtio-pci transport without a device: what it reads from a config space of the
 * test's own (the vendor capability list, each region against its BAR, the notify
 * register's place) and what it decides from the device's answers (features, queue sizes,
 * FEATURES_OK kept), each refusal with the text that says why. The device side runs in
 * the guest (tests/virtio_pci/run.sh).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tide/log.h>

#include "testutil.h"
#include "virtio.h"
#include "virtio_pci.h"

static char logbuf[4096];

static void capture(enum tide_log_level level, const char *comp, const char *msg, void *user)
{
	(void)level;
	(void)user;
	snprintf(logbuf + strlen(logbuf), sizeof(logbuf) - strlen(logbuf), "%s: %s\n", comp, msg);
}

static void put32(uint8_t *b, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		b[i] = (uint8_t)(v >> (8 * i));
}

/* A vendor capability at @at: type, BAR, offset, length (20 bytes for notify). */
static void cap(uint8_t *cfg, unsigned at, unsigned next, uint8_t type, uint8_t bar, uint32_t off,
		uint32_t len)
{
	cfg[at] = 0x09;
	cfg[at + 1] = (uint8_t)next;
	cfg[at + 2] = type == VPCI_CAP_NOTIFY ? 20 : 16;
	cfg[at + 3] = type;
	cfg[at + 4] = bar;
	put32(cfg + at + 8, off);
	put32(cfg + at + 12, len);
}

/* QEMU's virtio-net-pci, modern: MSI-X first, then the vendor capabilities in BAR 4. */
static void qemu_like(uint8_t *cfg)
{
	memset(cfg, 0, 256);
	cfg[0x06] = 0x10;
	cfg[0x34] = 0x98;
	cfg[0x98] = 0x11; /* MSI-X */
	cfg[0x99] = 0x84;
	cap(cfg, 0x84, 0x70, 5 /* PCI config access: not used */, 0, 0, 0);
	cap(cfg, 0x70, 0x60, VPCI_CAP_NOTIFY, 4, 0x3000, 0x1000);
	put32(cfg + 0x70 + 16, 4);
	cap(cfg, 0x60, 0x50, VPCI_CAP_DEVICE, 4, 0x2000, 0x1000);
	cap(cfg, 0x50, 0x40, VPCI_CAP_ISR, 4, 0x1000, 0x1000);
	cap(cfg, 0x40, 0x00, VPCI_CAP_COMMON, 4, 0x0000, 0x1000);
}

static const size_t bars[6] = {0, 0x1000, 0, 0, 0x4000, 0};

static void test_caps_good(void **state)
{
	uint8_t cfg[256];
	struct vpci_caps c;

	(void)state;
	qemu_like(cfg);
	assert_int_equal(vpci_caps_parse(cfg, &c, "t"), 0);
	assert_true(c.r[VPCI_CAP_COMMON - 1].found);
	assert_int_equal(c.r[VPCI_CAP_COMMON - 1].bar, 4);
	assert_int_equal(c.r[VPCI_CAP_ISR - 1].off, 0x1000);
	assert_int_equal(c.r[VPCI_CAP_DEVICE - 1].off, 0x2000);
	assert_int_equal(c.r[VPCI_CAP_NOTIFY - 1].off, 0x3000);
	assert_int_equal(c.r[VPCI_CAP_NOTIFY - 1].len, 0x1000);
	assert_int_equal(c.notify_mult, 4);
	assert_int_equal(vpci_caps_check(&c, bars, "t"), 0);

	/* The first of a type counts; one naming a reserved BAR is skipped. */
	qemu_like(cfg);
	cfg[0x34] = 0xb0;
	cap(cfg, 0xb0, 0xc0, VPCI_CAP_COMMON, 6, 0x8000, 0x1000);
	cap(cfg, 0xc0, 0x98, VPCI_CAP_ISR, 4, 0x1800, 0x10);
	assert_int_equal(vpci_caps_parse(cfg, &c, "t"), 0);
	assert_int_equal(c.r[VPCI_CAP_COMMON - 1].off, 0);
	assert_int_equal(c.r[VPCI_CAP_ISR - 1].off, 0x1800);

	/* No device configuration: allowed (no MAC, no link status). */
	qemu_like(cfg);
	cfg[0x70 + 1] = 0x50;
	assert_int_equal(vpci_caps_parse(cfg, &c, "t"), 0);
	assert_false(c.r[VPCI_CAP_DEVICE - 1].found);
}

static void expect_parse(uint8_t *cfg, int rc, const char *text)
{
	struct vpci_caps c;

	logbuf[0] = '\0';
	assert_int_equal(vpci_caps_parse(cfg, &c, "t"), rc);
	if (strstr(logbuf, text) == NULL)
		fail_msg("expected '%s' in the log, got: %s", text, logbuf);
}

static void test_caps_bad(void **state)
{
	uint8_t cfg[256];

	(void)state;
	qemu_like(cfg);
	cfg[0x06] = 0;
	expect_parse(cfg, -ENODEV, "no capability list");

	qemu_like(cfg);
	cfg[0x84 + 1] = 0x60; /* past notify */
	expect_parse(cfg, -ENODEV, "no virtio notify capability");

	qemu_like(cfg);
	cfg[0x60 + 1] = 0x40; /* past ISR */
	expect_parse(cfg, -ENODEV, "no virtio ISR capability");

	qemu_like(cfg);
	cfg[0x50 + 1] = 0; /* common left out */
	expect_parse(cfg, -ENODEV, "no virtio common configuration capability");

	qemu_like(cfg);
	cfg[0x40 + 1] = 0x98; /* a loop */
	expect_parse(cfg, -EINVAL, "a loop");

	qemu_like(cfg);
	cfg[0x34] = 0x20; /* into the header */
	expect_parse(cfg, -EINVAL, "a pointer at 0x20");

	qemu_like(cfg);
	cfg[0x50 + 2] = 12;
	expect_parse(cfg, -EINVAL, "vendor capability at 0x50: length 12");

	qemu_like(cfg);
	cfg[0x34] = 0xf8; /* 16 bytes from 0xf8 run past 256 */
	cfg[0xf8] = 0x09;
	cfg[0xf9] = 0x98;
	cfg[0xfa] = 16;
	cfg[0xfb] = VPCI_CAP_COMMON;
	expect_parse(cfg, -EINVAL, "vendor capability at 0xf8: length 16");

	qemu_like(cfg);
	cfg[0x70 + 2] = 16;
	expect_parse(cfg, -EINVAL, "notify capability at 0x70: length 16, 20 needed");
}

static void expect_in_bar(const struct vpci_caps *c, const size_t *b, int rc, const char *text)
{
	logbuf[0] = '\0';
	assert_int_equal(vpci_caps_check(c, b, "t"), rc);
	if (text && strstr(logbuf, text) == NULL)
		fail_msg("expected '%s' in the log, got: %s", text, logbuf);
}

static void test_caps_in_bar(void **state)
{
	uint8_t cfg[256];
	struct vpci_caps c, k;
	size_t b[6];

	(void)state;
	qemu_like(cfg);
	assert_int_equal(vpci_caps_parse(cfg, &c, "t"), 0);
	memcpy(b, bars, sizeof(b));
	b[4] = 0x3fff; /* notify's last byte outside */
	expect_in_bar(&c, b, -EINVAL, "the notify (BAR4 + 0x3000, 4096 bytes) is outside its BAR (16383 bytes)");
	b[4] = 0x4000;
	expect_in_bar(&c, b, 0, NULL);
	b[4] = 0; /* the BAR cannot be mapped */
	expect_in_bar(&c, b, -EINVAL, "is outside its BAR (0 bytes)");
	b[4] = 0x4000;
	k = c;
	k.r[VPCI_CAP_COMMON - 1].len = VPCI_COMMON_LEN - 1;
	expect_in_bar(&k, b, -EINVAL, "the common configuration (BAR4 + 0x0, 55 bytes)");
	k.r[VPCI_CAP_COMMON - 1].len = VPCI_COMMON_LEN;
	expect_in_bar(&k, b, 0, NULL);
	k = c;
	k.r[VPCI_CAP_ISR - 1].len = 0;
	expect_in_bar(&k, b, -EINVAL, "the ISR");
	k = c;
	k.r[VPCI_CAP_NOTIFY - 1].len = 1;
	expect_in_bar(&k, b, -EINVAL, "the notify");
	k = c;
	k.r[VPCI_CAP_DEVICE - 1].off = 0xffffffffu; /* offset + length wraps in 32 bits */
	expect_in_bar(&k, b, -EINVAL, "the device configuration");
}

static void test_notify_at(void **state)
{
	uint8_t cfg[256];
	struct vpci_caps c;

	(void)state;
	qemu_like(cfg);
	assert_int_equal(vpci_caps_parse(cfg, &c, "t"), 0);
	assert_int_equal(vpci_notify_at(&c, 0, 0, "t"), 0);
	assert_int_equal(vpci_notify_at(&c, 1, 1, "t"), 4);
	assert_int_equal(vpci_notify_at(&c, 1023, 1, "t"), 4092);	/* 4092 + 2 <= 4096 */
	c.notify_mult = 4094;
	assert_int_equal(vpci_notify_at(&c, 1, 1, "t"), 4094);		/* the last 2 bytes */
	logbuf[0] = '\0';
	c.notify_mult = 4095;
	assert_int_equal(vpci_notify_at(&c, 1, 3, "t"), -ERANGE);
	assert_non_null(strstr(logbuf, "vring 3: its notify register (offset 1 x 4095) is outside the notify area (4096 bytes)"));
	c.notify_mult = 0x10000000u;
	assert_int_equal(vpci_notify_at(&c, 16, 1, "t"), -ERANGE); /* 2^32: no 32-bit wrap */
}

static void test_features(void **state)
{
	uint64_t dev = VIRTIO_BIT(VIRTIO_F_VERSION_1) | VIRTIO_BIT(VIRTIO_F_ACCESS_PLATFORM) |
		       VIRTIO_BIT(VIRTIO_NET_F_MAC) | VIRTIO_BIT(VIRTIO_NET_F_STATUS) |
		       VIRTIO_BIT(VIRTIO_NET_F_MRG_RXBUF) | VIRTIO_BIT(VIRTIO_F_EVENT_IDX) |
		       VIRTIO_BIT(VIRTIO_NET_F_MQ) | VIRTIO_BIT(0) /* CSUM */;
	uint64_t want = VIRTIO_BIT(VIRTIO_F_VERSION_1) | VIRTIO_BIT(VIRTIO_NET_F_MRG_RXBUF) |
			VIRTIO_BIT(VIRTIO_F_IN_ORDER), out = 0;

	(void)state;
	assert_int_equal(vpci_features(dev, want, &out, "t"), 0);
	/* The frontend's pick as offered, the transport's own, nothing else. */
	assert_int_equal(out, VIRTIO_BIT(VIRTIO_F_VERSION_1) | VIRTIO_BIT(VIRTIO_NET_F_MRG_RXBUF) |
				      VIRTIO_BIT(VIRTIO_F_ACCESS_PLATFORM) |
				      VIRTIO_BIT(VIRTIO_NET_F_MAC) | VIRTIO_BIT(VIRTIO_NET_F_STATUS));
	assert_int_equal(vpci_features(dev | VIRTIO_BIT(VIRTIO_NET_F_MTU), want, &out, "t"), 0);
	assert_true(out & VIRTIO_BIT(VIRTIO_NET_F_MTU));
	logbuf[0] = '\0';
	assert_int_equal(vpci_features(dev & ~VIRTIO_BIT(VIRTIO_F_ACCESS_PLATFORM), want, &out, "t"),
			 -ENOTSUP);
	assert_non_null(strstr(logbuf, "does not offer VIRTIO_F_ACCESS_PLATFORM"));
	assert_non_null(strstr(logbuf, "iommu_platform=on"));
}

static void test_queue_size(void **state)
{
	(void)state;
	assert_int_equal(vpci_queue_size_check(256, 256, 0, "t"), 0);
	assert_int_equal(vpci_queue_size_check(256, 64, 1, "t"), 0);
	logbuf[0] = '\0';
	assert_int_equal(vpci_queue_size_check(256, 512, 1, "t"), -EINVAL);
	assert_non_null(strstr(logbuf, "vring 1: 512 descriptors, the device takes 256 at most"));
	logbuf[0] = '\0';
	assert_int_equal(vpci_queue_size_check(0, 64, 2, "t"), -ENODEV);
	assert_non_null(strstr(logbuf, "vring 2: the device has no such queue (queue size 0)"));
}

static void test_status(void **state)
{
	uint8_t fok = VIRTIO_STATUS_ACK | VIRTIO_STATUS_DRIVER | VIRTIO_STATUS_FEATURES_OK;

	(void)state;
	assert_int_equal(vpci_status_check(fok, fok, 0, "t"), 0);
	assert_int_equal(vpci_status_check(VIRTIO_STATUS_ACK, VIRTIO_STATUS_ACK, 0, "t"), 0);
	logbuf[0] = '\0';
	assert_int_equal(vpci_status_check(fok, fok & ~VIRTIO_STATUS_FEATURES_OK, 0x1234, "t"),
			 -ENOTSUP);
	assert_non_null(strstr(logbuf, "did not keep FEATURES_OK: it refused features 0x1234"));
}

static void test_mq_check(void **state)
{
	uint64_t mq = VIRTIO_BIT(VIRTIO_F_VERSION_1) | VIRTIO_BIT(VIRTIO_NET_F_MQ) |
		      VIRTIO_BIT(VIRTIO_NET_F_CTRL_VQ);

	(void)state;
	assert_int_equal(vpci_mq_check(mq, 4, 4, "t"), 0);
	assert_int_equal(vpci_mq_check(mq, 4, 2, "t"), 0);
	/* One pair needs nothing of the device's. */
	assert_int_equal(vpci_mq_check(VIRTIO_BIT(VIRTIO_F_VERSION_1), 0, 1, "t"), 0);
	logbuf[0] = '\0';
	assert_int_equal(vpci_mq_check(mq, 2, 3, "t"), -EINVAL);
	assert_non_null(strstr(logbuf, "queues=3: the device has 2 queue pairs at most"));
	logbuf[0] = '\0';
	assert_int_equal(vpci_mq_check(mq & ~VIRTIO_BIT(VIRTIO_NET_F_MQ), 4, 2, "t"), -ENOTSUP);
	assert_non_null(strstr(logbuf, "queues=2: the device does not offer VIRTIO_NET_F_MQ with the control queue"));
	logbuf[0] = '\0';
	assert_int_equal(vpci_mq_check(mq & ~VIRTIO_BIT(VIRTIO_NET_F_CTRL_VQ), 4, 2, "t"),
			 -ENOTSUP);
	assert_non_null(strstr(logbuf, "does not offer VIRTIO_NET_F_MQ"));
	logbuf[0] = '\0';
	assert_int_equal(vpci_mq_check(mq, 0, 1, "t"), -ENODEV);
	assert_non_null(strstr(logbuf, "max_virtqueue_pairs 0"));
	logbuf[0] = '\0';
	assert_int_equal(vpci_mq_check(mq, 1, 2, "t"), -EINVAL);
	assert_non_null(strstr(logbuf, "queues=2: the device has 1 queue pair at most"));
}

static void test_features_mq(void **state)
{
	uint64_t dev = VIRTIO_BIT(VIRTIO_F_VERSION_1) | VIRTIO_BIT(VIRTIO_F_ACCESS_PLATFORM) |
		       VIRTIO_BIT(VIRTIO_NET_F_MQ) | VIRTIO_BIT(VIRTIO_NET_F_CTRL_VQ), out = 0;

	(void)state;
	/* MQ wanted: the control queue comes with it. */
	assert_int_equal(vpci_features(dev, VIRTIO_BIT(VIRTIO_F_VERSION_1) | VIRTIO_BIT(VIRTIO_NET_F_MQ),
				       &out, "t"), 0);
	assert_int_equal(out, dev);
	/* One pair: both still (the control queue's command runs at every start). */
	assert_int_equal(vpci_features(dev, VIRTIO_BIT(VIRTIO_F_VERSION_1), &out, "t"), 0);
	assert_int_equal(out, dev);
	/* MQ without the control queue: neither, the pairs could not be set. */
	assert_int_equal(vpci_features(dev & ~VIRTIO_BIT(VIRTIO_NET_F_CTRL_VQ),
				       VIRTIO_BIT(VIRTIO_F_VERSION_1), &out, "t"), 0);
	assert_int_equal(out, VIRTIO_BIT(VIRTIO_F_VERSION_1) | VIRTIO_BIT(VIRTIO_F_ACCESS_PLATFORM));
}

/* The device's half of a control command: check the chain the driver posted, write @ack and
 * the used entry @id, moving the used index by @step. */
static void ctrl_device(struct vpci_ctrl *c, uint8_t ack, uint32_t id, uint16_t step)
{
	uint16_t a = c->avail->idx, u = c->used->idx;
	uint16_t head = c->avail->ring[(uint16_t)(a - 1) % VPCI_CTRL_NUM];
	const struct vring_desc *d = c->desc;
	const uint8_t *hdr = (const uint8_t *)(uintptr_t)d[head].addr;

	assert_int_equal(head, 0);
	assert_int_equal(d[0].len, 2);
	assert_int_equal(d[0].flags, VRING_DESC_F_NEXT);
	assert_int_equal(hdr[0], VIRTIO_NET_CTRL_MQ);
	assert_int_equal(hdr[1], VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET);
	assert_int_equal(d[1].flags, VRING_DESC_F_NEXT);
	assert_int_equal(d[1].len, 2);
	assert_int_equal(d[d[1].next].flags, VRING_DESC_F_WRITE);
	assert_int_equal(d[d[1].next].len, 1);
	*(uint8_t *)(uintptr_t)d[d[1].next].addr = ack;
	c->used->ring[u % VPCI_CTRL_NUM] = (struct vring_used_elem){.id = id, .len = 1};
	c->used->idx = (uint16_t)(u + step);
}

static void test_ctrl(void **state)
{
	static uint8_t mem[VPCI_CTRL_MEM] __attribute__((aligned(4096)));
	struct vpci_ctrl c = {0};
	uint8_t pairs[2] = {3, 0};

	(void)state;
	vpci_ctrl_init(&c, mem, false);
	assert_int_equal(c.avail->flags, VRING_AVAIL_F_NO_INTERRUPT);
	/* Acked: past the ring's size, so that the indices wrap around it. */
	for (unsigned i = 0; i < 2 * VPCI_CTRL_NUM + 1; i++) {
		vpci_ctrl_post(&c, VIRTIO_NET_CTRL_MQ, VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET, pairs, 2);
		assert_int_equal(c.avail->idx, i + 1);
		assert_int_equal(*(uint16_t *)(uintptr_t)c.desc[1].addr, 3);
		assert_int_equal(vpci_ctrl_reap(&c, "t"), -EAGAIN); /* not used yet */
		ctrl_device(&c, VIRTIO_NET_OK, 0, 1);
		assert_int_equal(vpci_ctrl_reap(&c, "t"), 0);
		assert_int_equal(c.acked, i + 1);
	}
	/* The ack untouched (the device used the chain without writing it), after an OK. */
	vpci_ctrl_post(&c, VIRTIO_NET_CTRL_MQ, VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET, pairs, 2);
	c.used->ring[c.used->idx % VPCI_CTRL_NUM] = (struct vring_used_elem){.id = 0, .len = 0};
	c.used->idx++;
	assert_int_equal(vpci_ctrl_reap(&c, "t"), -EIO);
	/* Refused. */
	logbuf[0] = '\0';
	vpci_ctrl_post(&c, VIRTIO_NET_CTRL_MQ, VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET, pairs, 2);
	ctrl_device(&c, 1 /* VIRTIO_NET_ERR */, 0, 1);
	assert_int_equal(vpci_ctrl_reap(&c, "t"), -EIO);
	assert_non_null(strstr(logbuf, "the device refused command 4.0 (ack 1)"));
	/* A used entry that is not the chain posted; a used index beyond what was posted. */
	logbuf[0] = '\0';
	vpci_ctrl_post(&c, VIRTIO_NET_CTRL_MQ, VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET, pairs, 2);
	ctrl_device(&c, VIRTIO_NET_OK, 2, 1);
	assert_int_equal(vpci_ctrl_reap(&c, "t"), -EPROTO);
	assert_non_null(strstr(logbuf, "id 2: not the command posted"));
	vpci_ctrl_init(&c, mem, false); /* a device reset */
	assert_int_equal(c.acked, 2 * VPCI_CTRL_NUM + 1);
	vpci_ctrl_post(&c, VIRTIO_NET_CTRL_MQ, VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET, pairs, 2);
	ctrl_device(&c, VIRTIO_NET_OK, 0, 2);
	assert_int_equal(vpci_ctrl_reap(&c, "t"), -EPROTO);
	assert_int_equal(c.acked, 2 * VPCI_CTRL_NUM + 1);
}

/*
 * The device's half of a packed control queue, kept apart from the driver's fields: where
 * it reads next, and its wrap counter there.
 */
struct pdev {
	uint16_t pos;
	bool wrap;
};

/* Is a command available at the device's position? Then check its chain (three
 * descriptors, each available in its own pass, the ids all the same) and take it: @head
 * and @wrap, the position and the wrap counter where it started. */
static bool pdev_take(struct pdev *d, struct vpci_ctrl *c, uint16_t *head, bool *wrap)
{
	const struct vring_packed_desc *pd = c->pdesc;
	uint16_t id;
	unsigned n = 0;

	if (!vring_packed_desc_avail(__atomic_load_n(&pd[d->pos].flags, __ATOMIC_ACQUIRE),
				     d->wrap))
		return false;
	*head = d->pos;
	*wrap = d->wrap;
	id = pd[d->pos].id;
	for (;;) {
		const struct vring_packed_desc *e = &pd[d->pos];

		assert_true(vring_packed_desc_avail(e->flags, d->wrap));
		assert_int_equal(e->id, id);
		if (n == 0) {
			const uint8_t *hdr = (const uint8_t *)(uintptr_t)e->addr;

			assert_int_equal(e->len, 2);
			assert_int_equal(hdr[0], VIRTIO_NET_CTRL_MQ);
			assert_int_equal(hdr[1], VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET);
		}
		if (n == 1)
			assert_int_equal(e->len, 2);
		n++;
		if (++d->pos == VPCI_CTRL_NUM) {
			d->pos = 0;
			d->wrap = !d->wrap;
		}
		if (!(e->flags & VRING_DESC_F_NEXT))
			break;
		assert_true(n < VPCI_CTRL_NUM);
	}
	assert_int_equal(n, 3);
	return true;
}

/* The device answers what it took at @head: @ack in the last buffer, then the used element
 * at the chain's first position with @id and @flags (a sound device: the used form of the
 * chain's pass), the flags last. */
static void pdev_use(struct vpci_ctrl *c, uint16_t head, uint8_t ack, uint16_t id,
		     uint16_t flags)
{
	struct vring_packed_desc *e = &c->pdesc[head];
	unsigned last = (head + 2u) % VPCI_CTRL_NUM;

	assert_int_equal(c->pdesc[last].flags & (VRING_DESC_F_WRITE | VRING_DESC_F_NEXT),
			 VRING_DESC_F_WRITE);
	assert_int_equal(c->pdesc[last].len, 1);
	*(uint8_t *)(uintptr_t)c->pdesc[last].addr = ack;
	e->id = id;
	e->len = 1;
	__atomic_store_n(&e->flags, flags, __ATOMIC_RELEASE);
}

static const uint16_t pdev_written = VRING_DESC_F_WRITE; /* QEMU's: the chain had a
							    device-writable buffer */

static void ctrl_post_pairs(struct vpci_ctrl *c)
{
	uint8_t pairs[2] = {3, 0};

	vpci_ctrl_post(c, VIRTIO_NET_CTRL_MQ, VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET, pairs, 2);
}

static void test_ctrl_packed(void **state)
{
	static uint8_t mem[VPCI_CTRL_MEM] __attribute__((aligned(4096)));
	struct vpci_ctrl c = {0};
	struct pdev d = {.wrap = true};
	uint16_t head;
	bool wrap;

	(void)state;
	vpci_ctrl_init(&c, mem, true);
	/* The same three areas, in the packed roles; we poll. */
	assert_ptr_equal(c.pdesc, c.desc);
	assert_ptr_equal(c.driver_event, c.avail);
	assert_ptr_equal(c.device_event, c.used);
	assert_int_equal(c.driver_event->flags, VRING_PACKED_EVENT_F_DISABLE);
	assert_int_equal(vpci_ctrl_reap(&c, "t"), -EAGAIN); /* nothing posted */
	assert_false(pdev_take(&d, &c, &head, &wrap));
	/* Acked, many times round the ring: chains of three on four positions start at each
	 * position, wrap in their middle and flip the wrap counter in both passes. */
	for (unsigned i = 0; i < 4 * VPCI_CTRL_NUM + 1; i++) {
		ctrl_post_pairs(&c);
		assert_int_equal(vpci_ctrl_reap(&c, "t"), -EAGAIN); /* not used yet */
		assert_true(pdev_take(&d, &c, &head, &wrap));
		assert_int_equal(head, (3u * i) % VPCI_CTRL_NUM);
		assert_int_equal(*(uint16_t *)(uintptr_t)c.pdesc[(head + 1u) % VPCI_CTRL_NUM].addr,
				 3);
		assert_false(pdev_take(&d, &c, &head, &wrap)); /* one at a time */
		assert_int_equal(vpci_ctrl_reap(&c, "t"), -EAGAIN);
		pdev_use(&c, head, VIRTIO_NET_OK, head,
			 (uint16_t)(vring_packed_used_flags(wrap) | pdev_written));
		assert_int_equal(vpci_ctrl_reap(&c, "t"), 0);
		assert_int_equal(c.acked, i + 1);
		assert_int_equal(vpci_ctrl_reap(&c, "t"), -EAGAIN); /* reaped once */
	}
	/* Refused; the ack untouched. */
	logbuf[0] = '\0';
	ctrl_post_pairs(&c);
	assert_true(pdev_take(&d, &c, &head, &wrap));
	pdev_use(&c, head, 1 /* VIRTIO_NET_ERR */, head, vring_packed_used_flags(wrap));
	assert_int_equal(vpci_ctrl_reap(&c, "t"), -EIO);
	assert_non_null(strstr(logbuf, "the device refused command 4.0 (ack 1)"));
	ctrl_post_pairs(&c);
	assert_true(pdev_take(&d, &c, &head, &wrap));
	pdev_use(&c, head, 0xff, head, vring_packed_used_flags(wrap));
	assert_int_equal(vpci_ctrl_reap(&c, "t"), -EIO);
	assert_int_equal(c.acked, 4 * VPCI_CTRL_NUM + 1);
}

/* A device reset, then @rounds commands the device answers as it should. */
static void pk_reset_run(struct vpci_ctrl *c, struct pdev *d, uint8_t *mem, unsigned rounds)
{
	uint16_t head;
	bool wrap;

	vpci_ctrl_init(c, mem, true);
	*d = (struct pdev){.wrap = true};
	for (unsigned i = 0; i < rounds; i++) {
		ctrl_post_pairs(c);
		assert_true(pdev_take(d, c, &head, &wrap));
		pdev_use(c, head, VIRTIO_NET_OK, head, vring_packed_used_flags(wrap));
		assert_int_equal(vpci_ctrl_reap(c, "t"), 0);
	}
}

/* A used element that is not the command posted: each one after a device reset. */
static void test_ctrl_packed_bad(void **state)
{
	static uint8_t mem[VPCI_CTRL_MEM] __attribute__((aligned(4096)));
	struct vpci_ctrl c = {0};
	struct pdev d;
	uint16_t head;
	bool wrap;
	const struct {
		const char *what, *log;
		uint16_t id_add, flags_xor;
		unsigned rounds; /* commands acked before (wrap counter 0 after two) */
	} cases[] = {
		{"id", "flags 0x8080, id 2 (wrap counter 1, id 0 posted)", 2, 0, 0},
		{"id off by one", "id 1 (wrap counter 1, id 0 posted)", 1, 0, 0},
		{"id, second pass", "flags 0x0, id 3 (wrap counter 0, id 2 posted)", 1, 0, 2},
		/* The available form of the other pass, and a used element of the other pass:
		 * neither available nor used in this one. */
		{"flags", "flags 0x8000, id 0 (wrap counter 1", 0, VRING_PACKED_DESC_F_AVAIL, 0},
		{"flags, second pass", "flags 0x80, id 2 (wrap counter 0", 0,
		 VRING_PACKED_DESC_F_AVAIL, 2},
		{"stale element", "flags 0x0, id 0 (wrap counter 1", 0,
		 VRING_PACKED_DESC_F_AVAIL_USED, 0},
	};

	(void)state;
	for (unsigned k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		pk_reset_run(&c, &d, mem, cases[k].rounds);
		logbuf[0] = '\0';
		ctrl_post_pairs(&c);
		assert_true(pdev_take(&d, &c, &head, &wrap));
		pdev_use(&c, head, VIRTIO_NET_OK, (uint16_t)(head + cases[k].id_add),
			 (uint16_t)(vring_packed_used_flags(wrap) ^ cases[k].flags_xor));
		if (vpci_ctrl_reap(&c, "t") != -EPROTO || strstr(logbuf, cases[k].log) == NULL ||
		    strstr(logbuf, "not the command posted") == NULL)
			fail_msg("%s: expected -EPROTO and '%s', got: %s", cases[k].what,
				 cases[k].log, logbuf);
	}
	/* A used element past the chain, where nothing was made available: the command's own
	 * element is sound, the one after it is not. (The count of acks survives a reset:
	 * start it again.) */
	c = (struct vpci_ctrl){0};
	pk_reset_run(&c, &d, mem, 0);
	logbuf[0] = '\0';
	ctrl_post_pairs(&c);
	assert_true(pdev_take(&d, &c, &head, &wrap));
	c.pdesc[d.pos].id = d.pos;
	c.pdesc[d.pos].flags = vring_packed_used_flags(d.wrap);
	pdev_use(&c, head, VIRTIO_NET_OK, head, vring_packed_used_flags(wrap));
	assert_int_equal(vpci_ctrl_reap(&c, "t"), -EPROTO);
	assert_non_null(strstr(logbuf, "a used element at 3, past the command posted at 0"));
	assert_int_equal(c.acked, 0);
	/* The same in pass 0: position 2 holds the last descriptor of the first command (pass
	 * 1), the device marks it used in pass 0. */
	pk_reset_run(&c, &d, mem, 1);
	logbuf[0] = '\0';
	ctrl_post_pairs(&c);
	assert_true(pdev_take(&d, &c, &head, &wrap));
	assert_false(d.wrap);
	c.pdesc[d.pos].flags = vring_packed_used_flags(d.wrap);
	pdev_use(&c, head, VIRTIO_NET_OK, head, vring_packed_used_flags(wrap));
	assert_int_equal(vpci_ctrl_reap(&c, "t"), -EPROTO);
	assert_non_null(strstr(logbuf, "a used element at 2, past the command posted at 3"));
	assert_int_equal(c.acked, 1);
}

/* A device that answers after @ms (a thread), or never (ms < 0). */
struct late {
	struct vpci_ctrl *c;
	int ms;
};

static void *late_device(void *arg)
{
	struct late *l = arg;
	struct timespec ts = {.tv_nsec = (long)l->ms * 1000000};
	struct pdev d = {.wrap = true};
	uint16_t head;
	bool wrap;

	nanosleep(&ts, NULL);
	if (pdev_take(&d, l->c, &head, &wrap))
		pdev_use(l->c, head, VIRTIO_NET_OK, head, vring_packed_used_flags(wrap));
	return NULL;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The wait for the device's answer, both layouts: never answered (-ETIMEDOUT after the
 * budget, with the reason), answered late (waited for). */
static void test_ctrl_wait(void **state)
{
	static uint8_t mem[VPCI_CTRL_MEM] __attribute__((aligned(4096)));
	struct vpci_ctrl c = {0};
	struct late l = {.c = &c, .ms = 30};
	pthread_t th;
	double t0, waited;

	(void)state;
	for (int packed = 0; packed < 2; packed++) {
		vpci_ctrl_init(&c, mem, packed);
		ctrl_post_pairs(&c);
		logbuf[0] = '\0';
		t0 = now_s();
		assert_int_equal(vpci_ctrl_wait(&c, 50, "t"), -ETIMEDOUT);
		waited = now_s() - t0;
		assert_true(waited >= 0.05);
		assert_true(waited < 5);
		assert_non_null(strstr(logbuf, "control queue: command 4.0 not answered in 50 ms"));
		assert_int_equal(c.acked, 0);
	}
	/* Packed, late: the thread answers 30 ms after the post; the wait takes it. */
	vpci_ctrl_init(&c, mem, true);
	ctrl_post_pairs(&c);
	assert_int_equal(pthread_create(&th, NULL, late_device, &l), 0);
	t0 = now_s();
	assert_int_equal(vpci_ctrl_wait(&c, 2000, "t"), 0);
	waited = now_s() - t0;
	pthread_join(th, NULL);
	assert_true(waited >= 0.02);
	assert_int_equal(c.acked, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_caps_good),  cmocka_unit_test(test_caps_bad),
		cmocka_unit_test(test_caps_in_bar), cmocka_unit_test(test_notify_at),
		cmocka_unit_test(test_features),   cmocka_unit_test(test_queue_size),
		cmocka_unit_test(test_status),	   cmocka_unit_test(test_mq_check),
		cmocka_unit_test(test_features_mq), cmocka_unit_test(test_ctrl),
		cmocka_unit_test(test_ctrl_packed), cmocka_unit_test(test_ctrl_packed_bad),
		cmocka_unit_test(test_ctrl_wait),
	};

	tide_log_set_handler(capture, NULL);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
