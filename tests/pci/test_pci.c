/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The PCI layer without a device: address parsing, and every error an open can meet
 * before VFIO is reached, each with the text that tells the user what to do. The sysfs
 * side is a tree made here (pci_set_roots), so each case is exact: a device bound to
 * another driver, to none, one without an IOMMU group, no /dev/vfio, an ID no driver
 * claims, a missing device. The VFIO side (group viability, DMA, interrupts) needs a device
 * and runs in the guest (tests/pci/run.sh). And the e1000e driver's table from a receive
 * descriptor's checksum bits to the checksum status, over every combination (the guest's
 * device sets only some).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <tide/log.h>
#include <tide/pci.h>

#include "pci.h"
#include "testutil.h"
#ifdef TEST_E1000E
#include "e1000e.h"
#endif

static char logbuf[4096];

static void capture(enum tide_log_level level, const char *comp, const char *msg, void *user)
{
	(void)level;
	(void)user;
	snprintf(logbuf + strlen(logbuf), sizeof(logbuf) - strlen(logbuf), "%s: %s\n", comp, msg);
}

static void test_bdf_parse(void **state)
{
	static const struct {
		const char *in, *out;
	} t[] = {
		{"0000:00:03.0", "0000:00:03.0"},
		{"00:03.0", "0000:00:03.0"},
		{"0001:AB:1f.7", "0001:ab:1f.7"},
		{"ffff:ff:1f.7", "ffff:ff:1f.7"},
		{"0000:00:20.0", NULL}, /* device above 0x1f */
		{"0000:00:03.8", NULL}, /* function above 7 */
		{"0000:00:03", NULL},
		{"0000-00:03.0", NULL},
		{"000:00:03.0", NULL},
		{"0000:0g:03.0", NULL},
		{"", NULL},
		{"0000:00:03.0x", NULL},
	};
	char out[PCI_BDF_LEN];

	(void)state;
	for (unsigned i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		int rc = pci_bdf_parse(t[i].in, out);

		if (t[i].out == NULL) {
			assert_int_equal(rc, -EINVAL);
		} else {
			assert_int_equal(rc, 0);
			assert_string_equal(out, t[i].out);
		}
	}
}

static char root[256];

static void put(const char *rel, const char *content)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(content, f);
	fclose(f);
}

static void mk(const char *rel)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	assert_int_equal(mkdir(path, 0755), 0);
}

static void ln(const char *target, const char *rel)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	assert_int_equal(symlink(target, path), 0);
}

/* A device directory with an ID, and optionally a driver and an IOMMU group. */
static void fake_dev(const char *bdf, const char *vendor, const char *device, const char *drv,
		     const char *group)
{
	char rel[256], target[256];

	snprintf(rel, sizeof(rel), "sys/devices/%s", bdf);
	mk(rel);
	snprintf(rel, sizeof(rel), "sys/devices/%s/vendor", bdf);
	put(rel, vendor);
	snprintf(rel, sizeof(rel), "sys/devices/%s/device", bdf);
	put(rel, device);
	if (drv) {
		snprintf(target, sizeof(target), "../../drivers/%s", drv);
		snprintf(rel, sizeof(rel), "sys/devices/%s/driver", bdf);
		ln(target, rel);
	}
	if (group) {
		snprintf(target, sizeof(target), "../../kernel/iommu_groups/%s", group);
		snprintf(rel, sizeof(rel), "sys/devices/%s/iommu_group", bdf);
		ln(target, rel);
	}
}

static int setup(void **state)
{
	char sys[300], dev[300];

	(void)state;
	snprintf(root, sizeof(root), "/tmp/tide-test-pci-XXXXXX");
	assert_non_null(mkdtemp(root));
	mk("sys");
	mk("sys/devices");
	mk("dev");
	fake_dev("0000:00:03.0", "0x8086\n", "0x10d3\n", "e1000e", "7");
	fake_dev("0000:00:04.0", "0x8086\n", "0x10d3\n", NULL, "8");
	fake_dev("0000:00:05.0", "0x8086\n", "0x10d3\n", "vfio-pci", NULL);
	fake_dev("0000:00:06.0", "0x8086\n", "0x10d3\n", "vfio-pci", "9");
	fake_dev("0000:00:07.0", "0x1af4\n", "0x1041\n", "vfio-pci", "10");
	fake_dev("0000:00:08.0", "0x1af4\n", "0x1000\n", "vfio-pci", "11");
	snprintf(sys, sizeof(sys), "%s/sys", root);
	snprintf(dev, sizeof(dev), "%s/dev", root); /* no "vfio" in it */
	pci_set_roots(sys, dev);
	tide_log_set_handler(capture, NULL);
	return 0;
}

