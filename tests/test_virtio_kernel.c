/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The virtio driver's vhost-kernel transport without /dev/vhost-net: the ioctl ABI it
 * spells out against the kernel's header, and every configuration it refuses, each with
 * its log line and nothing left behind (no tap, no fd, the pool whole). The cases that make
 * a tap of their own are the test virtio_kernel_tap (argument "tap"): they need /dev/net/tun
 * and CAP_NET_ADMIN and exit 77, a skip, without them. The traffic itself:
 * tests/vhost_kernel/.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/if_tun.h>
#include <linux/vhost.h>

#include <tide/lcore.h>
#include <tide/log.h>
#include <tide/port.h>

#include "../drivers/virtio/vhost_kernel.h"
#include "testutil.h"

static_assert(VK_GET_FEATURES == VHOST_GET_FEATURES, "GET_FEATURES");
static_assert(VK_SET_FEATURES == VHOST_SET_FEATURES, "SET_FEATURES");
static_assert(VK_SET_OWNER == VHOST_SET_OWNER, "SET_OWNER");
static_assert(VK_SET_MEM_TABLE == VHOST_SET_MEM_TABLE, "SET_MEM_TABLE");
static_assert(VK_SET_VRING_NUM == VHOST_SET_VRING_NUM, "SET_VRING_NUM");
static_assert(VK_SET_VRING_ADDR == VHOST_SET_VRING_ADDR, "SET_VRING_ADDR");
static_assert(VK_SET_VRING_BASE == VHOST_SET_VRING_BASE, "SET_VRING_BASE");
static_assert(VK_SET_VRING_KICK == VHOST_SET_VRING_KICK, "SET_VRING_KICK");
static_assert(VK_SET_VRING_CALL == VHOST_SET_VRING_CALL, "SET_VRING_CALL");
static_assert(VK_NET_SET_BACKEND == VHOST_NET_SET_BACKEND, "NET_SET_BACKEND");
static_assert(sizeof(struct vk_vring_addr) == sizeof(struct vhost_vring_addr), "vring_addr");
static_assert(sizeof(struct vk_mem_region) == sizeof(struct vhost_memory_region), "region");
static_assert(sizeof(struct vk_memory) == sizeof(struct vhost_memory), "memory");
static_assert(sizeof(struct vk_vring_file) == sizeof(struct vhost_vring_file), "vring_file");
static_assert(sizeof(struct vk_vring_state) == sizeof(struct vhost_vring_state), "state");

static char logged[4096];

static void log_keep(enum tide_log_level level, const char *component, const char *msg,
		     void *user)
{
	(void)level;
	(void)component;
	(void)user;
	snprintf(logged + strlen(logged), sizeof(logged) - strlen(logged), "%s\n", msg);
}

static unsigned fd_count(void)
{
	DIR *d = opendir("/proc/self/fd");
	unsigned n = 0;

	while (d && readdir(d))
		n++;
	if (d)
		closedir(d);
	return n;
}

/* @spec is refused at open with -EINVAL and a log line containing @why; no fd leaks. */
static void refused(const char *spec, const char *why)
{
	struct tide_port *p = NULL;
	unsigned fds = fd_count();
	int rc;

	logged[0] = '\0';
	rc = tide_port_open(spec, &p);
	if (rc != -EINVAL || strstr(logged, why) == NULL)
		fail_msg("%s: rc %d, log '%s'; want -EINVAL and '%s'", spec, rc, logged, why);
	assert_null(p);
	assert_int_equal(fd_count(), fds);
}

static void test_refused(void **state)
{
	(void)state;
	/* A device path that is not there: under /dev/ (the kernel transport by its path)
	 * and with iface=. */
	refused("virtio:path=/dev/vhost-net-not-here", "no such device node (the vhost-net module: modprobe vhost_net)");
	refused("virtio:path=/nonexistent/vhost-net,iface=tvk0", "no such device node");
	refused("virtio:path=/tmp,iface=tvk0", "not a character device");
	refused("virtio:path=/dev/null,iface=0123456789abcdef", "need an interface name of 1..15");
	refused("virtio:path=/dev/null,iface=", "need an interface name of 1..15");
	refused("virtio:path=/dev/null,iface=a/b", "not an interface name");
	refused("virtio:path=/dev/null,iface=lo", "iface=lo: not a tap device");
	refused("virtio:path=/dev/null,iface=tvk0,role=server", "has no server side");
}

/* Sockets are vhost-user's, also in /dev/shm: the port opens (a client that retries). */
static void test_user_paths(void **state)
{
	struct tide_port *p = NULL;

	(void)state;
	assert_int_equal(tide_port_open("virtio:path=/dev/shm/tide-vk-none.sock", &p), 0);
	tide_port_close(p);
	assert_int_equal(tide_port_open("virtio:path=/tmp/tide-vk-none.sock", &p), 0);
	tide_port_close(p);
	assert_int_equal(tide_port_open("virtio:path=/tmp", &p), 0); /* there, not a device */
	tide_port_close(p);
}

