/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * memif control plane: the link. Up: each queue gets its ring and the connection's
 * generation is published (live). Down: every queue is taken off the shared memory
 * (quiesce_take()), a client drains what it published, the disconnect message goes out,
 * the regions and eventfds are released, and the reason is kept and counted; a zero-copy
 * connection keeps its socket open in quarantine until the peer lets go of our buffers
 * (memif.h). Control thread only.
 */
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "log.h"
#include "memif_ctl.h"
#include "quiesce.h"

/* ---- queues: publish and quiesce ---- */

/*
 * Take every queue off the shared memory (quiesce_take(): live = 0, the barrier that pairs
 * with memif_enter()'s store of busy then load of live, the wait for busy == 0). An Rx queue
 * has two entries: the bursts (busy) and the interrupt calls of memif.c (ibusy).
 */
static void memif_quiesce(struct memif_port *mp)
{
	struct tide_port *p = mp->port;
	struct quiesce_slot s[3 * TIDE_MAX_QUEUES]; /* nb_rxq, nb_txq <= TIDE_MAX_QUEUES */
	unsigned n = 0;

	for (unsigned i = 0; i < p->nb_rxq; i++)
		if (p->rxq[i]) {
			struct memif_rxq *q = (struct memif_rxq *)p->rxq[i];

			s[n++] = (struct quiesce_slot){&q->live, &q->ibusy, NULL};
			s[n++] = (struct quiesce_slot){&q->live, &q->busy, &q->fault};
		}
	for (unsigned i = 0; i < p->nb_txq; i++)
		if (p->txq[i]) {
			struct memif_txq *q = (struct memif_txq *)p->txq[i];

			s[n++] = (struct quiesce_slot){&q->live, &q->busy, &q->fault};
		}
	quiesce_take(p->name, mp->fence, s, n);
}

static void qring_set(struct memif_port *mp, struct memif_qring *r, const struct memif_ringinfo *ri)
{
	memset(r, 0, sizeof(*r));
	r->ring = (struct memif_ring *)(mp->rbase[ri->region] + ri->offset);
	r->size = (uint16_t)(1u << ri->log2);
	r->mask = (uint16_t)(r->size - 1);
	r->efd = ri->efd;
	/* Copy mode, client: the ring's own buffers, slot after slot, in region 0. */
	r->buf0 = mp->rbase[0] + ri->boff;
	r->boff0 = (uint32_t)ri->boff;
	r->rbase = mp->rbase;
	r->lim.region_size = mp->rsize;
	r->lim.n_regions = mp->nreg;
	/* Client: the length of one of our own buffers. Server: the client chose its buffer
	 * size (libmemif and DPDK: 16 bits); the region bounds where a descriptor may point. */
	r->lim.buffer_size = mp->role == MEMIF_ROLE_SERVER ? UINT16_MAX : mp->bufsize;
	r->lim.max_chain = mp->max_chain < r->size ? mp->max_chain : r->size;
}

/*
 * The link is up: give each queue its ring and publish the generation (release: pairs with
 * the acquire load of live in memif_enter(); the ring pointers are visible before it).
 */