static int teardown(void **state)
{
	char cmd[300];

	(void)state;
	pci_set_roots(NULL, NULL);
	tide_log_set_handler(NULL, NULL);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	return system(cmd) == 0 ? 0 : -1;
}

/* Open @spec: it must fail with @rc and log every one of the NULL-terminated @words. */
static void expect(const char *spec, int rc, const char *const *words)
{
	struct tide_port *p = NULL;
	int got;

	logbuf[0] = '\0';
	got = tide_port_open(spec, &p);
	if (got != rc)
		fail_msg("%s: %d, expected %d; log:\n%s", spec, got, rc, logbuf);
	assert_null(p);
	for (const char *const *w = words; *w; w++)
		if (strstr(logbuf, *w) == NULL)
			fail_msg("%s: the log lacks '%s':\n%s", spec, *w, logbuf);
}

#define WORDS(...) ((const char *const[]){__VA_ARGS__, NULL})

static void test_open_errors(void **state)
{
	(void)state;
	expect("pci:", -EINVAL, WORDS("names no device", "pci:0000:00:03.0"));
	expect("pci:rs=every", -EINVAL, WORDS("names no device"));
	expect("pci:0000:00:3.0", -EINVAL, WORDS("'0000:00:3.0' is not a PCI address"));
	expect("pci:0000:00:1f.7", -ENODEV,
	       WORDS("0000:00:1f.7: no such PCI device", "tide-devbind --status"));
	expect("pci:00:03.0", -EBUSY,
	       WORDS("0000:00:03.0 is bound to e1000e, not vfio-pci",
		     "scripts/tide-devbind --bind=vfio-pci 0000:00:03.0"));
	expect("pci:0000:00:04.0", -ENODEV,
	       WORDS("bound to no driver", "scripts/tide-devbind --bind=vfio-pci 0000:00:04.0"));
	expect("pci:0000:00:05.0", -ENODEV, WORDS("has no IOMMU group", "intel_iommu=on"));
	expect("pci:0000:00:06.0", -ENOENT, WORDS("dev/vfio does not exist",
						   "modprobe vfio-pci"));
	expect("pci:0000:00:08.0", -ENODEV,
	       WORDS("0000:00:08.0 is 1af4:1000: no driver of tide claims it",
		     "e1000e 8086:10d3", "virtio 1af4:1041"));
	/* A modern virtio-net goes to the virtio driver, which reaches VFIO. */
	expect("pci:0000:00:07.0", -ENOENT, WORDS("dev/vfio does not exist"));
	expect("virtio:pci=0000:00:07.0", -ENOENT, WORDS("dev/vfio does not exist"));
	expect("virtio:pci=7.0", -EINVAL, WORDS("pci=7.0: not a PCI address"));
	/* Two pairs are taken (the device's own limit is checked once it is reached). */
	expect("virtio:pci=0000:00:07.0,queues=2", -ENOENT, WORDS("dev/vfio does not exist"));
	expect("virtio:pci=0000:00:07.0,queues=9", -EINVAL, WORDS("queues"));
	expect("pci:0000:00:07.0,packed=yes", -EINVAL, WORDS("packed=yes"));
	expect("virtio:pci=0000:00:1f.7", -ENODEV, WORDS("no such PCI device"));
	/* The driver by name. */
	expect("e1000e:", -EINVAL, WORDS("pci=DOMAIN:BUS:DEV.FN is required"));
	expect("e1000e:pci=3.0", -EINVAL, WORDS("pci=3.0: not a PCI address"));
	expect("e1000e:pci=0000:00:07.0", -ENODEV, WORDS("not an 82574L"));
	expect("e1000e:pci=0000:00:1f.7", -ENODEV, WORDS("no such PCI device"));
	expect("e1000e:pci=0000:00:03.0", -EBUSY, WORDS("bound to e1000e, not vfio-pci"));
	expect("e1000e:pci=0000:00:06.0,promisc=maybe", -EINVAL, WORDS("promisc"));
	/* Keys of the claiming driver are checked the same way. */
	expect("pci:0000:00:06.0,promisc=maybe", -EINVAL, WORDS("promisc"));
}

