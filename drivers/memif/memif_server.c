/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * memif control plane: the server's side of the handshake. Hello with the limits of the
 * port, then the client's init (id and secret), regions (a sealed memfd at least as large
 * as announced, mapped at connect), rings (their cookies checked at connect) and connect,
 * each acknowledged; the link comes up with connected. The order and the ranges of the
 * messages are memif_msg.c's to check (memif_conn_step()); this file checks what needs the
 * operating system or the port.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "memif_ctl.h"

/*
 * A region file from the peer: a regular file at least @size bytes long that cannot shrink
 * under our mapping (a shrink would turn our loads into SIGBUS). We seal it ourselves when
 * the peer did not; a file that cannot be sealed is refused.
 */
static const char *region_check(int fd, uint64_t size)
{
	struct stat st;
	int seals;

	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return "region is not a file";
	if ((uint64_t)st.st_size < size)
		return "region file smaller than announced";
	seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0 || !(seals & F_SEAL_SHRINK)) {
		if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK) < 0)
			return "region can shrink (not a sealable memfd)";
	}
	return NULL;
}

void memif_server_limits(const struct memif_port *mp, struct memif_limits *lim)
{
	const struct tide_port *p = mp->port;

	*lim = (struct memif_limits){
		.regions = MEMIF_MAX_REGIONS,
		.c2s_rings = (uint16_t)(p->nb_rxq ? p->nb_rxq : 1),
		.s2c_rings = (uint16_t)(p->nb_txq ? p->nb_txq : 1),
		.max_log2_ring_size = MEMIF_LOG2_RING_SIZE_MAX,
	};
}

static void server_hello(struct memif_port *mp)
{
	struct memif_limits lim;
	struct memif_msg m;

	memif_server_limits(mp, &lim);
	memif_conn_init(&mp->conn, MEMIF_ROLE_SERVER, &lim);
	memif_msg_hello_from_limits(&m, &lim, mp->ifname);
	memif_conn_sent(&mp->conn, MEMIF_MSG_HELLO);
	if (memif_ctl_send(mp, &m, -1) < 0)
		memif_ctl_disconnect(mp, "cannot send hello", MEMIF_DISC_NORMAL, false);
}

void memif_refuse(int fd, const char *reason)
{
	struct memif_msg m = {.type = MEMIF_MSG_DISCONNECT};

	snprintf(m.disconnect.reason, sizeof(m.disconnect.reason), "%s", reason);
	memif_send_on(fd, &m, -1);
	close(fd);
}

void memif_server_take(struct memif_port *mp, int fd)
{
	if (mp->cfd >= 0) {
		/* One connection per interface; tell the newcomer why it is refused. */
		memif_refuse(fd, "already connected");
		return;
	}
	mp->cfd = fd;
	mp->peer_name[0] = '\0';
	mp->hs_deadline = os_now_ns() + (uint64_t)mp->hs_timeout_ms * 1000000u;
	server_hello(mp);
}

void memif_server_adopt(struct memif_port *mp, int fd, const struct memif_conn *conn,
			const struct memif_msg *init, uint64_t deadline)
{
	mp->cfd = fd;
	mp->peer_name[0] = '\0';
	mp->hs_deadline = deadline;
	mp->conn = *conn;
	/* The socket advertised the largest ring counts of its ports; this one's apply. */
	memif_server_limits(mp, &mp->conn.limits);
	memif_server_handle(mp, init, -1);
}

/* Map every region and check every ring; the answer to connect. */
static const char *server_map(struct memif_port *mp)
{
	mp->nreg = mp->conn.n_regions;
	for (unsigned i = 0; i < mp->nreg; i++) {
		struct memif_region *r = &mp->reg[i];
		void *a = mmap(NULL, r->size, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, 0);

		if (a == MAP_FAILED)
			return "cannot map region";
		r->addr = a;
		r->mapped = true;
		mp->rbase[i] = a;
		mp->rsize[i] = r->size;
	}
	mp->n_c2s = mp->conn.n_rings[MEMIF_DIR_C2S];
	mp->n_s2c = mp->conn.n_rings[MEMIF_DIR_S2C];
	for (unsigned d = 0; d < 2; d++)
		for (unsigned i = 0; i < mp->conn.n_rings[d]; i++) {
			const struct memif_ringinfo *ri = &mp->ring[d][i];
			struct memif_ring *ring = (struct memif_ring *)(mp->rbase[ri->region] +
									ri->offset);
			const char *why = NULL;

			if (memif_ring_check_cookie(ring, &why) < 0)
				return why;
			/* Single 16-bit stores: the peer must never see a torn index. */
			__atomic_store_n(&ring->head, 0, __ATOMIC_RELAXED);
			__atomic_store_n(&ring->tail, 0, __ATOMIC_RELAXED);
		}
	return NULL;
}

void memif_server_handle(struct memif_port *mp, const struct memif_msg *m, int fd)
{
	struct memif_msg ans = {.type = MEMIF_MSG_ACK};
	const char *why = NULL;

	switch (m->type) {
	case MEMIF_MSG_INIT:
		if (m->init.id != mp->id)
			why = "ID not found";
		else if (memif_msg_secret_check(mp->secret, &m->init, &why) < 0)
			break;
		snprintf(mp->peer_name, sizeof(mp->peer_name), "%s", m->init.name);
		break;
	case MEMIF_MSG_ADD_REGION:
		why = region_check(fd, m->add_region.size);
		mp->reg[m->add_region.index].fd = fd;
		mp->reg[m->add_region.index].size = m->add_region.size;
		break;
	case MEMIF_MSG_ADD_RING: {
		int d = (m->add_ring.flags & MEMIF_RING_FLAG_C2S) ? MEMIF_DIR_C2S : MEMIF_DIR_S2C;
		struct memif_ringinfo *ri = &mp->ring[d][m->add_ring.index];

		ri->present = true;
		ri->region = m->add_ring.region;
		ri->offset = m->add_ring.offset;
		ri->log2 = m->add_ring.log2_ring_size;
		ri->efd = fd;
		if (ri->log2 == 0)
			why = "ring of one slot";
		break;
	}
	case MEMIF_MSG_CONNECT:
		why = server_map(mp);
		ans.type = MEMIF_MSG_CONNECTED;
		snprintf(ans.connected.if_name, sizeof(ans.connected.if_name), "%s", mp->ifname);
		if (why == NULL && mp->peer_name[0] == '\0')
			snprintf(mp->peer_name, sizeof(mp->peer_name), "%s", m->connect.if_name);
		break;
	case MEMIF_MSG_DISCONNECT:
		memif_ctl_disconnect(mp, m->disconnect.reason[0] ? m->disconnect.reason
								 : "peer disconnected", MEMIF_DISC_NORMAL, false);
		return;
	default:
		break;
	}
	if (why != NULL) {
		memif_ctl_disconnect(mp, why, MEMIF_DISC_CTL, true);
		return;
	}
	memif_conn_sent(&mp->conn, ans.type);
	if (memif_ctl_send(mp, &ans, -1) < 0) {
		memif_ctl_disconnect(mp, "cannot answer", MEMIF_DISC_NORMAL, false);
		return;
	}
	if (ans.type == MEMIF_MSG_CONNECTED)
		memif_link_up(mp);
}