void memif_link_up(struct memif_port *mp)
{
	struct tide_port *p = mp->port;
	int rx_dir = mp->role == MEMIF_ROLE_SERVER ? MEMIF_DIR_C2S : MEMIF_DIR_S2C;
	unsigned n_rx = rx_dir == MEMIF_DIR_C2S ? mp->n_c2s : mp->n_s2c;
	unsigned n_tx = rx_dir == MEMIF_DIR_C2S ? mp->n_s2c : mp->n_c2s;
	uint32_t gen = ++mp->gen;

	if (gen == 0 || gen >= MEMIF_SEEN_FAULT) /* never a "seen" marker */
		gen = mp->gen = 1;
	for (unsigned i = 0; i < p->nb_rxq && i < n_rx; i++) {
		struct memif_rxq *q = (struct memif_rxq *)p->rxq[i];

		qring_set(mp, &q->r, &mp->ring[rx_dir][i]);
		/* Copy-mode client: every S2C slot's buffer is posted now, not at the first Rx
		 * burst ([S2C-head], release). The server zeroes head and tail when it accepts
		 * the connect (libmemif does), so not earlier; and a server that answers our
		 * first Tx before we post finds no buffer: libmemif's icmp_responder then
		 * treats the request as zero-copy, rewrites it in place and answers it twice
		 * rewritten. The worker's resync publishes the same head. */
		if (mp->role == MEMIF_ROLE_CLIENT && !mp->zc)
			memif_publish(&q->r.ring->head, (uint16_t)q->r.size);
		/* The receiver of a ring owns its mask flag: ours polled (no kicks) unless the
		 * application asked for interrupts. */
		if (__atomic_load_n(&q->intr, __ATOMIC_RELAXED))
			__atomic_fetch_and(&q->r.ring->flags, (uint16_t)~MEMIF_RING_FLAG_MASK_INT,
					   __ATOMIC_RELEASE);
		else
			__atomic_fetch_or(&q->r.ring->flags, MEMIF_RING_FLAG_MASK_INT,
					  __ATOMIC_RELEASE);
		__atomic_store_n(&q->live, gen, __ATOMIC_RELEASE);
	}
	for (unsigned i = 0; i < p->nb_txq && i < n_tx; i++) {
		struct memif_txq *q = (struct memif_txq *)p->txq[i];

		qring_set(mp, &q->r, &mp->ring[!rx_dir][i]);
		__atomic_store_n(&q->live, gen, __ATOMIC_RELEASE);
	}
	mp->connects++;
	mp->retry_ns = MEMIF_RETRY_NS;
	mp->last_err = 0;
	__atomic_store_n(&mp->up, 1, __ATOMIC_RELAXED);
	tide_port_link_changed(p);
	tide_log(TIDE_LOG_NOTICE, p->name, "link up: '%s', %u C2S and %u S2C rings of %u slots",
		 mp->peer_name, mp->n_c2s, mp->n_s2c,
		 1u << mp->ring[MEMIF_DIR_C2S][0].log2);
}

/* ---- zero-copy quarantine (memif.h) ---- */

/* Has the peer closed the control socket @fd? What it still sent is read and dropped. */
static bool peer_closed(int fd)
{
	for (int i = 0; i < 16; i++) {
		struct memif_msg m;
		const char *why;
		int mfd, rc = memif_recv_on(fd, &m, &mfd, &why);

		if (rc == 0)
			return false;
		if (rc == -1)
			return true;
		if (rc == 1 && mfd >= 0)
			close(mfd);
	}
	return false;
}

/* The link of a zero-copy connection went down: its buffers wait, the socket stays open. */
static void zq_begin(struct memif_port *mp)
{
	os_close_fd(&mp->zq_fd);
	mp->zq_fd = mp->cfd;
	mp->cfd = -1;
	mp->zq_gen = mp->gen;
	mp->zq_close_by = os_now_ns() + MEMIF_ZQ_CLOSE_MS * 1000000ull;
	mp->zq_until = 0;
	mp->zq_active = true;
}

bool memif_zq_step(struct memif_port *mp, uint64_t now)
{
	if (!mp->zq_active)
		return false;
	if (mp->zq_fd >= 0) {
		if (!peer_closed(mp->zq_fd)) {
			if (now < mp->zq_close_by)
				return true;
			TIDE_LOG_WARN_(mp->port->name, "the peer kept its control socket open %u ms after the disconnect; its zero-copy buffers go back %u ms from now",
				       MEMIF_ZQ_CLOSE_MS, mp->zq_ms);
		}
		os_close_fd(&mp->zq_fd);
		mp->zq_until = now + (uint64_t)mp->zq_ms * 1000000u;
	}
	if (now < mp->zq_until)
		return true;
	/* Release: pairs with the workers' acquire in memif_zq_clear(). */
	__atomic_store_n(&mp->zq_clear, mp->zq_gen, __ATOMIC_RELEASE);
	mp->zq_active = false;
	return false;
}

/* ---- link down ---- */

static void free_regions(struct memif_port *mp)
{
	for (unsigned i = 0; i < MEMIF_MAX_REGIONS; i++) {
		struct memif_region *r = &mp->reg[i];

		if (r->mapped && r->addr != NULL)
			munmap(r->addr, r->size);
		/* Zero-copy regions are pool memory: neither mapped nor owned here. */
		if (r->mapped || mp->role == MEMIF_ROLE_SERVER)
			os_close_fd(&r->fd);
		r->fd = -1;
		r->addr = NULL;
		r->size = 0;
		r->mapped = false;
		mp->rbase[i] = NULL;
		mp->rsize[i] = 0;
	}
	mp->nreg = 0;
	for (unsigned d = 0; d < 2; d++)
		for (unsigned i = 0; i < MEMIF_MAX_RINGS; i++) {
			if (mp->ring[d][i].present)
				os_close_fd(&mp->ring[d][i].efd);
			mp->ring[d][i].present = false;
			mp->ring[d][i].efd = -1;
		}
}