/* Without a device: the public extras refuse other ports. */
static void test_public_refuses(void **state)
{
	struct tide_port *p;

	(void)state;
	tide_log_set_handler(NULL, NULL);
	assert_int_equal(tide_port_open("null:", &p), 0);
	assert_int_equal(tide_pci_dma_map(p, NULL), -EINVAL);
	assert_int_equal(tide_pci_link_fd(p), -EINVAL);
	assert_int_equal(tide_pci_link_fd(NULL), -EINVAL);
	tide_port_close(p);
	tide_log_set_handler(capture, NULL);
}

/* No /dev/vfio: as an unprivileged user a real group node would say "no permission". */
static void test_permission(void **state)
{
	char vfio[300];

	(void)state;
	if (geteuid() == 0)
		skip(); /* root opens a mode-000 node anyway */
	snprintf(vfio, sizeof(vfio), "%s/dev/vfio", root);
	put("dev/vfio", "");
	assert_int_equal(chmod(vfio, 0), 0);
	expect("pci:0000:00:06.0", -EACCES, WORDS("no permission to open", "run as root"));
	unlink(vfio);
}

#ifdef TEST_E1000E
/*
 * Every status/error byte pair through the e1000e Rx checksum table, against the 82574's
 * rules written out here: IXSM set -> nothing; IPCS -> IPv4 status (IPE: bad); TCPCS or
 * UDPCS -> L4 status (TCPE: bad); each only when the queue enabled it; no other bit counts.
 */
static void test_e1000e_rx_csum(void **state)
{
	static const uint64_t enables[] = {
		0, TIDE_OFFLOAD_RX_IPV4_CKSUM, TIDE_OFFLOAD_RX_TCP_CKSUM, TIDE_OFFLOAD_RX_UDP_CKSUM,
		TIDE_OFFLOAD_RX_ALL};
	static struct e1000e_rxq q;

	(void)state;
	for (unsigned e = 0; e < sizeof(enables) / sizeof(enables[0]); e++) {
		bool ip = enables[e] & TIDE_OFFLOAD_RX_IPV4_CKSUM,
		     l4 = enables[e] & (TIDE_OFFLOAD_RX_TCP_CKSUM | TIDE_OFFLOAD_RX_UDP_CKSUM);

		memset(&q, 0xa5, sizeof(q));
		q.offloads = enables[e];
		e1000e_rx_csum_init(&q);
		for (unsigned st = 0; st < 256; st++) {
			for (unsigned err = 0; err < 256; err++) {
				uint32_t want = 0, got;

				if (!(st & 0x04)) {
					if (ip && (st & 0x40))
						want |= err & 0x40 ? TIDE_MBUF_F_RX_IP_CKSUM_BAD
								   : TIDE_MBUF_F_RX_IP_CKSUM_GOOD;
					if (l4 && (st & 0x30))
						want |= err & 0x20 ? TIDE_MBUF_F_RX_L4_CKSUM_BAD
								   : TIDE_MBUF_F_RX_L4_CKSUM_GOOD;
				}
				got = q.csum_flags[e1000e_rx_csum_index((uint8_t)st, (uint8_t)err)];
				if (got != want)
					fail_msg("offloads 0x%llx status 0x%02x errors 0x%02x: 0x%x, "
						 "expected 0x%x", (unsigned long long)enables[e], st,
						 err, got, want);
			}
		}
	}
}
#endif

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bdf_parse),
		cmocka_unit_test_setup_teardown(test_open_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_public_refuses, setup, teardown),
		cmocka_unit_test_setup_teardown(test_permission, setup, teardown),
#ifdef TEST_E1000E
		cmocka_unit_test(test_e1000e_rx_csum),
#endif
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
