/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * virtio driver: the vhost-kernel transport. The device is the kernel's vhost-net (the
 * device node, /dev/vhost-net) with a tap interface as its wire: what tide sends comes out
 * of the tap into the kernel's stack, what the stack sends to the tap lands in tide's
 * receive buffers.
 *
 * vhost-net serves one queue pair per open file: pair i is fd vfd[i] with its vrings 0
 * (receive) and 1 (transmit), and tap queue tapfd[i] (a multi-queue tap for several pairs).
 *
 * Open: the tap is created or attached (IFF_TAP | IFF_NO_PI | IFF_VNET_HDR, a 12-byte
 * header, no offloads until a start asks for some), one queue per pair of `queues`, and brought up. It stays attached
 * until close, so that its addresses and routes live from open to close and stop/start do
 * not disturb the kernel's side (frames the kernel sends while the port is stopped wait in
 * the tap's queue; beyond its length the tap drops and counts them).
 *
 * Start, for each pair in use: vhost-net opened and VHOST_SET_OWNER (a multi-queue tap's
 * queues beyond the pairs in use are detached, so that the tap steers no flow to them);
 * then the generic bring-up (virtio_dev_init) over the calls below: GET/SET_FEATURES,
 * SET_MEM_TABLE (the rings' area and each Rx pool at the process's own addresses: the
 * kernel reads and writes our memory directly, so a pool need not be shared), per vring
 * SET_VRING_NUM, _BASE (0), _ADDR, _KICK (the frontend's eventfd) and _CALL (an eventfd
 * for each Rx vring, signalled only while its interrupt is enabled; none for Tx), and at
 * DRIVER_OK VHOST_NET_SET_BACKEND with the tap queue's fd.
 *
 * Stop unwinds in the reverse order: the queues off (no burst touches the rings), each
 * backend set to -1 (the kernel stops using the vrings and our buffers), vhost-net closed.
 * Close leaves the tap as it was found: down again if tide raised it, gone with its last
 * fd if tide made it.
 *
 * No control thread: start and stop do the work on the caller's thread. A queue that
 * faults (the checks of virtio_rxtx.c) moves nothing until the port is restarted; stop
 * logs the reason and counts it.
 */
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/if_tun.h>

#include "log.h"
#include "vhost_kernel.h"
#include "virtio.h"

#define TUN_DEV "/dev/net/tun"

struct virtio_kernel {
	unsigned pairs; /* in use since start; 0 while stopped */
	int tapfd[VIRTIO_MAX_QP]; /* vp->queues of them, from open to close */
	bool detached[VIRTIO_MAX_QP];
	int vfd[VIRTIO_MAX_QP];
	bool backend[2 * VIRTIO_MAX_QP]; /* VHOST_NET_SET_BACKEND done on vring v */
	int sock;			 /* for the interface ioctls */
	char name[IFNAMSIZ];		 /* the tap, as the kernel named it */
	bool made;			 /* tide created the tap: it goes with the last fd */
	bool raised;			 /* tide brought up a tap that was down */
};

/* ---- configuration (open) ---- */

bool virtio_kernel_wanted(const char *path, const char *iface)
{
	struct stat st;

	if (iface != NULL)
		return true;
	if (path == NULL)
		return false;
	if (stat(path, &st) == 0)
		return S_ISCHR(st.st_mode);
	/* Not there: a device node by its place (a socket may live in /dev/shm). */
	return strncmp(path, "/dev/", 5) == 0 && strncmp(path, "/dev/shm/", 9) != 0;
}

/* The flags of an existing tun/tap device @name (its sysfs tun_flags); -ENOENT: no such
 * interface; -ENODEV: an interface that is not a tun/tap. */
