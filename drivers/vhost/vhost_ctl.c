/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vhost-user control plane (backend side): the control thread, the port-wide requests and
 * the entry points (the socket, the memory table and the vrings: vhost_ctl.h). A started
 * port has its own control thread (ctl_main()): it sleeps in poll() on the listening
 * socket (server), the connection, the reconnect time (client: a timeout, 50 ms after the
 * last attempt) and an eventfd that port stop, a worker's fault (vhost_fault()) and
 * tide_port_poll_ctl() write; an idle port costs no wakeup, and a wakeup costs only the
 * calls for what woke it. tide_port_poll_ctl() still handles at once what the frontend has
 * sent (tests rely on it; applications need not call it: the port's info has
 * needs_poll_ctl 0). Both run under the port's lock and never wait for the frontend: the
 * sockets are non-blocking.
 *
 * Every message is checked before it changes anything (vhost_msg_decode(): its version,
 * its payload size for its request, the number of file descriptors that came with it,
 * every index, size and address in it; then its handler's checks against the port's
 * state). A violation disconnects the frontend with a logged reason, every mapping and fd
 * of the connection is released, and the port waits for (server) or retries (client) the
 * next connection.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>

#include <tide/lcore.h>

#include "log.h"
#include "osutil.h"
#include "vhost_ctl.h"

/* ---- the port-wide requests ---- */

int vhost_msg_get_features(struct vhost_port *vp, const struct vhost_msg *m)
{
	return vhost_reply_u64(vp, m->h.request, vp->offered) < 0 ? -1 : 1;
}

int vhost_msg_get_protocol_features(struct vhost_port *vp, const struct vhost_msg *m)
{
	return vhost_reply_u64(vp, m->h.request, vp->proto_offered) < 0 ? -1 : 1;
}

int vhost_msg_get_queue_num(struct vhost_port *vp, const struct vhost_msg *m)
{
	return vhost_reply_u64(vp, m->h.request, vp->queues) < 0 ? -1 : 1;
}

int vhost_msg_set_features(struct vhost_port *vp, const struct vhost_msg *m)
{
	bool was[2 * VHOST_MAX_QP];
	uint64_t u = m->u;

	if (u & ~vp->offered) {
		vhost_disconnect(vp, KIND_CTL, "SET_FEATURES: 0x%llx not offered",
				 (unsigned long long)(u & ~vp->offered));
		return -1;
	}
	/* IOVAs need the misses (the backend's channel) and the acknowledged updates. */
	if ((u & VIRTIO_BIT(VIRTIO_F_ACCESS_PLATFORM)) && (~vp->proto & VHOST_IOTLB_PROTO)) {
		vhost_disconnect(vp, KIND_CTL,
				 "SET_FEATURES: VIRTIO_F_ACCESS_PLATFORM without the BACKEND_REQ "
				 "and REPLY_ACK protocol features");
		return -1;
	}
	vhost_vring_stop_all(vp, was);
	vp->features = u;
	return vhost_vring_start_all(vp, was);
}

int vhost_msg_set_protocol_features(struct vhost_port *vp, const struct vhost_msg *m)
{
	uint64_t u = m->u;

	if (u & ~vp->proto_offered) {
		vhost_disconnect(vp, KIND_CTL, "SET_PROTOCOL_FEATURES: 0x%llx not offered",
				 (unsigned long long)(u & ~vp->proto_offered));
		return -1;
	}
	vp->proto = u;
	return 0;
}

/*
 * The frontend's MTU (QEMU sends the host_mtu of its virtio-net device). A value out of
 * the port's range is refused (a failure reply with REPLY_ACK) and the link stays: the
 * MTU is advice, not memory the data path depends on.
 */
int vhost_msg_net_set_mtu(struct vhost_port *vp, const struct vhost_msg *m)
{
	const struct tide_port_info *pi = &vp->port->info;
	uint64_t u = m->u;

	if (u < pi->min_mtu || u > pi->max_mtu) {
		TIDE_LOG_WARN_(vp->port->name, "NET_SET_MTU %llu refused: out of range %u..%u",
			       (unsigned long long)u, pi->min_mtu, pi->max_mtu);
		if ((vp->proto & VIRTIO_BIT(VHOST_USER_PROTOCOL_F_REPLY_ACK)) &&
		    (m->h.flags & VHOST_USER_NEED_REPLY))
			return vhost_reply_u64(vp, m->h.request, 1) < 0 ? -1 : 1;
		return 1;
	}
	__atomic_store_n(&vp->mtu, (unsigned)u, __ATOMIC_RELAXED);
	return 0;
}

int vhost_msg_set_owner(struct vhost_port *vp, const struct vhost_msg *m)
{
	(void)m;
	vp->owner = true;
	return 0;
}

