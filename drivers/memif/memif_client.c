/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * memif control plane: the client's side. Connecting (and reconnecting, with a back-off)
 * to the server's socket; region 0 (a sealed memfd holding the rings and, in copy mode,
 * their buffers) and, in zero-copy mode, one region per Rx pool; the eventfds; then the
 * plan sent one message at a time as the server acknowledges: init, regions, rings,
 * connect. The link comes up with connected.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "log.h"
#include "mem.h"
#include "memif_ctl.h"
#include "unix_sock.h"

/* Region 0 and the eventfds for the plan negotiated from hello. */
static const char *client_regions(struct memif_port *mp)
{
	struct tide_port *p = mp->port;
	unsigned nrings = mp->n_c2s + mp->n_s2c, slots = 1u << mp->log2;
	uint64_t rings = (uint64_t)nrings * memif_ring_bytes(mp->log2), size, boff;
	struct memif_region *r0 = &mp->reg[0];
	uint8_t *a;
	int fd;

	rings = (rings + 63) & ~(uint64_t)63;
	size = rings + (mp->zc ? 0 : (uint64_t)nrings * slots * mp->bufsize);
	if (size > UINT32_MAX)
		return "region 0 above 4 GiB (fewer rings or smaller buffers)";
	fd = memfd_create("memif", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return "memfd_create failed";
	if (ftruncate(fd, (off_t)size) < 0 || fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK) < 0 ||
	    (a = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
		close(fd);
		return "cannot create region 0";
	}
	/* Resident from here on, as a pool is: the first pass of frames through our buffers
	 * takes no page faults on the data path. */
	tide_mem_prefault(a, size);
	*r0 = (struct memif_region){.addr = a, .size = size, .fd = fd, .mapped = true};
	mp->rbase[0] = a;
	mp->rsize[0] = size;
	mp->nreg = 1;
	boff = rings;
	for (unsigned g = 0; g < nrings; g++) {
		int d = g < mp->n_c2s ? MEMIF_DIR_C2S : MEMIF_DIR_S2C;
		unsigned idx = g < mp->n_c2s ? g : g - mp->n_c2s;
		struct memif_ringinfo *ri = &mp->ring[d][idx];
		struct memif_ring *ring;

		ri->present = true;
		ri->region = 0;
		ri->offset = (uint32_t)(g * memif_ring_bytes(mp->log2));
		ri->log2 = mp->log2;
		ri->boff = boff;
		ri->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (ri->efd < 0)
			return "eventfd failed";
		ring = (struct memif_ring *)(a + ri->offset);
		ring->cookie = MEMIF_COOKIE;
		/* The receiver owns the flag: the server sets it on C2S if it polls; we set ours
		 * on S2C at link up (memif_link_up()). A masked C2S ring would never wake an
		 * interrupt-mode server (libmemif's default). */
		ring->flags = 0;
		for (unsigned j = 0; j < slots && !mp->zc; j++) {
			ring->desc[j].region = 0;
			ring->desc[j].offset = (uint32_t)(boff + (uint64_t)j * mp->bufsize);
			ring->desc[j].length = mp->bufsize;
		}
		boff += (uint64_t)slots * mp->bufsize;
	}
	if (mp->zc) {
		/* Every distinct Rx pool becomes one region after region 0. */
		for (unsigned i = 0; i < p->nb_rxq; i++) {
			struct memif_rxq *q = (struct memif_rxq *)p->rxq[i];
			struct tide_pool_mem mi;
			unsigned k;

			for (k = 1; k < mp->nreg; k++)
				if (mp->rbase[k] == (uint8_t *)q->pool->elt_base)
					break;
			q->zreg = (uint16_t)k;
			if (k < mp->nreg)
				continue;
			tide_pool_mem_info(q->pool, &mi);
			mp->reg[k] = (struct memif_region){.addr = mi.base, .size = mi.len,
							   .fd = mi.fd, .mapped = false};
			mp->rbase[k] = mi.base;
			mp->rsize[k] = mi.len;
			mp->nreg++;
		}
		if (mp->nreg > mp->conn.limits.regions)
			return "the server accepts too few regions for zero-copy";
		for (unsigned i = 0; i < p->nb_txq; i++) {
			struct memif_txq *q = (struct memif_txq *)p->txq[i];

			q->nzpool = 0;
			for (unsigned k = 1; k < mp->nreg && k <= MEMIF_MAX_ZC_POOLS; k++)
				for (unsigned j = 0; j < p->nb_rxq; j++) {
					struct memif_rxq *rq = (struct memif_rxq *)p->rxq[j];

					if (rq->zreg == k) {
						q->zpool[k - 1] = rq->pool;
						q->nzpool = k;
						break;
					}
				}
		}
	}
	return NULL;
}

/* The plan: init, regions, C2S rings, S2C rings, connect. Message @i of it. */
static void client_msg(struct memif_port *mp, unsigned i, struct memif_msg *m, int *fd)
{
	unsigned nr = mp->nreg;

	memset(m, 0, sizeof(*m));
	*fd = -1;
	if (i == 0) {
		m->type = MEMIF_MSG_INIT;
		m->init.version = MEMIF_VERSION;
		m->init.id = mp->id;
		m->init.mode = MEMIF_MODE_ETHERNET;
		snprintf(m->init.secret, sizeof(m->init.secret), "%s", mp->secret);
		snprintf(m->init.name, sizeof(m->init.name), "%s", mp->ifname);
	} else if (i <= nr) {
		m->type = MEMIF_MSG_ADD_REGION;
		m->add_region.index = (uint16_t)(i - 1);
		m->add_region.size = mp->reg[i - 1].size;
		*fd = mp->reg[i - 1].fd;
	} else if (i <= nr + mp->n_c2s + mp->n_s2c) {
		unsigned g = i - nr - 1;
		int d = g < mp->n_c2s ? MEMIF_DIR_C2S : MEMIF_DIR_S2C;
		unsigned idx = g < mp->n_c2s ? g : g - mp->n_c2s;
		const struct memif_ringinfo *ri = &mp->ring[d][idx];

		m->type = MEMIF_MSG_ADD_RING;
		m->add_ring.flags = d == MEMIF_DIR_C2S ? MEMIF_RING_FLAG_C2S : 0;
		m->add_ring.index = (uint16_t)idx;
		m->add_ring.region = ri->region;
		m->add_ring.offset = ri->offset;
		m->add_ring.log2_ring_size = ri->log2;
		*fd = ri->efd;
	} else {
		m->type = MEMIF_MSG_CONNECT;
		snprintf(m->connect.if_name, sizeof(m->connect.if_name), "%s", mp->ifname);
	}
}

static void client_send_next(struct memif_port *mp)
{
	struct memif_msg m;
	int fd;

	client_msg(mp, mp->next_msg++, &m, &fd);
	if (memif_conn_sent(&mp->conn, m.type) < 0)
		memif_ctl_disconnect(mp, "cannot send", MEMIF_DISC_NORMAL, false);
	else if (memif_ctl_send(mp, &m, fd) < 0)
		/* libmemif closes without a reason when it refuses an id. */
		memif_ctl_disconnect(mp, "the peer closed the connection (unknown id?)",
				     MEMIF_DISC_NORMAL, false);
}

void memif_client_handle(struct memif_port *mp, const struct memif_msg *m)
{
	struct tide_port *p = mp->port;
	const char *why;

	switch (m->type) {
	case MEMIF_MSG_HELLO:
		snprintf(mp->peer_name, sizeof(mp->peer_name), "%s", m->hello.name);
		mp->n_c2s = (uint16_t)(p->nb_txq ? p->nb_txq : 1);
		mp->n_s2c = (uint16_t)(p->nb_rxq ? p->nb_rxq : 1);
		if (mp->n_c2s > mp->conn.limits.c2s_rings)
			mp->n_c2s = mp->conn.limits.c2s_rings;
		if (mp->n_s2c > mp->conn.limits.s2c_rings)
			mp->n_s2c = mp->conn.limits.s2c_rings;
		if (mp->log2 > mp->conn.limits.max_log2_ring_size) {
			memif_ctl_disconnect(mp, "ring size above the server's maximum", MEMIF_DISC_NORMAL, true);
			return;
		}
		why = client_regions(mp);
		if (why != NULL) {
			memif_ctl_disconnect(mp, why, MEMIF_DISC_NORMAL, true);
			return;
		}
		mp->next_msg = 0;
		client_send_next(mp);
		break;
	case MEMIF_MSG_ACK:
		client_send_next(mp);
		break;
	case MEMIF_MSG_CONNECTED:
		memif_link_up(mp);
		break;
	case MEMIF_MSG_DISCONNECT:
		memif_ctl_disconnect(mp, m->disconnect.reason[0] ? m->disconnect.reason
								 : "peer disconnected", MEMIF_DISC_NORMAL, false);
		break;
	default:
		break;
	}
}

void memif_client_try(struct memif_port *mp)
{
	uint64_t now = os_now_ns();
	int fd;

	if (now < mp->retry_at)
		return;
	if (mp->retry_ns == 0)
		mp->retry_ns = MEMIF_RETRY_NS;
	fd = unix_sock_connect(mp->path, mp->abstract, SOCK_SEQPACKET | SOCK_NONBLOCK);
	if (fd >= 0) {
		mp->cfd = fd;
		mp->peer_name[0] = '\0';
		mp->hs_deadline = now + (uint64_t)mp->hs_timeout_ms * 1000000u;
		memif_conn_init(&mp->conn, MEMIF_ROLE_CLIENT, NULL);
		return;
	}
	/* No server yet: say so once per cause, and back off. */
	if (-fd != mp->last_err) {
		mp->last_err = -fd;
		tide_log(TIDE_LOG_NOTICE, mp->port->name, "socket=%s%s: %s; retrying",
			 mp->abstract ? "@" : "", mp->path, strerror(-fd));
	}
	mp->retry_at = now + mp->retry_ns;
	if (mp->retry_ns < MEMIF_RETRY_MAX_NS)
		mp->retry_ns *= 2;
}