/*
 * Client, link going down by our choice (port stop): give the server up to
 * MEMIF_DRAIN_NS to consume what we published on C2S before the disconnect message goes
 * out. The server then has every packet we published, and a server that unmaps the
 * regions on disconnect while its poller still runs finds that poller on an empty ring:
 * this narrows such a server's race, it cannot close it (docs/drivers/memif.md, "as server
 * crashing when a tide client stops"). The queues are quiesced.
 */
static void drain_c2s(struct memif_port *mp)
{
	struct tide_port *p = mp->port;
	uint64_t end = os_now_ns() + MEMIF_DRAIN_NS;

	if (mp->role != MEMIF_ROLE_CLIENT)
		return;
	for (unsigned i = 0; i < p->nb_txq; i++) {
		struct memif_txq *q = (struct memif_txq *)p->txq[i];

		if (q == NULL || q->seen == MEMIF_SEEN_NONE || q->seen == MEMIF_SEEN_FAULT ||
		    q->r.ring == NULL)
			continue;
		/* [C2S-tail] acquire: the server is done with the slots before tail. */
		while (__atomic_load_n(&q->r.ring->tail, __ATOMIC_ACQUIRE) != q->head &&
		       os_now_ns() < end)
			sched_yield();
	}
}

void memif_ctl_disconnect(struct memif_port *mp, const char *reason, int kind, bool send)
{
	bool was_up = mp->up, repeat;
	uint64_t now;

	if (mp->cfd < 0)
		return;
	memif_quiesce(mp);
	if (send && was_up && kind == MEMIF_DISC_NORMAL)
		drain_c2s(mp);
	if (send) {
		struct memif_msg m = {.type = MEMIF_MSG_DISCONNECT};

		m.disconnect.code = kind != MEMIF_DISC_NORMAL;
		snprintf(m.disconnect.reason, sizeof(m.disconnect.reason), "%s", reason);
		memif_ctl_send(mp, &m, -1);
	}
	if (mp->zc && was_up)
		zq_begin(mp); /* the peer had our buffers: they wait for it to close */
	else
		os_close_fd(&mp->cfd);
	free_regions(mp);
	/* A client refused again for the same reason says it once, not at every retry. */
	repeat = !was_up && strcmp(mp->reason, reason) == 0;
	snprintf(mp->reason, sizeof(mp->reason), "%s", reason);
	__atomic_fetch_add(&mp->disconnects, 1, __ATOMIC_RELAXED);
	if (kind != MEMIF_DISC_NORMAL) {
		__atomic_fetch_add(&mp->violations, 1, __ATOMIC_RELAXED);
		if (kind == MEMIF_DISC_CTL)
			__atomic_fetch_add(&mp->ctl_errors, 1, __ATOMIC_RELAXED);
		TIDE_LOG_WARN_(mp->port->name, "%s: %s",
			       was_up ? "link down, the peer broke a rule" : "handshake failed",
			       reason);
	} else if (was_up) {
		tide_log(TIDE_LOG_NOTICE, mp->port->name, "link down: %s", reason);
	} else if (!send && !repeat) {
		/* The peer ended the handshake: a refusal (id, secret, rings...). */
		TIDE_LOG_WARN_(mp->port->name, "refused by '%s': %s",
			       mp->peer_name[0] ? mp->peer_name : "peer", reason);
	}
	__atomic_store_n(&mp->up, 0, __ATOMIC_RELAXED);
	if (was_up)
		tide_port_link_changed(mp->port);
	mp->next_msg = 0;
	/* Client: retry at once after a link that worked, back off after a failed attempt. */
	now = os_now_ns();
	if (was_up || mp->retry_ns == 0)
		mp->retry_ns = MEMIF_RETRY_NS;
	else if (mp->retry_ns < MEMIF_RETRY_MAX_NS)
		mp->retry_ns *= 2;
	mp->retry_at = now + (was_up ? 0 : mp->retry_ns);
}