int vhost_msg_reset_owner(struct vhost_port *vp, const struct vhost_msg *m)
{
	(void)m;
	vhost_vrings_reset(vp);
	vp->niotlb = 0; /* a reset device: the guest's IOMMU mappings are gone with it */
	vp->features = 0;
	vp->owner = false;
	return 0;
}

/* Handle one complete message: decode, then its handler. Returns -1 when the frontend was
 * dropped. */
static int handle(struct vhost_port *vp)
{
	char why[sizeof(vp->reason)];
	struct vhost_msg m;
	int rc;

	if (vhost_msg_decode(vp->rx.buf, vp->rx.have, vp->rx.fds.n, vp->rx.fds.lost,
			     2 * vp->queues, &m, why, sizeof(why)) < 0) {
		vhost_disconnect(vp, KIND_CTL, "%s", why);
		return -1;
	}
	TIDE_LOG_DEBUG_(vp->port->name, "%s size %u 0x%llx", m.req->name, m.h.size,
			(unsigned long long)m.u);
	rc = m.req->handle(vp, &m);
	if (rc != 0)
		return rc < 0 ? -1 : 0;
	vhost_update_link(vp);
	/* REPLY_ACK: the frontend waits for the outcome of a message without a reply. */
	if ((vp->proto & VIRTIO_BIT(VHOST_USER_PROTOCOL_F_REPLY_ACK)) &&
	    (m.h.flags & VHOST_USER_NEED_REPLY))
		return vhost_reply_u64(vp, m.h.request, 0);
	return 0;
}

/* Wake the control thread: its fd set or timeout changed, or the port stops. */
static void ctl_wake(struct vhost_port *vp)
{
	vhost_wake(vp->wakefd);
}

/* A worker found a violation in guest memory (acquire: pairs with vhost_fault()), or
 * posted an IOTLB miss. */
static void check_faults(struct vhost_port *vp)
{
	for (unsigned v = 0; v < 2 * vp->queues && vp->cfd >= 0; v++) {
		struct quiesce_slot slot;
		const char *f;

		if (!vp->vr[v].running || vhost_vring_q(vp, v, &slot) == NULL)
			continue;
		f = __atomic_load_n(slot.fault, __ATOMIC_ACQUIRE);
		if (f != NULL)
			vhost_disconnect(vp, KIND_DATA, "vring %u: %s", v, f);
	}
	if (vp->cfd >= 0 && vhost_iotlb_on(vp))
		vhost_iotlb_service(vp); /* the misses the bursts posted */
}

/* Every message that is complete. */
static void ctl_messages(struct vhost_port *vp)
{
	while (vp->cfd >= 0 && vhost_sock_recv(vp) > 0) {
		if (handle(vp) < 0)
			break;
		vhost_rxmsg_reset(&vp->rx);
	}
}

/* Milliseconds until the next connection attempt (client role, not connected). */
static int retry_timeout(const struct vhost_port *vp)
{
	uint64_t now = os_now_ns();

	if (vp->retry_at <= now)
		return 0;
	return (int)((vp->retry_at - now + 999999) / 1000000);
}

/*
 * The control thread. After poll() it does only what woke it: the eventfd (a worker's
 * fault; port stop; a connection closed by tide_port_poll_ctl()) -> the fault check; the
 * connection readable, hung up or in error -> its messages (end of file or an error
 * disconnects with the reason); the listening socket readable -> accept. In client role
 * while not connected, a connection attempt when the retry time has come
 * (vhost_sock_connect() checks it; the poll timeout is set to it).
 */
static void *ctl_main(void *arg)
{
	struct vhost_port *vp = arg;

	pthread_mutex_lock(&vp->lock);
	while (!vp->quit) {
		struct pollfd pf[3];
		nfds_t n = 0, li = 0, ci = 0;
		int timeout = -1, rc;
		bool woke;

		pf[n++] = (struct pollfd){.fd = vp->wakefd, .events = POLLIN};
		if (vp->lfd >= 0) {
			li = n;
			pf[n++] = (struct pollfd){.fd = vp->lfd, .events = POLLIN};
		}
		if (vp->cfd >= 0) {
			ci = n;
			pf[n++] = (struct pollfd){.fd = vp->cfd, .events = POLLIN};
		} else if (!vp->server) {
			timeout = retry_timeout(vp);
		}
		/* The fds stay open while we wait: only this thread, tide_port_poll_ctl() (which
		 * wakes us when it changed them) and port stop (which joins us) close them. */
		pthread_mutex_unlock(&vp->lock);
		rc = poll(pf, n, timeout);
		if (rc < 0 && errno != EINTR) { /* (a failed poll() leaves every revents 0) */
			TIDE_LOG_WARN_(vp->port->name, "control thread: poll: %s", strerror(errno));
			os_sleep_ns(10 * 1000000); /* not a busy loop while poll() keeps failing */
		}
		woke = (pf[0].revents & POLLIN) != 0;
		if (woke) {
			uint64_t c;

			if (read(vp->wakefd, &c, sizeof(c)) < 0) {
				/* nothing to do: the eventfd is non-blocking and only we read it */
			}
		}
		pthread_mutex_lock(&vp->lock);
		if (vp->quit)
			break;
		if (woke)
			check_faults(vp);
		/* The connection first: a frontend that left makes room for the next one. The
		 * fd is the one polled, or closed by tide_port_poll_ctl() (cfd -1). */
		if (ci != 0 && pf[ci].revents != 0)
			ctl_messages(vp);
		if (li != 0 && (pf[li].revents & POLLIN))
			vhost_sock_accept(vp);
		else if (!vp->server && vp->cfd < 0)
			vhost_sock_connect(vp);
	}
	pthread_mutex_unlock(&vp->lock);
	return NULL;
}

