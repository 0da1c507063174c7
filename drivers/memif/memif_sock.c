/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * memif server sockets shared by several interface ids, as libmemif and VPP serve them:
 * one listener per socket path, any number of server ports (distinct ids) on it.
 *
 * With one port on the socket, the port takes each connection at accept and runs the whole
 * handshake (its counters see every violation, the id check included). With several, the
 * socket sends hello itself (the largest ring counts of its ports) and holds the connection
 * until init names an id; then the port with that id adopts it and checks the rest (secret,
 * its own ring counts). A connection for an unknown id, or for a port that is connected
 * already, is refused with the reason; one that says nothing within the smallest
 * handshake_timeout of the ports is dropped.
 *
 * Threads: control thread only, like the rest of the control plane; the list is locked so
 * that ports on different sockets may be driven from different threads. Ports that share a
 * socket must be polled from one thread.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "log.h"
#include "memif.h"
#include "osutil.h"

#define SOCK_PORTS   32 /* interface ids on one socket */
#define SOCK_PENDING 8	/* connections waiting for their init */

struct memif_pending {
	int fd;
	uint64_t deadline;
	struct memif_conn conn;
};

struct memif_listener {
	struct memif_listener *next;
	char path[108];
	bool abstract;
	int fd;
	struct memif_port *ports[SOCK_PORTS];
	unsigned nports;
	struct memif_pending pend[SOCK_PENDING];
	unsigned npend;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct memif_listener *listeners;

int memif_listener_join(struct memif_port *mp)
{
	struct memif_listener *l;
	int rc = 0;

	pthread_mutex_lock(&lock);
	for (l = listeners; l != NULL; l = l->next)
		if (l->abstract == mp->abstract && strcmp(l->path, mp->path) == 0)
			break;
	if (l != NULL) {
		for (unsigned i = 0; i < l->nports; i++)
			if (l->ports[i]->id == mp->id) {
				TIDE_LOG_ERR_(mp->port->name, "socket=%s: id=%u is served already by port %s",
					      mp->path, mp->id, l->ports[i]->port->name);
				rc = -EADDRINUSE;
				goto out;
			}
		if (l->nports == SOCK_PORTS) {
			TIDE_LOG_ERR_(mp->port->name, "socket=%s: already %d interface ids on it",
				      mp->path, SOCK_PORTS);
			rc = -ENOSPC;
			goto out;
		}
	} else {
		int fd = memif_listen(mp);

		if (fd < 0) {
			rc = fd;
			goto out;
		}
		l = calloc(1, sizeof(*l));
		if (l == NULL) {
			close(fd);
			rc = -ENOMEM;
			goto out;
		}
		snprintf(l->path, sizeof(l->path), "%s", mp->path);
		l->abstract = mp->abstract;
		l->fd = fd;
		l->next = listeners;
		listeners = l;
	}
	l->ports[l->nports++] = mp;
	mp->lst = l;
out:
	pthread_mutex_unlock(&lock);
	return rc;
}

static void pending_drop(struct memif_listener *l, unsigned i, const char *why)
{
	if (why != NULL)
		memif_refuse(l->pend[i].fd, why);
	else
		close(l->pend[i].fd);
	l->pend[i] = l->pend[--l->npend];
}

void memif_listener_leave(struct memif_port *mp)
{
	struct memif_listener *l = mp->lst, **pp;

	if (l == NULL)
		return;
	pthread_mutex_lock(&lock);
	for (unsigned i = 0; i < l->nports; i++)
		if (l->ports[i] == mp) {
			l->ports[i] = l->ports[--l->nports];
			break;
		}
	mp->lst = NULL;
	if (l->nports == 0) {
		while (l->npend)
			pending_drop(l, 0, "interface deleted");
		close(l->fd);
		if (!l->abstract)
			unlink(l->path);
		for (pp = &listeners; *pp != l; pp = &(*pp)->next)
			;
		*pp = l->next;
		free(l);
	}
	pthread_mutex_unlock(&lock);
}

/* Hello for a connection that has not named its id yet: what the socket's ports allow. */
static void pending_add(struct memif_listener *l, int fd)
{
	struct memif_limits lim, one;
	struct memif_pending *pd;
	struct memif_msg m;
	uint32_t ms = UINT32_MAX;

	if (l->npend == SOCK_PENDING) {
		memif_refuse(fd, "too many connections in handshake");
		return;
	}
	memif_server_limits(l->ports[0], &lim);
	for (unsigned i = 0; i < l->nports; i++) {
		memif_server_limits(l->ports[i], &one);
		if (one.c2s_rings > lim.c2s_rings)
			lim.c2s_rings = one.c2s_rings;
		if (one.s2c_rings > lim.s2c_rings)
			lim.s2c_rings = one.s2c_rings;
		if (l->ports[i]->hs_timeout_ms < ms)
			ms = l->ports[i]->hs_timeout_ms;
	}
	pd = &l->pend[l->npend];
	pd->fd = fd;
	pd->deadline = os_now_ns() + (uint64_t)ms * 1000000u;
	memif_conn_init(&pd->conn, MEMIF_ROLE_SERVER, &lim);
	memif_msg_hello_from_limits(&m, &lim, l->ports[0]->ifname);
	memif_conn_sent(&pd->conn, MEMIF_MSG_HELLO);
	if (memif_send_on(fd, &m, -1) < 0) {
		close(fd);
		return;
	}
	l->npend++;
}

/* A pending connection said something: init names the port that takes it. */
static void pending_step(struct memif_listener *l, unsigned i)
{
	struct memif_pending *pd = &l->pend[i];
	struct memif_port *to = NULL;
	const char *why;
	struct memif_msg m;
	int fd, rc;

	if (os_now_ns() > pd->deadline) {
		pending_drop(l, i, "handshake timed out");
		return;
	}
	rc = memif_recv_on(pd->fd, &m, &fd, &why);
	if (rc == 0)
		return;
	if (rc == 1 && memif_conn_step(&pd->conn, &m, fd >= 0, &why) < 0) {
		if (fd >= 0)
			close(fd);
		rc = -2;
	}
	if (rc < 0) {
		TIDE_LOG_WARN_("memif", "socket=%s: connection dropped in handshake: %s", l->path,
			       why);
		pending_drop(l, i, rc == -2 ? why : NULL);
		return;
	}
	/* memif_conn_step() let only init through in this state. */
	for (unsigned k = 0; k < l->nports; k++)
		if (l->ports[k]->id == m.init.id)
			to = l->ports[k];
	if (to == NULL || to->cfd >= 0) {
		pending_drop(l, i, to == NULL ? "ID not found" : "already connected");
		return;
	}
	fd = pd->fd;
	{
		struct memif_conn conn = pd->conn;
		uint64_t deadline = pd->deadline;

		l->pend[i] = l->pend[--l->npend];
		memif_server_adopt(to, fd, &conn, &m, deadline);
	}
}

void memif_listener_poll(struct memif_port *mp)
{
	struct memif_listener *l = mp->lst;
	int fd;

	if (l == NULL)
		return;
	pthread_mutex_lock(&lock);
	while ((fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
		if (l->nports == 1)
			memif_server_take(l->ports[0], fd);
		else
			pending_add(l, fd);
	}
	for (unsigned i = l->npend; i-- > 0;)
		pending_step(l, i);
	pthread_mutex_unlock(&lock);
}
