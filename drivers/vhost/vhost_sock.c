/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vhost control plane: the socket. Listening (server) and connecting with retries
 * (client), accepting one frontend at a time, receiving a message in pieces with the file
 * descriptors that came with it (SCM_RIGHTS), replies, and the disconnect that releases
 * everything of a connection. The sockets are non-blocking: nothing here waits for the
 * frontend.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "log.h"
#include "unix_sock.h"
#include "vhost_ctl.h"

void vhost_rxmsg_reset(struct vhost_rxmsg *m)
{
	unix_sock_fds_close(&m->fds);
	m->have = 0;
}

void vhost_disconnect(struct vhost_port *vp, int kind, const char *fmt, ...)
{
	va_list ap;

	if (vp->cfd < 0)
		return;
	vhost_vrings_reset(vp);
	vhost_iotlb_reset(vp);
	vhost_unmap_all(vp);
	vhost_rxmsg_reset(&vp->rx);
	/* Shut down first: the frontend sees the end at once, and so does the control thread
	 * if it waits on this socket (its poll() holds the socket open past our close). */
	shutdown(vp->cfd, SHUT_RDWR);
	os_close_fd(&vp->cfd);
	va_start(ap, fmt);
	vsnprintf(vp->reason, sizeof(vp->reason), fmt, ap);
	va_end(ap);
	vp->features = vp->proto = 0;
	vp->owner = false;
	__atomic_fetch_add(&vp->disconnects, 1, __ATOMIC_RELAXED);
	if (kind != KIND_NORMAL) {
		__atomic_fetch_add(&vp->violations, 1, __ATOMIC_RELAXED);
		if (kind == KIND_CTL)
			__atomic_fetch_add(&vp->ctl_errors, 1, __ATOMIC_RELAXED);
		TIDE_LOG_WARN_(vp->port->name, "frontend disconnected: %s", vp->reason);
	} else {
		TIDE_LOG_INFO_(vp->port->name, "disconnected: %s", vp->reason);
	}
	vhost_update_link(vp);
	vp->retry_at = os_now_ns() + VHOST_RETRY_NS;
}

int vhost_send_reply(struct vhost_port *vp, uint32_t req, const void *payload, uint32_t size)
{
	uint8_t buf[sizeof(struct vhost_user_msg_hdr) + 16];
	struct vhost_user_msg_hdr h = {
	    .request = req, .flags = VHOST_USER_VERSION | VHOST_USER_REPLY, .size = size};

	memcpy(buf, &h, sizeof(h));
	memcpy(buf + sizeof(h), payload, size);
	if (send(vp->cfd, buf, sizeof(h) + size, MSG_DONTWAIT | MSG_NOSIGNAL) !=
	    (ssize_t)(sizeof(h) + size)) {
		vhost_disconnect(vp, KIND_NORMAL, "cannot reply to %s: %s", vhost_req_name(req),
				 strerror(errno));
		return -1;
	}
	return 0;
}

int vhost_reply_u64(struct vhost_port *vp, uint32_t req, uint64_t v)
{
	return vhost_send_reply(vp, req, &v, sizeof(v));
}

/* Take ownership of the message's fd @i (the cleanup closes the ones left). */
int vhost_take_fd(struct vhost_rxmsg *m, unsigned i)
{
	int fd = m->fds.fd[i];

	m->fds.fd[i] = -1;
	return fd;
}

/*
 * Receive (the rest of) one message. Returns 1 when a whole message is in vp->rx, 0 when
 * nothing more is waiting, -1 when the connection went down.
 */
int vhost_sock_recv(struct vhost_port *vp)
{
	struct vhost_rxmsg *m = &vp->rx;
	const size_t hl = sizeof(struct vhost_user_msg_hdr);

	for (;;) {
		size_t want;
		ssize_t n;

		if (m->have < hl) {
			want = hl - m->have;
		} else {
			struct vhost_user_msg_hdr h;

			memcpy(&h, m->buf, hl);
			if (h.size > VHOST_USER_MAX_PAYLOAD) {
				vhost_disconnect(
				    vp, KIND_CTL, "%s: payload of %u bytes (at most %zu)",
				    vhost_req_name(h.request), h.size, VHOST_USER_MAX_PAYLOAD);
				return -1;
			}
			want = hl + h.size - m->have;
			if (want == 0)
				return 1;
		}
		/* The fds of every piece gather in m->fds (VHOST_USER_MAX_FDS, the rest lost). */
		n = unix_sock_recv(vp->cfd, m->buf + m->have, want, &m->fds, NULL);
		if (n == -EAGAIN)
			return 0;
		if (n <= 0) {
			vhost_disconnect(
			    vp, KIND_NORMAL, "%s",
			    n == 0 ? (m->have ? "frontend closed the connection mid-message"
					      : "frontend closed the connection")
				   : strerror((int)-n));
			return -1;
		}
		m->have += (size_t)n;
	}
}

void vhost_sock_accept(struct vhost_port *vp)
{
	int fd = accept4(vp->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

	if (fd < 0)
		return;
	if (vp->cfd >= 0) {
		/* One frontend at a time. */
		TIDE_LOG_WARN_(vp->port->name, "refused a second frontend on %s", vp->path);
		close(fd);
		return;
	}
	vp->cfd = fd;
	vp->connects++;
	TIDE_LOG_INFO_(vp->port->name, "frontend connected on %s", vp->path);
}

void vhost_sock_connect(struct vhost_port *vp)
{
	uint64_t now = os_now_ns();
	int fd;

	if (now < vp->retry_at)
		return;
	vp->retry_at = now + VHOST_RETRY_NS;
	fd = unix_sock_connect(vp->path, false, SOCK_STREAM | SOCK_NONBLOCK);
	if (fd < 0)
		return;
	vp->cfd = fd;
	vp->connects++;
	TIDE_LOG_INFO_(vp->port->name, "connected to the frontend on %s", vp->path);
}

/* Server role: listen on the path (a socket file left by a process that died is taken
 * over: unix_sock.h). */
int vhost_sock_listen(struct vhost_port *vp)
{
	int fd = unix_sock_listen(vp->path, false, SOCK_STREAM, 4);

	if (fd < 0) {
		TIDE_LOG_ERR_(vp->port->name, "socket=%s: cannot listen: %s", vp->path,
			      strerror(-fd));
		return fd;
	}
	vp->lfd = fd;
	return 0;
}

void vhost_sock_unlisten(struct vhost_port *vp)
{
	if (vp->lfd >= 0) {
		os_close_fd(&vp->lfd);
		unlink(vp->path);
	}
}