static long tun_flags(const char *name)
{
	char path[64 + IFNAMSIZ], buf[32];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/sys/class/net/%s", name);
	if (access(path, F_OK) < 0)
		return -ENOENT;
	snprintf(path, sizeof(path), "/sys/class/net/%s/tun_flags", name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -ENODEV;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -ENODEV;
	buf[n] = '\0';
	return strtol(buf, NULL, 16);
}

int virtio_kernel_check(const char *path, const char *iface, unsigned queues)
{
	const char *name = iface ? iface : "tap%d";
	struct stat st;
	long fl;

	if (stat(path, &st) < 0) {
		if (errno == ENOENT)
			TIDE_LOG_ERR_("virtio", "path=%s: no such device node (the vhost-net module: modprobe vhost_net)",
				      path);
		else
			TIDE_LOG_ERR_("virtio", "path=%s: %s", path, strerror(errno));
		return -EINVAL;
	}
	if (!S_ISCHR(st.st_mode)) {
		TIDE_LOG_ERR_("virtio", "path=%s: not a character device: with iface= (or a path under /dev/) the transport is vhost-kernel, whose path is the vhost-net device, /dev/vhost-net",
			      path);
		return -EINVAL;
	}
	if (name[0] == '\0' || strlen(name) >= IFNAMSIZ) {
		TIDE_LOG_ERR_("virtio", "iface=%s: need an interface name of 1..%d characters", name,
			      IFNAMSIZ - 1);
		return -EINVAL;
	}
	if (strpbrk(name, "/: \t\n") != NULL || strcmp(name, ".") == 0 || strcmp(name, "..") == 0) {
		TIDE_LOG_ERR_("virtio", "iface=%s: not an interface name (no '/', ':' or spaces)", name);
		return -EINVAL;
	}
	if (strchr(name, '%') != NULL)
		return 0; /* a pattern: the kernel names a new tap */
	fl = tun_flags(name);
	if (fl == -ENOENT)
		return 0; /* tide creates it */
	if (fl < 0) {
		TIDE_LOG_ERR_("virtio", "iface=%s: not a tap device (an interface of another kind has this name)",
			      name);
		return -EINVAL;
	}
	if (!(fl & IFF_TAP)) {
		TIDE_LOG_ERR_("virtio", "iface=%s: a tun device (layer 3), not a tap", name);
		return -EINVAL;
	}
	if (queues > 1 && !(fl & IFF_MULTI_QUEUE)) {
		TIDE_LOG_ERR_("virtio", "iface=%s: a single-queue tap, but queues=%u needs a multi-queue one (ip tuntap add %s mode tap multi_queue)",
			      name, queues, name);
		return -EINVAL;
	}
	return 0;
}

/* ---- the transport ---- */

static int vk_ioctl(struct virtio_port *vp, int fd, unsigned long req, void *arg, const char *what)
{
	int rc;

	if (ioctl(fd, req, arg) == 0)
		return 0;
	rc = -errno;
	TIDE_LOG_ERR_(vp->port->name, "vhost-net %s: %s", what, strerror(-rc));
	return rc;
}

/*
 * The offloads are the tap's, not vhost-net's: vhost-net passes the virtio-net header
 * through between our buffers and the tap, which takes partial checksums and GSO packets
 * from us always (the host side: CSUM, HOST_TSO4/6, HOST_ECN) and sends them to us as
 * TUNSETOFFLOAD allows (the guest side: GUEST_CSUM -> TUN_F_CSUM, GUEST_TSO4/6 ->
 * TUN_F_TSO4/6, GUEST_ECN -> TUN_F_TSO_ECN).
 */
#define VK_TAP_FEATURES                                                                       \
	(VIRTIO_BIT(VIRTIO_NET_F_CSUM) | VIRTIO_BIT(VIRTIO_NET_F_GUEST_CSUM) |                 \
	 VIRTIO_BIT(VIRTIO_NET_F_GUEST_TSO4) | VIRTIO_BIT(VIRTIO_NET_F_GUEST_TSO6) |           \
	 VIRTIO_BIT(VIRTIO_NET_F_GUEST_ECN) | VIRTIO_BIT(VIRTIO_NET_F_HOST_TSO4) |             \
	 VIRTIO_BIT(VIRTIO_NET_F_HOST_TSO6) | VIRTIO_BIT(VIRTIO_NET_F_HOST_ECN))

/* TUNSETOFFLOAD's argument for the negotiated features @f. */
static unsigned long tap_offloads(uint64_t f)
{
	return (f & VIRTIO_BIT(VIRTIO_NET_F_GUEST_CSUM) ? TUN_F_CSUM : 0) |
	       (f & VIRTIO_BIT(VIRTIO_NET_F_GUEST_TSO4) ? TUN_F_TSO4 : 0) |
	       (f & VIRTIO_BIT(VIRTIO_NET_F_GUEST_TSO6) ? TUN_F_TSO6 : 0) |
	       (f & VIRTIO_BIT(VIRTIO_NET_F_GUEST_ECN) ? TUN_F_TSO_ECN : 0);
}

static int vk_features_get(struct virtio_port *vp, uint64_t *out)
{
	struct virtio_kernel *vk = vp->vk;
	int rc = vk_ioctl(vp, vk->vfd[0], VK_GET_FEATURES, out, "VHOST_GET_FEATURES");

	/* Several pairs are several vhost-net devices on one multi-queue tap: the frontend's
	 * VIRTIO_NET_F_MQ is this transport's to grant, not a bit the kernel offers. */
	if (rc == 0 && vk->pairs > 1)
		*out |= VIRTIO_BIT(VIRTIO_NET_F_MQ);
	if (rc == 0)
		*out |= VK_TAP_FEATURES;
	return rc;
}

static int vk_features_set(struct virtio_port *vp, uint64_t f)
{
	struct virtio_kernel *vk = vp->vk;
	int rc;

	/* The tap's queues share its offloads: set through the first (never detached). */
	rc = vk_ioctl(vp, vk->tapfd[0], TUNSETOFFLOAD, (void *)tap_offloads(f), "TUNSETOFFLOAD");
	f &= ~(VIRTIO_BIT(VIRTIO_NET_F_MQ) | VK_TAP_FEATURES);
	for (unsigned i = 0; i < vk->pairs && rc == 0; i++)
		rc = vk_ioctl(vp, vk->vfd[i], VK_SET_FEATURES, &f, "VHOST_SET_FEATURES");
	return rc;
}

static int vk_mem_set(struct virtio_port *vp)
{
	struct virtio_kernel *vk = vp->vk;
	union {
		struct vk_memory m;
		uint8_t room[sizeof(struct vk_memory) +
			     (1 + VIRTIO_MAX_POOLS) * sizeof(struct vk_mem_region)];
	} t;
	unsigned n = 0;
	int rc = 0;

	memset(&t, 0, sizeof(t));
	t.m.r[n++] = (struct vk_mem_region){.gpa = (uintptr_t)vp->rings.base,
					     .size = vp->rings.len,
					     .uva = (uintptr_t)vp->rings.base};
	for (unsigned i = 0; i < vp->npools; i++) {
		struct tide_pool_mem mi;

		tide_pool_mem_info(vp->pools[i], &mi);
		t.m.r[n++] = (struct vk_mem_region){.gpa = (uintptr_t)mi.base, .size = mi.len,
						     .uva = (uintptr_t)mi.base};
	}
	t.m.nregions = n;
	for (unsigned i = 0; i < vk->pairs && rc == 0; i++)
		rc = vk_ioctl(vp, vk->vfd[i], VK_SET_MEM_TABLE, &t.m, "VHOST_SET_MEM_TABLE");
	return rc;
}

static int vk_queue_set(struct virtio_port *vp, unsigned v, const struct virtio_vring_addr *a,
			int kickfd)
{
	int fd = vp->vk->vfd[v / 2], rc;
	uint32_t idx = v % 2;
	struct vk_vring_state num = {.index = idx, .num = a->num},
			      base = {.index = idx, .num = virtio_vring_base(vp)};
	struct vk_vring_addr ad = {.index = idx, .desc = (uintptr_t)a->desc,
				   .used = (uintptr_t)a->used, .avail = (uintptr_t)a->avail};
	struct vk_vring_file kick = {.index = idx, .fd = kickfd},
			     call = {.index = idx, .fd = vp->callfd[v]}; /* -1: Tx, polled */

	if ((rc = vk_ioctl(vp, fd, VK_SET_VRING_NUM, &num, "VHOST_SET_VRING_NUM")) < 0 ||
	    (rc = vk_ioctl(vp, fd, VK_SET_VRING_BASE, &base, "VHOST_SET_VRING_BASE")) < 0 ||
	    (rc = vk_ioctl(vp, fd, VK_SET_VRING_ADDR, &ad, "VHOST_SET_VRING_ADDR")) < 0 ||
	    (rc = vk_ioctl(vp, fd, VK_SET_VRING_KICK, &kick, "VHOST_SET_VRING_KICK")) < 0)
		return rc;
	return vk_ioctl(vp, fd, VK_SET_VRING_CALL, &call, "VHOST_SET_VRING_CALL");
}

/* DRIVER_OK: each vring the port uses gets the tap as its backend, and runs. */
static int vk_status_set(struct virtio_port *vp, uint8_t status)
{
	struct virtio_kernel *vk = vp->vk;
	struct tide_port *p = vp->port;
	int rc;

	if (!(status & VIRTIO_STATUS_DRIVER_OK))
		return 0;
	for (unsigned v = 0; v < 2 * vk->pairs; v++) {
		struct vk_vring_file b = {.index = v % 2, .fd = vk->tapfd[v / 2]};

		if (v % 2 == 0 ? v / 2 >= p->nb_rxq : v / 2 >= p->nb_txq)
			continue;
		rc = vk_ioctl(vp, vk->vfd[v / 2], VK_NET_SET_BACKEND, &b, "VHOST_NET_SET_BACKEND");
		if (rc < 0)
			return rc;
		vk->backend[v] = true;
	}
	return 0;
}

static int vk_config_read(struct virtio_port *vp, unsigned off, void *buf, unsigned len)
{
	(void)vp;
	(void)off;
	(void)buf;
	(void)len;
	return -ENOTSUP;
}

/* ---- start and stop ---- */

/* Queue @i of the tap (the first one names it). */
static int tap_attach(struct virtio_port *vp, unsigned i)
{
	struct virtio_kernel *vk = vp->vk;
	const char *name = i == 0 ? vp->iface : vk->name;
	struct ifreq ifr;
	bool existed = false;
	int fd, hs = VIRTIO_HDR_LEN, rc;

	fd = open(TUN_DEV, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		TIDE_LOG_ERR_(vp->port->name, "%s: %s%s", TUN_DEV, strerror(-rc),
			      rc == -ENOENT ? " (the tun module: modprobe tun)" : "");
		return rc;
	}
	vk->tapfd[i] = fd;
	if (i == 0)
		existed = strchr(name, '%') == NULL && if_nametoindex(name) != 0;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	ifr.ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR | (vp->queues > 1 ? IFF_MULTI_QUEUE : 0);
	if (ioctl(fd, TUNSETIFF, &ifr) < 0) {
		rc = -errno;
		if (rc == -EPERM)
			TIDE_LOG_ERR_(vp->port->name, "iface=%s: cannot create or attach the tap: need CAP_NET_ADMIN",
				      name);
		else if (rc == -EINVAL)
			TIDE_LOG_ERR_(vp->port->name, "iface=%s: the kernel refused the tap: not a tap, or its queue mode differs (queues=%u needs a %s tap)",
				      name, vp->queues, vp->queues > 1 ? "multi-queue" : "single-queue");
		else if (rc == -EBUSY)
			TIDE_LOG_ERR_(vp->port->name, "iface=%s: the tap is in use (a single-queue tap has one reader)",
				      name);
		else
			TIDE_LOG_ERR_(vp->port->name, "iface=%s: TUNSETIFF: %s", name, strerror(-rc));
		return rc;
	}
	if (i == 0) {
		snprintf(vk->name, sizeof(vk->name), "%s", ifr.ifr_name);
		vk->made = !existed;
	}
	/* The header vhost-net passes through is the frontend's (12 bytes: VERSION_1); no
	 * offloads until a start negotiates some (vk_features_set), so the kernel sends whole
	 * frames with their checksums done. */
	if ((rc = vk_ioctl(vp, fd, TUNSETVNETHDRSZ, &hs, "TUNSETVNETHDRSZ")) < 0 ||
	    (rc = vk_ioctl(vp, fd, TUNSETOFFLOAD, (void *)0, "TUNSETOFFLOAD")) < 0)
		return rc;
	return 0;
}

static int vhost_open(struct virtio_port *vp, unsigned i)
{
	struct virtio_kernel *vk = vp->vk;
	int fd = open(vp->path, O_RDWR | O_CLOEXEC), rc;

	if (fd < 0) {
		rc = -errno;
		TIDE_LOG_ERR_(vp->port->name, "path=%s: %s%s", vp->path, strerror(-rc),
			      rc == -ENOENT ? " (the vhost-net module: modprobe vhost_net)" : "");
		return rc;
	}
	vk->vfd[i] = fd;
	if (ioctl(fd, VK_SET_OWNER) < 0) {
		rc = -errno;
		TIDE_LOG_ERR_(vp->port->name, "path=%s: not a vhost-net device (VHOST_SET_OWNER: %s)",
			      vp->path, strerror(-rc));
		return rc;
	}
	return 0;
}

static int tap_flags(struct virtio_kernel *vk, short *flags)
{
	struct ifreq ifr;

	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", vk->name);
	if (ioctl(vk->sock, SIOCGIFFLAGS, &ifr) < 0)
		return -errno;
	*flags = ifr.ifr_flags;
	return 0;
}

static int tap_set_up(struct virtio_kernel *vk, bool up)
{
	struct ifreq ifr;

	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", vk->name);
	if (ioctl(vk->sock, SIOCGIFFLAGS, &ifr) < 0)
		return -errno;
	ifr.ifr_flags = (short)(up ? ifr.ifr_flags | IFF_UP : ifr.ifr_flags & ~IFF_UP);
	return ioctl(vk->sock, SIOCSIFFLAGS, &ifr) < 0 ? -errno : 0;
}

static void vk_link(struct virtio_port *vp, int up)
{
	__atomic_store_n(&vp->up, up, __ATOMIC_RELAXED);
	tide_port_link_changed(vp->port);
}

static void vk_stop(struct virtio_port *vp)
{
	struct virtio_kernel *vk = vp->vk;
	struct tide_port *p = vp->port;

	virtio_queues_off(vp);
	for (unsigned i = 0; i < p->nb_rxq + p->nb_txq; i++) {
		bool rx = i < p->nb_rxq;
		struct virtio_fault_slot *fault = rx ? &((struct virtio_rxq *)p->rxq[i])->fault
						  : &((struct virtio_txq *)p->txq[i - p->nb_rxq])->fault;
		/* Acquire: pairs with the release in quiesce_fault(). */
		const char *why = __atomic_load_n(&fault->why, __ATOMIC_ACQUIRE);

		if (why != NULL) {
			__atomic_fetch_add(&vp->faults, 1, __ATOMIC_RELAXED);
			TIDE_LOG_WARN_(p->name, "vhost-net faulted: vring %u: %s",
				       rx ? 2 * i : 2 * (i - p->nb_rxq) + 1, why);
		}
	}
	/* Frames the kernel sends while the port is stopped are made whole (checksums done,
	 * no GSO), whatever the next start negotiates. */
	if (vk->tapfd[0] >= 0)
		vk_ioctl(vp, vk->tapfd[0], TUNSETOFFLOAD, (void *)0, "TUNSETOFFLOAD");
	/* The backend goes first: once it is -1 the kernel no longer touches the vring or
	 * the buffers posted on it, which go home after this. */
	for (unsigned v = 0; v < 2 * VIRTIO_MAX_QP; v++) {
		struct vk_vring_file b = {.index = v % 2, .fd = -1};

		if (vk->backend[v])
			vk_ioctl(vp, vk->vfd[v / 2], VK_NET_SET_BACKEND, &b, "VHOST_NET_SET_BACKEND -1");
		vk->backend[v] = false;
	}
	for (unsigned i = 0; i < VIRTIO_MAX_QP; i++) {
		if (vk->vfd[i] >= 0)
			close(vk->vfd[i]);
		vk->vfd[i] = -1;
	}
	vk->pairs = 0;
	if (__atomic_load_n(&vp->up, __ATOMIC_RELAXED))
		vk_link(vp, 0);
}

/* Queue @i of a multi-queue tap in or out of the tap's steering. */
static int tap_queue(struct virtio_port *vp, unsigned i, bool on)
{
	struct virtio_kernel *vk = vp->vk;
	struct ifreq ifr;
	int rc;

	if (vk->detached[i] == !on)
		return 0;
	memset(&ifr, 0, sizeof(ifr));
	ifr.ifr_flags = on ? IFF_ATTACH_QUEUE : IFF_DETACH_QUEUE;
	rc = vk_ioctl(vp, vk->tapfd[i], TUNSETQUEUE, &ifr, "TUNSETQUEUE");
	if (rc < 0)
		return rc;
	vk->detached[i] = !on;
	return 0;
}

static int vk_start(struct virtio_port *vp)
{
	struct virtio_kernel *vk = vp->vk;
	struct tide_port *p = vp->port;
	int rc;

	vk->pairs = p->nb_rxq > p->nb_txq ? p->nb_rxq : p->nb_txq;
	for (unsigned i = 0; i < vp->queues && vp->queues > 1; i++)
		if ((rc = tap_queue(vp, i, i < vk->pairs)) < 0)
			goto fail;
	for (unsigned i = 0; i < vk->pairs; i++)
		if ((rc = vhost_open(vp, i)) < 0)
			goto fail;
	if ((rc = virtio_dev_init(vp)) < 0)
		goto fail;
	TIDE_LOG_INFO_(p->name, "vhost-net on %s: tap %s, %u queue pair%s, features 0x%llx",
		       vp->path, vk->name, vk->pairs, vk->pairs > 1 ? "s" : "",
		       (unsigned long long)vp->features);
	vk_link(vp, 1);
	return 0;
fail:
	vk_stop(vp);
	return rc;
}

/* Port close (and a failed open): the tap left as it was found. */
static void vk_close(struct virtio_port *vp)
{
	struct virtio_kernel *vk = vp->vk;

	if (vk == NULL)
		return;
	if (vk->raised && tap_set_up(vk, false) < 0)
		TIDE_LOG_WARN_(vp->port->name, "tap %s: cannot set it down again", vk->name);
	for (unsigned i = 0; i < VIRTIO_MAX_QP; i++)
		if (vk->tapfd[i] >= 0)
			close(vk->tapfd[i]);
	if (vk->sock >= 0)
		close(vk->sock);
	if (vk->name[0] != '\0')
		TIDE_LOG_INFO_(vp->port->name, "tap %s %s", vk->name,
			       vk->made ? "removed" : "released");
	free(vk);
	vp->vk = NULL;
}

int virtio_kernel_open(struct virtio_port *vp)
{
	struct virtio_kernel *vk = calloc(1, sizeof(*vk));
	short fl = 0;
	int rc;

	if (vk == NULL)
		return -ENOMEM;
	vk->sock = -1;
	for (unsigned i = 0; i < VIRTIO_MAX_QP; i++)
		vk->tapfd[i] = vk->vfd[i] = -1;
	vp->vk = vk;
	vk->sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (vk->sock < 0) {
		rc = -errno;
		TIDE_LOG_ERR_(vp->port->name, "socket: %s", strerror(-rc));
		goto fail;
	}
	for (unsigned i = 0; i < vp->queues; i++)
		if ((rc = tap_attach(vp, i)) < 0)
			goto fail;
	if ((rc = tap_flags(vk, &fl)) < 0 || (!(fl & IFF_UP) && (rc = tap_set_up(vk, true)) < 0)) {
		TIDE_LOG_ERR_(vp->port->name, "tap %s: cannot bring it up: %s", vk->name,
			      strerror(-rc));
		goto fail;
	}
	vk->raised = !(fl & IFF_UP) && !vk->made;
	TIDE_LOG_INFO_(vp->port->name, "tap %s %s, %u queue%s", vk->name,
		       vk->made ? "created" : "attached", vp->queues, vp->queues > 1 ? "s" : "");
	return 0;
fail:
	vk_close(vp);
	return rc;
}

/* The tap's state: administratively up and its carrier on (IFF_RUNNING). */
static int vk_link_get(struct virtio_port *vp, int *up)
{
	short fl = 0;

	*up = 0;
	if (vp->vk == NULL || vp->vk->pairs == 0)
		return 0;
	if (tap_flags(vp->vk, &fl) == 0)
		*up = (fl & IFF_UP) && (fl & IFF_RUNNING);
	return 0;
}

const struct virtio_transport virtio_kernel_transport = {
	.name = "vhost-kernel",
	.features_get = vk_features_get,
	.features_set = vk_features_set,
	.mem_set = vk_mem_set,
	.queue_set = vk_queue_set,
	.status_set = vk_status_set,
	.config_read = vk_config_read,
	.start = vk_start,
	.stop = vk_stop,
	.close = vk_close,
	.link_get = vk_link_get,
	.any_pool = true,
	.rx_held = true,
	.rx_intr = true,
	.rx_intr_fd = virtio_callfd_rx,
	.packed_strict = true, /* vhost-net: no packed rings known */
};