/* ---- entry points ---- */

void vhost_lock(struct vhost_port *vp)
{
	unsigned i = tide_thread_index_;
	bool online = i < TIDE_MAX_THREADS &&
		      __atomic_load_n(&tide_qs_.thread[i].seen, __ATOMIC_RELAXED) != 0;

	if (pthread_mutex_trylock(&vp->lock) == 0)
		return;
	if (online)
		tide_thread_offline();
	pthread_mutex_lock(&vp->lock);
	if (online)
		tide_qs_report_(i); /* back online, at a quiescent point */
}

/*
 * The application's call: what the frontend has sent so far is handled when it returns.
 * Accepting and connecting are the control thread's (it polls for them); a connection
 * this call closed changes the thread's fd set, so it is woken to take the new one.
 */
int vhost_ctl_poll(struct vhost_port *vp)
{
	int cfd;

	if (!vp->started)
		return 0;
	vhost_lock(vp);
	cfd = vp->cfd;
	check_faults(vp);
	ctl_messages(vp);
	if (vp->cfd != cfd)
		ctl_wake(vp);
	pthread_mutex_unlock(&vp->lock);
	return 0;
}

static void queues_wakefd(struct vhost_port *vp, int fd)
{
	struct tide_port *p = vp->port;

	for (unsigned i = 0; i < p->nb_rxq; i++)
		((struct vhost_rxq *)p->rxq[i])->fault.wakefd = fd;
	for (unsigned i = 0; i < p->nb_txq; i++)
		((struct vhost_txq *)p->txq[i])->fault.wakefd = fd;
}

static int thread_start(struct vhost_port *vp)
{
	sigset_t all, old;
	char name[16];
	int rc;

	/* Signals are the application's threads' business. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&vp->thread, NULL, ctl_main, vp);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		TIDE_LOG_ERR_(vp->port->name, "cannot start the control thread: %s", strerror(rc));
		return -rc;
	}
	snprintf(name, sizeof(name), "%.11s-ctl", vp->port->name);
	pthread_setname_np(vp->thread, name);
	vp->thread_on = true;
	return 0;
}

int vhost_ctl_start(struct vhost_port *vp)
{
	int rc;

	vp->cfd = -1;
	vp->retry_at = 0;
	vp->quit = false;
	for (unsigned v = 0; v < 2 * VHOST_MAX_QP; v++)
		vp->vr[v].kickfd = vp->vr[v].callfd = -1;
	vp->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (vp->wakefd < 0) {
		rc = -errno;
		TIDE_LOG_ERR_(vp->port->name, "cannot create the control thread's eventfd: %s",
			      strerror(errno));
		return rc;
	}
	queues_wakefd(vp, vp->wakefd);
	if (vp->server && (rc = vhost_sock_listen(vp)) < 0)
		goto fail;
	vp->started = true;
	rc = thread_start(vp);
	if (rc == 0)
		return 0;
	vp->started = false;
	vhost_sock_unlisten(vp);
fail:
	queues_wakefd(vp, -1);
	os_close_fd(&vp->wakefd);
	return rc;
}

void vhost_ctl_stop(struct vhost_port *vp)
{
	if (vp->thread_on) {
		vhost_lock(vp);
		vp->quit = true;
		pthread_mutex_unlock(&vp->lock);
		ctl_wake(vp); /* port stop: the thread sees quit */
		pthread_join(vp->thread, NULL);
		vp->thread_on = false;
	}
	vhost_lock(vp);
	vhost_disconnect(vp, KIND_NORMAL, "port stopped");
	vhost_sock_unlisten(vp);
	/* Every vring is stopped: no burst writes the wake fd any more. */
	queues_wakefd(vp, -1);
	os_close_fd(&vp->wakefd);
	vp->started = false;
	pthread_mutex_unlock(&vp->lock);
}
