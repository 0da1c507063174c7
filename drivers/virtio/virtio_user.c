/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * virtio driver: the vhost-user transport (tide is the frontend, a backend process is the
 * device) and the port's control thread.
 *
 * The control thread connects (role=client: to a listening backend, retrying every 50 ms;
 * role=server: it listens and accepts one backend at a time), runs the handshake, then
 * sleeps in poll() on the connection and an eventfd (port stop, a worker's fault). The
 * handshake, in the order the protocol expects: GET_FEATURES; with
 * VHOST_USER_F_PROTOCOL_FEATURES, GET_PROTOCOL_FEATURES and SET_PROTOCOL_FEATURES (REPLY_ACK
 * and MQ when offered); GET_QUEUE_NUM with several queue pairs; SET_OWNER; then the
 * generic bring-up (virtio_dev_init): SET_FEATURES, SET_MEM_TABLE (each Rx pool's memfd and
 * the rings' area, at our own addresses), for each vring SET_VRING_NUM, _BASE (0; packed:
 * the wrap counter 1 in bit 15), _ADDR (packed: the descriptor ring, the driver and the
 * device event areas), _KICK (an eventfd) and _CALL (no fd: we poll), and SET_VRING_ENABLE
 * once all are set.
 * With REPLY_ACK every request without a reply asks for one and a non-zero answer fails
 * the handshake. Replies are checked (version, request, size) and waited for at most
 * VIRTIO_REPLY_MS.
 *
 * When the backend goes away (end of file, an error, an unexpected message) or a worker
 * faults a queue, the queues go off (quiesce), the connection is closed with a logged
 * reason, and the thread reconnects (client) or accepts again (server). The queues'
 * buffers of the old connection go home at their next burst (virtio.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "osutil.h"
#include "unix_sock.h"
#include "virtio.h"

#define PROTO_WANTED                                                                               \
	(VIRTIO_BIT(VHOST_USER_PROTOCOL_F_MQ) | VIRTIO_BIT(VHOST_USER_PROTOCOL_F_REPLY_ACK) |      \
	 VIRTIO_BIT(VHOST_USER_PROTOCOL_F_NET_MTU))

static const char *req_name(uint32_t r)
{
	static const char *const names[] = {
		[VHOST_USER_GET_FEATURES] = "GET_FEATURES",
		[VHOST_USER_SET_FEATURES] = "SET_FEATURES",
		[VHOST_USER_SET_OWNER] = "SET_OWNER",
		[VHOST_USER_SET_MEM_TABLE] = "SET_MEM_TABLE",
		[VHOST_USER_SET_VRING_NUM] = "SET_VRING_NUM",
		[VHOST_USER_SET_VRING_ADDR] = "SET_VRING_ADDR",
		[VHOST_USER_SET_VRING_BASE] = "SET_VRING_BASE",
		[VHOST_USER_SET_VRING_KICK] = "SET_VRING_KICK",
		[VHOST_USER_SET_VRING_CALL] = "SET_VRING_CALL",
		[VHOST_USER_GET_PROTOCOL_FEATURES] = "GET_PROTOCOL_FEATURES",
		[VHOST_USER_SET_PROTOCOL_FEATURES] = "SET_PROTOCOL_FEATURES",
		[VHOST_USER_GET_QUEUE_NUM] = "GET_QUEUE_NUM",
		[VHOST_USER_SET_VRING_ENABLE] = "SET_VRING_ENABLE",
		[VHOST_USER_NET_SET_MTU] = "NET_SET_MTU",
	};

	return r < sizeof(names) / sizeof(names[0]) && names[r] ? names[r] : "request";
}

/* ---- messages ---- */

static int msg_send(struct virtio_port *vp, uint32_t req, uint32_t flags, const void *pl,
		    uint32_t size, const int *fds, unsigned nfds)
{
	struct vhost_user_msg_hdr h = {.request = req, .flags = VHOST_USER_VERSION | flags,
				       .size = size};
	struct iovec iov[2] = {{&h, sizeof(h)}, {(void *)(uintptr_t)pl, size}};
	ssize_t n = unix_sock_send(vp->cfd, iov, size ? 2 : 1, fds, nfds, MSG_DONTWAIT);

	if (n != (ssize_t)(sizeof(h) + size)) {
		TIDE_LOG_WARN_(vp->port->name, "vhost-user %s: cannot send: %s", req_name(req),
			       n < 0 ? strerror((int)-n) : "short write");
		return n < 0 ? (int)n : -EIO;
	}
	return 0;
}

/* Read exactly @len bytes within the reply deadline; the eventfd aborts (port stop). */
static int read_full(struct virtio_port *vp, void *buf, size_t len, uint64_t deadline)
{
	size_t have = 0;

	while (have < len) {
		struct pollfd pf[2] = {{.fd = vp->cfd, .events = POLLIN},
				       {.fd = vp->wakefd, .events = POLLIN}};
		uint64_t now = os_now_ns();
		ssize_t n;

		if (__atomic_load_n(&vp->quit, __ATOMIC_ACQUIRE))
			return -ECANCELED;
		if (now >= deadline)
			return -ETIMEDOUT;
		if (poll(pf, 2, (int)((deadline - now) / 1000000 + 1)) < 0 && errno != EINTR)
			return -errno;
		if (!(pf[0].revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		n = recv(vp->cfd, (char *)buf + have, len - have, MSG_DONTWAIT);
		if (n == 0)
			return -ECONNRESET;
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			return -errno;
		}
		have += (size_t)n;
	}
	return 0;
}

/* The reply to @req: exactly @size bytes of payload. */
static int msg_reply(struct virtio_port *vp, uint32_t req, void *pl, uint32_t size)
{
	uint64_t deadline = os_now_ns() + (uint64_t)VIRTIO_REPLY_MS * 1000000;
	struct vhost_user_msg_hdr h;
	int rc = read_full(vp, &h, sizeof(h), deadline);

	if (rc < 0) {
		if (rc != -ECANCELED)
			TIDE_LOG_WARN_(vp->port->name, "vhost-user %s: no reply: %s", req_name(req),
				       strerror(-rc));
		return rc;
	}
	if (h.request != req || (h.flags & VHOST_USER_VERSION_MASK) != VHOST_USER_VERSION ||
	    !(h.flags & VHOST_USER_REPLY) || h.size != size) {
		TIDE_LOG_WARN_(vp->port->name, "vhost-user %s: bad reply (request %u, flags 0x%x, %u bytes; want %u bytes)",
			       req_name(req), h.request, h.flags, h.size, size);
		__atomic_fetch_add(&vp->ctl_errors, 1, __ATOMIC_RELAXED);
		return -EPROTO;
	}
	return read_full(vp, pl, size, deadline);
}

static int get_u64(struct virtio_port *vp, uint32_t req, uint64_t *out)
{
	int rc = msg_send(vp, req, 0, NULL, 0, NULL, 0);

	return rc < 0 ? rc : msg_reply(vp, req, out, sizeof(*out));
}

/* A request without a reply of its own: with REPLY_ACK, ask for one and check it. */
static int set_msg(struct virtio_port *vp, uint32_t req, const void *pl, uint32_t size,
		   const int *fds, unsigned nfds)
{
	bool ack = vp->proto & VIRTIO_BIT(VHOST_USER_PROTOCOL_F_REPLY_ACK);
	uint64_t r;
	int rc = msg_send(vp, req, ack ? VHOST_USER_NEED_REPLY : 0, pl, size, fds, nfds);

	if (rc < 0 || !ack)
		return rc;
	rc = msg_reply(vp, req, &r, sizeof(r));
	if (rc == 0 && r != 0) {
		TIDE_LOG_WARN_(vp->port->name, "vhost-user %s: the backend refused it (%llu)",
			       req_name(req), (unsigned long long)r);
		return -EIO;
	}
	return rc;
}

static int set_u64(struct virtio_port *vp, uint32_t req, uint64_t v)
{
	return set_msg(vp, req, &v, sizeof(v), NULL, 0);
}

static int set_state(struct virtio_port *vp, uint32_t req, unsigned v, unsigned num)
{
	struct vhost_user_vring_state st = {.index = v, .num = num};

	return set_msg(vp, req, &st, sizeof(st), NULL, 0);
}

/* ---- the transport ---- */

static int vu_features_get(struct virtio_port *vp, uint64_t *out)
{
	return get_u64(vp, VHOST_USER_GET_FEATURES, out);
}

static int vu_features_set(struct virtio_port *vp, uint64_t f)
{
	/* The vhost-user bit stays on when the backend offers it (the protocol features and
	 * SET_VRING_ENABLE depend on it). */
	return set_u64(vp, VHOST_USER_SET_FEATURES,
		       f | (vp->proto_on ? VIRTIO_BIT(VHOST_USER_F_PROTOCOL_FEATURES) : 0));
}

/*
 * The pools come first and the rings' area last: a backend translates every buffer's address
 * through this table, and DPDK's vhost library walks it in order for each descriptor (the
 * rings it translates once, at setup). With the rings first, every packet cost it one more
 * region compared (11 instructions a packet, callgrind, in net_vhost).
 */
static int vu_mem_set(struct virtio_port *vp)
{
	struct vhost_user_mem_table mt = {0};
	int fds[VHOST_USER_MAX_REGIONS];
	unsigned n = 0;

	for (unsigned i = 0; i < vp->npools; i++) {
		struct tide_pool_mem mi;

		tide_pool_mem_info(vp->pools[i], &mi);
		mt.r[n] = (struct vhost_user_mem_region){.gpa = (uintptr_t)mi.base, .size = mi.len,
							 .uva = (uintptr_t)mi.base};
		fds[n++] = mi.fd;
	}
	mt.r[n] = (struct vhost_user_mem_region){.gpa = (uintptr_t)vp->rings.base,
						 .size = vp->rings.len,
						 .uva = (uintptr_t)vp->rings.base};
	fds[n++] = vp->rings.fd;
	mt.nregions = n;
	return set_msg(vp, VHOST_USER_SET_MEM_TABLE, &mt,
		       8 + n * (uint32_t)sizeof(struct vhost_user_mem_region), fds, n);
}

static int vu_queue_set(struct virtio_port *vp, unsigned v, const struct virtio_vring_addr *a,
			int kickfd)
{
	struct vhost_user_vring_addr ad = {.index = v, .desc = (uintptr_t)a->desc,
					   .used = (uintptr_t)a->used,
					   .avail = (uintptr_t)a->avail};
	uint64_t call = v | VHOST_USER_VRING_NOFD, kick = v;
	int rc;

	if ((rc = set_state(vp, VHOST_USER_SET_VRING_NUM, v, a->num)) < 0 ||
	    (rc = set_state(vp, VHOST_USER_SET_VRING_BASE, v, virtio_vring_base(vp))) < 0 ||
	    (rc = set_msg(vp, VHOST_USER_SET_VRING_ADDR, &ad, sizeof(ad), NULL, 0)) < 0 ||
	    (rc = set_msg(vp, VHOST_USER_SET_VRING_CALL, &call, sizeof(call), NULL, 0)) < 0)
		return rc;
	return set_msg(vp, VHOST_USER_SET_VRING_KICK, &kick, sizeof(kick), &kickfd, 1);
}

/* vhost-user has no status register: DRIVER_OK enables the vrings (when the protocol
 * features are on; without them a vring runs once kicked). */
static int vu_status_set(struct virtio_port *vp, uint8_t status)
{
	struct tide_port *p = vp->port;
	int rc;

	if (!(status & VIRTIO_STATUS_DRIVER_OK) || !vp->proto_on)
		return 0;
	for (unsigned v = 0; v < 2 * (p->nb_rxq > p->nb_txq ? p->nb_rxq : p->nb_txq); v++) {
		if ((v % 2 == 0 ? v / 2 >= p->nb_rxq : v / 2 >= p->nb_txq))
			continue;
		if ((rc = set_state(vp, VHOST_USER_SET_VRING_ENABLE, v, 1)) < 0)
			return rc;
	}
	return 0;
}

static int vu_config_read(struct virtio_port *vp, unsigned off, void *buf, unsigned len)
{
	(void)vp;
	(void)off;
	(void)buf;
	(void)len;
	return -ENOTSUP;
}

const struct virtio_transport virtio_user_transport = {
	.name = "vhost-user",
	.features_get = vu_features_get,
	.features_set = vu_features_set,
	.mem_set = vu_mem_set,
	.queue_set = vu_queue_set,
	.status_set = vu_status_set,
	.config_read = vu_config_read,
	.start = virtio_ctl_start,
	.stop = virtio_ctl_stop,
};

/* What comes before the generic bring-up: the protocol features, the queue count, the
 * owner. */
static int vu_connect(struct virtio_port *vp)
{
	struct tide_port *p = vp->port;
	unsigned pairs = p->nb_rxq > p->nb_txq ? p->nb_rxq : p->nb_txq;
	uint64_t f, pf = 0, qn;
	int rc;

	vp->proto = 0;
	vp->proto_on = false;
	if ((rc = get_u64(vp, VHOST_USER_GET_FEATURES, &f)) < 0)
		return rc;
	if (f & VIRTIO_BIT(VHOST_USER_F_PROTOCOL_FEATURES)) {
		if ((rc = get_u64(vp, VHOST_USER_GET_PROTOCOL_FEATURES, &pf)) < 0 ||
		    (rc = msg_send(vp, VHOST_USER_SET_PROTOCOL_FEATURES, 0, &(uint64_t){pf & PROTO_WANTED},
				   8, NULL, 0)) < 0)
			return rc;
		vp->proto = pf & PROTO_WANTED;
		vp->proto_on = true;
	}
	if (pairs > 1) {
		if (!(vp->proto & VIRTIO_BIT(VHOST_USER_PROTOCOL_F_MQ))) {
			TIDE_LOG_ERR_(p->name, "%u queue pairs, but the backend does not offer VHOST_USER_PROTOCOL_F_MQ",
				      pairs);
			return -ENOTSUP;
		}
		if ((rc = get_u64(vp, VHOST_USER_GET_QUEUE_NUM, &qn)) < 0)
			return rc;
		if (qn < pairs) {
			TIDE_LOG_ERR_(p->name, "%u queue pairs, but the backend has %llu", pairs,
				      (unsigned long long)qn);
			return -ENOTSUP;
		}
	}
	if ((rc = msg_send(vp, VHOST_USER_SET_OWNER, 0, NULL, 0, NULL, 0)) < 0)
		return rc;
	/* The MTU the application set (as QEMU sends its host_mtu); info.mtu changes only
	 * while the port is stopped, and this thread runs only while it is started. */
	if (vp->mtu_given && (vp->proto & VIRTIO_BIT(VHOST_USER_PROTOCOL_F_NET_MTU)))
		return set_u64(vp, VHOST_USER_NET_SET_MTU, p->info.mtu);
	return 0;
}

/* ---- the control thread ---- */

static void link_set(struct virtio_port *vp, int up)
{
	if (__atomic_load_n(&vp->up, __ATOMIC_RELAXED) == up)
		return;
	__atomic_store_n(&vp->up, up, __ATOMIC_RELAXED);
	TIDE_LOG_INFO_(vp->port->name, "link %s", up ? "up" : "down");
	tide_port_link_changed(vp->port);
}

static void drop(struct virtio_port *vp, bool fault, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Close the connection: queues off first (no burst touches the rings afterwards). */
static void drop(struct virtio_port *vp, bool fault, const char *fmt, ...)
{
	char reason[128];
	va_list ap;

	if (vp->cfd < 0)
		return;
	virtio_queues_off(vp);
	shutdown(vp->cfd, SHUT_RDWR);
	close(vp->cfd);
	vp->cfd = -1;
	va_start(ap, fmt);
	vsnprintf(reason, sizeof(reason), fmt, ap);
	va_end(ap);
	__atomic_fetch_add(&vp->disconnects, 1, __ATOMIC_RELAXED);
	if (fault) {
		__atomic_fetch_add(&vp->faults, 1, __ATOMIC_RELAXED);
		TIDE_LOG_WARN_(vp->port->name, "backend faulted: %s", reason);
	} else {
		TIDE_LOG_INFO_(vp->port->name, "disconnected: %s", reason);
	}
	link_set(vp, 0);
	vp->retry_at = os_now_ns() + VIRTIO_RETRY_NS;
}

/* A new connection on cfd: handshake and bring the device up. */
static void connected(struct virtio_port *vp)
{
	int rc;

	__atomic_fetch_add(&vp->connects, 1, __ATOMIC_RELAXED);
	rc = vu_connect(vp);
	if (rc == 0)
		rc = virtio_dev_init(vp);
	if (rc < 0) {
		drop(vp, false, "handshake failed: %s", strerror(-rc));
		return;
	}
	TIDE_LOG_INFO_(vp->port->name, "connected to the backend on %s: features 0x%llx, protocol features 0x%llx",
		       vp->path, (unsigned long long)vp->features, (unsigned long long)vp->proto);
	link_set(vp, 1);
}

static void client_try(struct virtio_port *vp)
{
	int fd;

	vp->retry_at = os_now_ns() + VIRTIO_RETRY_NS;
	fd = unix_sock_connect(vp->path, false, SOCK_STREAM);
	if (fd < 0)
		return;
	vp->cfd = fd;
	connected(vp);
}

static void server_accept(struct virtio_port *vp)
{
	int fd = accept4(vp->lfd, NULL, NULL, SOCK_CLOEXEC);

	if (fd < 0)
		return;
	if (vp->cfd >= 0) {
		TIDE_LOG_WARN_(vp->port->name, "refused a second backend on %s", vp->path);
		close(fd);
		return;
	}
	vp->cfd = fd;
	connected(vp);
}

/* A worker faulted a queue. Acquire: pairs with the release in quiesce_fault(). */
static const char *fault_reason(struct virtio_port *vp, unsigned *vring)
{
	struct tide_port *p = vp->port;

	for (unsigned i = 0; i < p->nb_rxq; i++) {
		const char *why = __atomic_load_n(&((struct virtio_rxq *)p->rxq[i])->fault.why,
						  __ATOMIC_ACQUIRE);

		if (why != NULL) {
			*vring = 2 * i;
			return why;
		}
	}
	for (unsigned i = 0; i < p->nb_txq; i++) {
		const char *why = __atomic_load_n(&((struct virtio_txq *)p->txq[i])->fault.why,
						  __ATOMIC_ACQUIRE);

		if (why != NULL) {
			*vring = 2 * i + 1;
			return why;
		}
	}
	return NULL;
}

static void *ctl_main(void *arg)
{
	struct virtio_port *vp = arg;

	while (!__atomic_load_n(&vp->quit, __ATOMIC_ACQUIRE)) {
		struct pollfd pf[2] = {{.fd = vp->wakefd, .events = POLLIN}, {.fd = -1}};
		int timeout = -1;

		if (vp->cfd >= 0) {
			pf[1] = (struct pollfd){.fd = vp->cfd, .events = POLLIN};
		} else if (vp->server) {
			pf[1] = (struct pollfd){.fd = vp->lfd, .events = POLLIN};
		} else {
			uint64_t now = os_now_ns();

			timeout = vp->retry_at > now ? (int)((vp->retry_at - now) / 1000000 + 1) : 0;
		}
		if (poll(pf, 2, timeout) < 0 && errno != EINTR) {
			os_sleep_ns(10 * 1000000); /* not a busy loop while poll() keeps failing */
			continue;
		}
		if (pf[0].revents & POLLIN) {
			uint64_t c;
			const char *why;
			unsigned v = 0;

			if (read(vp->wakefd, &c, sizeof(c)) < 0) {
				/* non-blocking, only we read it */
			}
			if (__atomic_load_n(&vp->quit, __ATOMIC_ACQUIRE))
				break;
			if (vp->cfd >= 0 && (why = fault_reason(vp, &v)) != NULL) {
				drop(vp, true, "vring %u: %s", v, why);
				continue;
			}
		}
		if (vp->cfd >= 0) {
			if (pf[1].revents) {
				char b;
				ssize_t n = recv(vp->cfd, &b, 1, MSG_DONTWAIT | MSG_PEEK);

				if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
					drop(vp, false, "%s", n == 0 ? "the backend closed the connection"
								     : strerror(errno));
				} else if (n > 0) {
					/* The backend speaks only when asked. */
					__atomic_fetch_add(&vp->ctl_errors, 1, __ATOMIC_RELAXED);
					drop(vp, false, "unexpected message from the backend");
				}
			}
		} else if (vp->server) {
			if (pf[1].revents & POLLIN)
				server_accept(vp);
		} else if (os_now_ns() >= vp->retry_at) {
			client_try(vp);
		}
	}
	return NULL;
}

static void queues_wakefd(struct virtio_port *vp, int fd)
{
	struct tide_port *p = vp->port;

	for (unsigned i = 0; i < p->nb_rxq; i++)
		((struct virtio_rxq *)p->rxq[i])->fault.wakefd = fd;
	for (unsigned i = 0; i < p->nb_txq; i++)
		((struct virtio_txq *)p->txq[i])->fault.wakefd = fd;
}

int virtio_ctl_start(struct virtio_port *vp)
{
	struct tide_port *p = vp->port;
	sigset_t all, old;
	char name[16];
	int rc;

	vp->cfd = -1;
	vp->retry_at = 0;
	__atomic_store_n(&vp->quit, 0, __ATOMIC_RELAXED);
	vp->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (vp->wakefd < 0) {
		rc = -errno;
		TIDE_LOG_ERR_(p->name, "cannot create the control thread's eventfd: %s",
			      strerror(errno));
		return rc;
	}
	if (vp->server) {
		/* A socket file left by a process that died is taken over (unix_sock.h). */
		vp->lfd = unix_sock_listen(vp->path, false, SOCK_STREAM, 1);
		if (vp->lfd < 0) {
			rc = vp->lfd;
			vp->lfd = -1;
			TIDE_LOG_ERR_(p->name, "path=%s: cannot listen: %s", vp->path, strerror(-rc));
			goto fail;
		}
	}
	queues_wakefd(vp, vp->wakefd);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old); /* signals are the application's business */
	rc = -pthread_create(&vp->thread, NULL, ctl_main, vp);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc == 0) {
		snprintf(name, sizeof(name), "%.11s-ctl", p->name);
		pthread_setname_np(vp->thread, name);
		vp->thread_on = true;
		return 0;
	}
	TIDE_LOG_ERR_(p->name, "cannot start the control thread: %s", strerror(-rc));
	queues_wakefd(vp, -1);
	if (vp->lfd >= 0) {
		close(vp->lfd);
		vp->lfd = -1;
		unlink(vp->path);
	}
fail:
	close(vp->wakefd);
	vp->wakefd = -1;
	return rc;
}

void virtio_ctl_stop(struct virtio_port *vp)
{
	uint64_t one = 1;

	if (vp->thread_on) {
		__atomic_store_n(&vp->quit, 1, __ATOMIC_RELEASE);
		if (write(vp->wakefd, &one, sizeof(one)) < 0) {
			/* a full counter is readable already */
		}
		pthread_join(vp->thread, NULL);
		vp->thread_on = false;
	}
	drop(vp, false, "port stopped");
	if (vp->lfd >= 0) {
		close(vp->lfd);
		vp->lfd = -1;
		unlink(vp->path);
	}
	queues_wakefd(vp, -1);
	if (vp->wakefd >= 0)
		close(vp->wakefd);
	vp->wakefd = -1;
}