/* A tun or tap device made here: persistent until removed. */
static int tun_make(const char *name, short flags, bool persist)
{
	struct ifreq ifr;
	int fd = open("/dev/net/tun", O_RDWR), rc = 0;

	if (fd < 0)
		return -errno;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	ifr.ifr_flags = flags;
	if (ioctl(fd, TUNSETIFF, &ifr) < 0 || ioctl(fd, TUNSETPERSIST, persist ? 1 : 0) < 0)
		rc = -errno;
	close(fd);
	return rc;
}

static bool can_tun(void)
{
	char name[IFNAMSIZ];

	snprintf(name, sizeof(name), "tvkc%d", (int)getpid() % 100000);
	if (tun_make(name, IFF_TAP | IFF_NO_PI, true) < 0)
		return false;
	tun_make(name, IFF_TAP | IFF_NO_PI, false);
	return true;
}

static char tun[IFNAMSIZ], tap[IFNAMSIZ];

/* The persistent devices go also when a check failed. */
static int taps_remove(void **state)
{
	(void)state;
	if (tun[0] != '\0')
		tun_make(tun, IFF_TUN | IFF_NO_PI, false);
	if (tap[0] != '\0')
		tun_make(tap, IFF_TAP | IFF_NO_PI, false);
	return 0;
}

static void test_refused_taps(void **state)
{
	char spec[128];

	(void)state;
	snprintf(tun, sizeof(tun), "tvku%d", (int)getpid() % 100000);
	snprintf(tap, sizeof(tap), "tvks%d", (int)getpid() % 100000);
	assert_int_equal(tun_make(tun, IFF_TUN | IFF_NO_PI, true), 0);
	assert_int_equal(tun_make(tap, IFF_TAP | IFF_NO_PI, true), 0);
	snprintf(spec, sizeof(spec), "virtio:path=/dev/null,iface=%s", tun);
	refused(spec, "a tun device (layer 3), not a tap");
	snprintf(spec, sizeof(spec), "virtio:path=/dev/null,iface=%s,queues=2", tap);
	refused(spec, "a single-queue tap, but queues=2 needs a multi-queue one");
	taps_remove(NULL);
	assert_int_equal(if_nametoindex(tun), 0);
	assert_int_equal(if_nametoindex(tap), 0);
}

/*
 * A character device that is not vhost-net: open makes the tap, start fails with the
 * reason and unwinds, close removes the tap; nothing leaks.
 */
static void test_not_vhost(void **state)
{
	struct tide_pktpool_opts o = {.sz = sizeof(o)};
	char name[IFNAMSIZ], spec[128];
	struct tide_port *p;
	struct tide_pool *pool;
	unsigned fds;
	int rc;

	(void)state;
	snprintf(name, sizeof(name), "tvkn%d", (int)getpid() % 100000);
	snprintf(spec, sizeof(spec), "virtio:path=/dev/null,iface=%s", name);
	assert_int_equal(tide_pktpool_create("vk", 1024, 32, 2048, &o, &pool), 0);
	fds = fd_count();
	assert_int_equal(tide_port_open(spec, &p), 0);
	assert_int_not_equal(if_nametoindex(name), 0);
	assert_int_equal(tide_port_configure(p, 1, 1), 0);
	assert_int_equal(tide_rxq_setup(p, 0, 256, pool, NULL), 0); /* a private pool: allowed */
	assert_int_equal(tide_txq_setup(p, 0, 256, NULL), 0);
	logged[0] = '\0';
	rc = tide_port_start(p);
	if (rc >= 0 || strstr(logged, "path=/dev/null: not a vhost-net device") == NULL)
		fail_msg("start: rc %d, log '%s'", rc, logged);
	tide_port_close(p);
	assert_int_equal(if_nametoindex(name), 0);
	assert_int_equal(fd_count(), fds);
	assert_pool_full(pool);
	tide_pool_free(pool);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_user_paths),
	};
	const struct CMUnitTest tap_tests[] = {
		cmocka_unit_test_teardown(test_refused_taps, taps_remove),
		cmocka_unit_test(test_not_vhost),
	};
	bool taps = argc > 1 && strcmp(argv[1], "tap") == 0;

	if (taps && !can_tun()) {
		fprintf(stderr, "skip: making a tap needs /dev/net/tun and CAP_NET_ADMIN\n");
		return 77;
	}
	if (tide_thread_register() < 0)
		return 1;
	tide_log_set_handler(log_keep, NULL);
	tide_log_set_level(TIDE_LOG_ERR);
	if (taps)
		return cmocka_run_group_tests(tap_tests, NULL, NULL);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
