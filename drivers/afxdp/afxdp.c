/* SPDX-License-Identifier: BSD-3-Clause */
/* AF_XDP driver: spec, queue setup, sockets and UMEM, start/stop. Fast path: afxdp_rxtx.c. */
#include <errno.h>
#include <linux/if_xdp.h>
#include <linux/sockios.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "mem.h"
#include "afxdp.h"
#include "log.h"
#include "osutil.h"

#ifndef SO_BUSY_POLL
#define SO_BUSY_POLL 46
#endif
#ifndef SO_PREFER_BUSY_POLL
#define SO_PREFER_BUSY_POLL 69
#endif
#ifndef SO_BUSY_POLL_BUDGET
#define SO_BUSY_POLL_BUDGET 70
#endif

/* Busy polling as net_af_xdp sets it: 20 us per poll, NAPI budget 64. */
#define AFXDP_BUSY_POLL_DEF 20
#define AFXDP_BUSY_BUDGET_DEF 64

static struct afxdp_port *aport(const struct tide_port *p)
{
	return p->priv;
}

/* ---- pool layout ---- */

/*
 * Can @pool be the UMEM? Frames are pool elements: a power of two of 2048 or 4096 bytes,
 * starting at the page-aligned area base, mbuf header first, at least 192 bytes of headroom.
 */
static int check_pool(struct afxdp_port *ap, struct tide_pool *pool)
{
	struct tide_pool_mem mi;
	unsigned hr = tide_pktpool_headroom(pool);
	const char *why = NULL;

	tide_pool_mem_info(pool, &mi);
	if (mi.elt_size != 2048 && mi.elt_size != 4096)
		why = "its elements are not 2048 or 4096 bytes";
	else if (ap->frame && mi.elt_size != ap->frame)
		why = "its element size differs from frame=";
	else if (hr < TIDE_AFXDP_HEADROOM || hr + AFXDP_MBUF_HDR >= mi.elt_size)
		why = "its mbuf headroom is below 192 bytes";
	else if (mi.base != tide_pool_elt(pool, 0) || ((uintptr_t)mi.base & 4095) != 0)
		why = "its elements do not start at a page-aligned area";
	if (why == NULL)
		return 0;
	if (ap->frame && mi.elt_size != ap->frame) {
		/* Most often tide-fwd, whose pool has 2048-byte frames: say what to change in
		 * the spec, not in C. */
		TIDE_LOG_ERR_(ap->port->name,
			      "frame=%u: the packet pool given to this port (%s) has %u-byte frames; "
			      "leave frame= out to use the pool's (tide-fwd: always 2048)",
			      ap->frame, tide_pool_name(pool), mi.elt_size);
		return -EINVAL;
	}
	TIDE_LOG_ERR_(ap->port->name, "pool %s cannot be an AF_XDP UMEM: %s (element %u bytes, headroom %u); create it with tide_afxdp_pool_create(name, n, cache, 2048, &pool), or tide_pktpool_create(name, n, cache, 2048 - 64 - 192, &opts) with opts .elt_pow2 = 1, .headroom = 192",
		      tide_pool_name(pool), why, mi.elt_size, hr);
	return -EINVAL;
}

int tide_afxdp_pool_create(const char *name, unsigned n, unsigned cache, unsigned frame_size,
			   struct tide_pool **out)
{
	struct tide_pktpool_opts o = {.sz = sizeof(o), .elt_pow2 = 1,
				      .headroom = TIDE_AFXDP_HEADROOM};

	if (frame_size == 0)
		frame_size = 2048;
	if (frame_size != 2048 && frame_size != 4096) {
		TIDE_LOG_ERR_("afxdp", "%s: frame size %u must be 2048 or 4096", name, frame_size);
		return -EINVAL;
	}
	return tide_pktpool_create(name, n, cache,
				   frame_size - AFXDP_MBUF_HDR - TIDE_AFXDP_HEADROOM, &o, out);
}

/* ---- queues ---- */

static int afxdp_configure(struct tide_port *p, unsigned nb_rxq, unsigned nb_txq)
{
	aport(p)->nb_rxq = nb_rxq;
	aport(p)->nb_txq = nb_txq;
	return 0;
}

static int afxdp_rxq_setup(struct tide_port *p, unsigned qid, unsigned nb_desc,
			   struct tide_pool *pool, const struct tide_rxq_conf *conf,
			   struct tide_rxq **out)
{
	struct afxdp_port *ap = aport(p);
	struct afxdp_rxq *q;
	int rc = check_pool(ap, pool);

	if (rc < 0)
		return rc;
	for (unsigned i = 0; i < AFXDP_MAX_QUEUES; i++) {
		struct afxdp_rxq *o = (struct afxdp_rxq *)p->rxq[i];

		if (o != NULL && i != qid && o->pool != pool) {
			TIDE_LOG_ERR_(p->name, "Rx queue %u: pool %s differs from Rx queue %u's pool %s; the queues of a port share one UMEM",
				      qid, tide_pool_name(pool), i, tide_pool_name(o->pool));
			return -EINVAL;
		}
	}
	q = tide_zalloc_aligned(sizeof(*q));
	if (q == NULL)
		return -ENOMEM;
	{
		struct tide_pool_mem mi;

		tide_pool_mem_info(pool, &mi);
		tide_port_frame_limit(p, mi.elt_size - AFXDP_XDP_HEADROOM);
	}
	q->pool = pool;
	q->nb_desc = nb_desc;
	q->batch = conf->free_thresh;
	q->ap = ap;
	link_rx_init(&q->link, &q->pub, LINK_ADDR);
	*out = &q->pub;
	return 0;
}

static int afxdp_txq_setup(struct tide_port *p, unsigned qid, unsigned nb_desc,
			   const struct tide_txq_conf *conf, struct tide_txq **out)
{
	struct afxdp_port *ap = aport(p);
	struct afxdp_txq *q = tide_zalloc_aligned(sizeof(*q));
	struct txc_drv d = {
		.slots_empty = true, /* the completion ring names the frames */
		.count_mode = true,
		.walk_empty = TIDE_BENCH_VARIANTS && ap->txc_walk,
		.advance = afxdp_tx_advance,
	};
	int rc;

	(void)qid;
	if (q == NULL)
		return -ENOMEM;
	d.drv = q;
	rc = txc_init(&q->txc, &q->pub, nb_desc, conf, &d);
	if (rc < 0) {
		free(q);
		return rc;
	}
	/* The slots stay empty (the completion ring names the frames): the link moves frame
	 * addresses, completion ring -> fill ring (afxdp_tx_reap). */
	q->txc.link_kind = LINK_ADDR;
	q->nb_desc = nb_desc;
	q->ap = ap;
	*out = &q->pub;
	return 0;
}

static void afxdp_rxq_release(struct tide_rxq *pub)
{
	free(pub);
}

/* ---- start / stop ---- */

static unsigned pow2_at_least(unsigned v)
{
	unsigned r = 64;

	while (r < v)
		r <<= 1;
	return r;
}

/* Give back every frame the kernel might still hold: the sockets are closed. */
static void reclaim_frames(struct afxdp_port *ap)
{
	struct tide_pool_mem mi;

	if (ap->owner == NULL)
		return;
	tide_pool_mem_info(ap->pool, &mi);
	for (unsigned i = 0; i < mi.n; i++)
		if (ap->owner[i]) {
			ap->owner[i] = 0;
			tide_pool_put(ap->pool, tide_pool_elt(ap->pool, i));
		}
}

static void afxdp_stop(struct tide_port *p)
{
	struct afxdp_port *ap = aport(p);

	/* tide_port_stop() ran a grace period first: no burst of this port is running and no
	 * refill of another port reaps these completion rings, so the sockets can go. */
	afxdp_xs_save(ap); /* the sockets' counters die with them */
	afxdp_lib_log_begin();
	/* The first socket holds the UMEM's fd: delete it last. */
	for (unsigned i = AFXDP_MAX_QUEUES; i-- > 0;) {
		xsk_socket__delete(ap->sk[i].xsk);
		ap->sk[i].xsk = NULL;
	}
	if (ap->umem)
		xsk_umem__delete(ap->umem);
	ap->umem = NULL;
	afxdp_lib_log_end();
	afxdp_prog_detach(ap);
	for (unsigned i = 0; i < ap->nb_txq; i++)
		if (p->txq[i]) {
			struct txc *t = p->txq[i]->txc;

			/* Frames in flight go back below (reclaim_frames), uncompleted: counted
			 * released here, as their completion would have been (afxdp_tx_reap). */
			if (t->index_only)
				txc_count_released(t, t->tail - t->done);
			txc_release_all(t);
		}
	reclaim_frames(ap);
	free(ap->owner);
	ap->owner = NULL;
	memset(ap->sk, 0, sizeof(ap->sk));
	if (ap->own_pool) {
		tide_pool_free(ap->own_pool);
		ap->own_pool = NULL;
	}
	ap->pool = NULL;
}

/* Create the socket of queue index @k; EBUSY right after an earlier socket on the same queue
 * closed is retried for up to about two seconds. */
static int make_socket(struct afxdp_port *ap, unsigned k, struct afxdp_rxq *rq,
		       struct afxdp_txq *tq, struct xsk_ring_prod *fill,
		       struct xsk_ring_cons *comp)
{
	struct tide_port *p = ap->port;
	struct xsk_socket_config cfg = {
		.rx_size = rq ? rq->nb_desc : 0,
		.tx_size = tq ? tq->nb_desc : 0,
		.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD,
	};
	uint64_t pause_ns = 20 * 1000 * 1000;
	unsigned dq = ap->queue + k;
	int rc, nq;

	cfg.bind_flags = (ap->need_wakeup ? XDP_USE_NEED_WAKEUP : 0) |
			 (ap->zc == AFXDP_ZC_YES ? XDP_ZEROCOPY : 0) |
			 (ap->zc == AFXDP_ZC_NO ? XDP_COPY : 0);
	for (unsigned tries = 0;; tries++) {
		rc = xsk_socket__create_shared(&ap->sk[k].xsk, ap->dev, dq, ap->umem,
					       rq ? &rq->rx : NULL, tq ? &tq->tx : NULL, fill,
					       comp, &cfg);
		if (rc != -EBUSY || tries == 40)
			break;
		/* The queue is still held by a socket closing in the kernel: back off
		 * 20, 40, 80, 160 ms, then 160 ms per try (about 6 s in all). */
		os_sleep_ns(pause_ns);
		if (pause_ns < 100 * 1000 * 1000)
			pause_ns *= 2;
	}
	if (rc == 0)
		return 0;
	ap->sk[k].xsk = NULL;
	nq = afxdp_dev_queues(ap->dev);
	if (rc == -EINVAL && nq > 0 && dq >= (unsigned)nq)
		TIDE_LOG_ERR_(p->name, "dev=%s has no queue %u (it has %d)", ap->dev, dq, nq);
	else if (rc == -EOPNOTSUPP && ap->zc == AFXDP_ZC_YES)
		TIDE_LOG_ERR_(p->name, "dev=%s queue %u: zero-copy not supported by the driver; use zero_copy=auto or no",
			      ap->dev, dq);
	else if (rc == -EPERM)
		TIDE_LOG_ERR_(p->name, "dev=%s: AF_XDP sockets need root (CAP_NET_RAW)", ap->dev);
	else
		TIDE_LOG_ERR_(p->name, "dev=%s queue %u: cannot create the AF_XDP socket: %s",
			      ap->dev, dq, strerror(-rc));
	return rc;
}

static void busy_poll_clear(int fd)
{
	int zero = 0;

	setsockopt(fd, SOL_SOCKET, SO_BUSY_POLL, &zero, sizeof(zero));
	setsockopt(fd, SOL_SOCKET, SO_PREFER_BUSY_POLL, &zero, sizeof(zero));
}

/*
 * Preferred busy polling on socket @fd: SO_PREFER_BUSY_POLL, SO_BUSY_POLL (microseconds),
 * SO_BUSY_POLL_BUDGET (Linux 5.11). Returns 0, or -errno with the socket left as it was
 * (what was set is taken back) and *@what naming the option refused.
 */
static int busy_poll_set(const struct afxdp_port *ap, int fd, const char **what)
{
	int one = 1, us = (int)ap->busy_poll, budget = (int)ap->busy_budget, rc;

	*what = "SO_PREFER_BUSY_POLL";
	if (setsockopt(fd, SOL_SOCKET, SO_PREFER_BUSY_POLL, &one, sizeof(one)) < 0)
		return -errno;
	*what = "SO_BUSY_POLL";
	if (setsockopt(fd, SOL_SOCKET, SO_BUSY_POLL, &us, sizeof(us)) < 0)
		goto undo;
	*what = "SO_BUSY_POLL_BUDGET";
	if (setsockopt(fd, SOL_SOCKET, SO_BUSY_POLL_BUDGET, &budget, sizeof(budget)) == 0)
		return 0;
undo:
	rc = -errno;
	busy_poll_clear(fd);
	return rc;
}

static int start_sockets(struct afxdp_port *ap)
{
	struct tide_port *p = ap->port;
	struct tide_pool_mem mi;
	struct xsk_umem_config uc = {0};
	unsigned nsock = ap->nb_rxq > ap->nb_txq ? ap->nb_rxq : ap->nb_txq;
	unsigned max_rx = 0, max_tx = 0;
	int rc;

	for (unsigned i = 0; i < ap->nb_rxq; i++)
		if (((struct afxdp_rxq *)p->rxq[i])->nb_desc > max_rx)
			max_rx = ((struct afxdp_rxq *)p->rxq[i])->nb_desc;
	for (unsigned i = 0; i < ap->nb_txq; i++)
		if (((struct afxdp_txq *)p->txq[i])->nb_desc > max_tx)
			max_tx = ((struct afxdp_txq *)p->txq[i])->nb_desc;
	tide_pool_mem_info(ap->pool, &mi);
	/* Fill ring twice the Rx ring, as net_af_xdp's (4096 for 2048): an Rx queue posts
	 * the frames it may hold (its descriptors) and refills by that count, never by the
	 * ring's room, so the ring itself never limits a refill. */
	uc.fill_size = 2 * pow2_at_least(max_rx);
	uc.comp_size = pow2_at_least(max_tx);
	uc.frame_size = mi.elt_size;
	uc.frame_headroom = tide_pktpool_headroom(ap->pool) - TIDE_AFXDP_HEADROOM;
	for (unsigned k = 0; k < nsock; k++) {
		struct afxdp_rxq *rq = k < ap->nb_rxq ? (struct afxdp_rxq *)p->rxq[k] : NULL;
		struct afxdp_txq *tq = k < ap->nb_txq ? (struct afxdp_txq *)p->txq[k] : NULL;
		struct xsk_ring_prod *fill = rq ? &rq->fill : &ap->sk[k].fill_spare;
		struct xsk_ring_cons *comp = tq ? &tq->comp : &ap->sk[k].comp_spare;
		int fd;

		/* libxdp 1.3.1 leaves cached ring indices uninitialised: start from zero. */
		memset(fill, 0, sizeof(*fill));
		memset(comp, 0, sizeof(*comp));
		if (rq)
			memset(&rq->rx, 0, sizeof(rq->rx));
		if (tq)
			memset(&tq->tx, 0, sizeof(tq->tx));
		if (k == 0) {
			rc = xsk_umem__create(&ap->umem, mi.base, (uint64_t)mi.n * mi.elt_size, fill,
					      comp, &uc);
			if (rc < 0) {
				TIDE_LOG_ERR_(p->name, "cannot register pool %s as UMEM: %s%s",
					      tide_pool_name(ap->pool), strerror(-rc),
					      rc == -EPERM ? " (needs root)" : "");
				ap->umem = NULL;
				return rc;
			}
		}
		rc = make_socket(ap, k, rq, tq, fill, comp);
		if (rc < 0)
			return rc;
		fd = xsk_socket__fd(ap->sk[k].xsk);
		rc = xsk_socket__update_xskmap(ap->sk[k].xsk, ap->xsks_map_fd);
		if (rc < 0) {
			TIDE_LOG_ERR_(p->name, "cannot add the socket of queue %u to the XSKMAP: %s",
				      ap->queue + k, strerror(-rc));
			return rc;
		}
		if (ap->busy_on) {
			const char *what;

			rc = busy_poll_set(ap, fd, &what);
			if (rc < 0) {
				/* An older kernel (before 5.11) or a refused value: poll as
				 * without busy polling, say so once. */
				ap->busy_on = false;
				tide_log(ap->busy_explicit ? TIDE_LOG_WARNING : TIDE_LOG_NOTICE,
					 p->name, "dev=%s: busy polling off, the kernel refused %s (%s)",
					 ap->dev, what, strerror(-rc));
				/* the sockets already set go back as well */
				for (unsigned j = 0; j < k; j++)
					busy_poll_clear(xsk_socket__fd(ap->sk[j].xsk));
			}
		}
		if (k == 0) {
			struct xdp_options xo;
			socklen_t len = sizeof(xo);

			ap->zero_copy = getsockopt(fd, SOL_XDP, XDP_OPTIONS, &xo, &len) == 0 &&
					(xo.flags & XDP_OPTIONS_ZEROCOPY);
		}
		if (rq) {
			rq->fd = fd;
			rq->wakeup = ap->need_wakeup;
			rq->hold_max = rq->nb_desc;
		}
		if (tq) {
			tq->fd = fd;
			tq->wakeup = ap->need_wakeup;
		}
	}
	return 0;
}

static void view_init(struct afxdp_port *ap, struct afxdp_umem_view *u)
{
	struct tide_pool_mem mi;

	tide_pool_mem_info(ap->pool, &mi);
	u->base = mi.base;
	u->owner = ap->owner;
	u->pool = ap->pool;
	u->frame_mask = ~((uint64_t)mi.elt_size - 1);
	u->frame_shift = (uint32_t)__builtin_ctz(mi.elt_size);
}

static int afxdp_start(struct tide_port *p)
{
	struct afxdp_port *ap = aport(p);
	struct tide_pool_mem mi;
	int rc;

	if (ap->nb_rxq) {
		ap->pool = ((struct afxdp_rxq *)p->rxq[0])->pool;
	} else {
		char name[32];
		unsigned n = 0;

		for (unsigned i = 0; i < ap->nb_txq; i++)
			n += 2 * ((struct afxdp_txq *)p->txq[i])->nb_desc;
		snprintf(name, sizeof(name), "afxdp%d-tx", p->id);
		rc = tide_afxdp_pool_create(name, n, 64, ap->frame, &ap->own_pool);
		if (rc < 0)
			return rc;
		ap->pool = ap->own_pool;
	}
	tide_pool_mem_info(ap->pool, &mi);
	ap->owner = calloc(mi.n, 1);
	if (ap->owner == NULL) {
		rc = -ENOMEM;
		goto fail;
	}
	ap->busy_on = ap->busy_poll != 0;
	afxdp_lib_log_begin();
	rc = afxdp_prog_attach(ap);
	if (rc == 0)
		rc = start_sockets(ap);
	afxdp_lib_log_end();
	if (rc < 0)
		goto fail;
	for (unsigned i = 0; i < ap->nb_rxq; i++) {
		struct afxdp_rxq *q = (struct afxdp_rxq *)p->rxq[i];

		view_init(ap, &q->u);
		q->buf_len = (uint16_t)(mi.elt_size - AFXDP_MBUF_HDR);
		q->port_id = (uint16_t)p->id;
		/* Generic XDP takes frames from the stack's hook, where the socket learns no
		 * NAPI id: a busy poll would have nothing to run, so no recvfrom for it. */
		q->busy = !ap->busy_on || strcmp(ap->attached_mode, "generic") == 0 ? AFXDP_BUSY_OFF
			  : ap->zero_copy ? AFXDP_BUSY_ON /* Tx may give it a NAPI id first */
					  : AFXDP_BUSY_ARMED;
		tide_mbuf__rx_tmpl_init(&q->tmpl, q->pool, q->port_id, 0);
		afxdp_rx_refill(q);
		q->pub.burst = afxdp_rx_burst;
	}
	for (unsigned i = 0; i < ap->nb_txq; i++) {
		struct afxdp_txq *q = (struct afxdp_txq *)p->txq[i];

		view_init(ap, &q->u);
		q->copy_off = AFXDP_MBUF_HDR + tide_pktpool_headroom(ap->pool);
		q->copy_room = mi.elt_size - q->copy_off;
		q->kick_max = q->nb_desc / 32 + 1;
		q->pub.burst = afxdp_tx_burst;
	}
	TIDE_LOG_INFO_(p->name, "dev=%s queues %u..%u: XDP %s, %s, %u-byte frames from pool %s, busy polling %s",
		       ap->dev, ap->queue, ap->queue + ap->nq - 1, ap->attached_mode,
		       ap->zero_copy ? "zero-copy" : "copy mode", mi.elt_size,
		       tide_pool_name(ap->pool),
		       !ap->busy_on ? "off"
		       : strcmp(ap->attached_mode, "generic") == 0 ? "off (generic XDP: no NAPI to poll)"
								 : "on");
	return 0;
fail:
	afxdp_stop(p);
	return rc;
}

static void afxdp_close(struct tide_port *p)
{
	afxdp_nl_close(aport(p));
}

/* ---- Rx interrupts ---- */

/*
 * The socket itself is the interrupt: poll() reports POLLIN while its Rx ring holds frames
 * (level-triggered: frames that came before a sleep wake it at once), and poll() also does
 * what need_wakeup asks (it wakes a zero-copy driver's Rx and Tx, and sends what a copy-mode
 * Tx ring holds). Nothing to mask: the kernel signals the socket whether or not anyone
 * sleeps on it.
 */
static struct afxdp_rxq *intr_rxq(struct tide_port *p, unsigned qid)
{
	struct afxdp_rxq *q = (struct afxdp_rxq *)p->rxq[qid];

	return p->started && aport(p)->sk[qid].xsk != NULL ? q : NULL;
}

static int afxdp_rxq_intr_fd(struct tide_port *p, unsigned qid)
{
	struct afxdp_rxq *q = intr_rxq(p, qid);

	return q ? q->fd : -ENOTCONN;
}

/* Before a sleep: post every frame the queue may hold (completed Tx frames of the linked
 * queue first), so that the kernel has somewhere to put what wakes us. */
static int afxdp_rxq_intr_set(struct tide_port *p, unsigned qid, int enable)
{
	struct afxdp_rxq *q = intr_rxq(p, qid);

	if (q == NULL)
		return -ENOTCONN;
	if (enable && afxdp_rx_room(q) >= q->batch) {
		struct txc *t = txc_link_src(&q->link);

		if (t != NULL && ((struct afxdp_txq *)t->drv)->u.pool == q->pool)
			afxdp_tx_reap(t->drv, q);
		afxdp_rx_refill(q);
	}
	return 0;
}

static const char *const modes[] = {"auto", "native", "generic", NULL};
static const char *const zcs[] = {"auto", "yes", "no", NULL};

/* prog=PATH must name a readable ELF object (a BPF program built with clang -target bpf):
 * said here, in words, rather than as libbpf's error number at start. */
static int check_prog(const char *prog)
{
	unsigned char magic[4];
	FILE *f;
	size_t n;
	int rc;

	if (prog[0] == '\0') {
		TIDE_LOG_ERR_("afxdp", "prog=: empty path (prog=default is tide's own program)");
		return -EINVAL;
	}
	f = fopen(prog, "rb");
	if (f == NULL) {
		rc = -errno;
		TIDE_LOG_ERR_("afxdp", "prog=%s: %s", prog, strerror(errno));
		return rc;
	}
	n = fread(magic, 1, sizeof(magic), f);
	fclose(f);
	if (n != sizeof(magic) || memcmp(magic, "\177ELF", 4) != 0) {
		TIDE_LOG_ERR_("afxdp", "prog=%s: not an ELF object (expected a BPF program built "
			      "with clang -target bpf)", prog);
		return -EINVAL;
	}
	return 0;
}

static int afxdp_open(struct tide_kvargs *kv, struct tide_port **ports, unsigned max)
{
	static unsigned seq;
	struct afxdp_port *ap;
	struct tide_port *p;
	const char *dev = tide_kvargs_get(kv, "dev"), *prog = tide_kvargs_get(kv, "prog");
	uint64_t queue, nq, frame, busy, budget;
	unsigned mode, zc;
	bool wake, walk;
	char name[48];
	int ifindex, devq, rc;

	if (tide_kvargs_uint(kv, "queue", 0, 0, 1023, &queue) ||
	    tide_kvargs_uint(kv, "queues", 1, 1, AFXDP_MAX_QUEUES, &nq) ||
	    tide_kvargs_uint(kv, "frame", 0, 0, 4096, &frame) ||
	    tide_kvargs_uint(kv, "busy_poll", AFXDP_BUSY_POLL_DEF, 0, 1000000, &busy) ||
	    tide_kvargs_uint(kv, "busy_budget", AFXDP_BUSY_BUDGET_DEF, 1, 65535, &budget) ||
	    tide_kvargs_choice(kv, "mode", modes, 0, &mode) ||
	    tide_kvargs_choice(kv, "zero_copy", zcs, 0, &zc) ||
	    tide_kvargs_bool(kv, "need_wakeup", true, &wake) ||
	    tide_kvargs_bench(kv, "txc_walk", &walk))
		return -EINVAL;
	if (dev == NULL || dev[0] == '\0' || strlen(dev) >= IF_NAMESIZE) {
		TIDE_LOG_ERR_("afxdp", "dev=IFNAME is required (an interface name of at most %d characters)",
			      IF_NAMESIZE - 1);
		return -EINVAL;
	}
	if (frame != 0 && frame != 2048 && frame != 4096) {
		TIDE_LOG_ERR_("afxdp", "frame=%u: must be 2048 or 4096", (unsigned)frame);
		return -EINVAL;
	}
	if (prog != NULL && strlen(prog) >= sizeof(ap->prog_path)) {
		TIDE_LOG_ERR_("afxdp", "prog=%s: path too long", prog);
		return -EINVAL;
	}
	if (prog != NULL && strcmp(prog, "default") != 0) {
		rc = check_prog(prog);
		if (rc < 0)
			return rc;
	}
	if (max < 1)
		return -ENOSPC;
	ifindex = (int)if_nametoindex(dev);
	if (ifindex == 0) {
		TIDE_LOG_ERR_("afxdp", "dev=%s: no such interface in this network namespace", dev);
		return -ENODEV;
	}
	devq = afxdp_dev_queues(dev);
	if (devq > 0 && queue + nq > (unsigned)devq) {
		TIDE_LOG_ERR_("afxdp", "queue=%u, queues=%u: dev=%s has only %d queue%s (ethtool -l %s)",
			      (unsigned)queue, (unsigned)nq, dev, devq, devq == 1 ? "" : "s", dev);
		return -EINVAL;
	}
	snprintf(name, sizeof(name), "afxdp%u.%s", seq++, dev);
	rc = tide_port_alloc(&tide_driver_afxdp, name, sizeof(*ap), &p);
	if (rc < 0)
		return rc;
	ap = p->priv;
	ap->port = p;
	snprintf(ap->dev, sizeof(ap->dev), "%s", dev);
	ap->ifindex = ifindex;
	ap->queue = (unsigned)queue;
	ap->nq = (unsigned)nq;
	ap->mode = (enum afxdp_mode)mode;
	ap->zc = (enum afxdp_zc)zc;
	ap->need_wakeup = wake;
	ap->txc_walk = walk;
	ap->frame = (unsigned)frame;
	ap->busy_poll = (unsigned)busy;
	ap->busy_budget = (unsigned)budget;
	ap->busy_explicit = tide_kvargs_get(kv, "busy_poll") != NULL;
	ap->link_fd = -1;
	ap->xsks_map_fd = -1;
	ap->nl_fd = -1;
	if (prog != NULL && strcmp(prog, "default") != 0)
		snprintf(ap->prog_path, sizeof(ap->prog_path), "%s", prog);
	p->info.max_rxq = ap->nq;
	p->info.max_txq = ap->nq;
	p->info.min_desc = 64;
	p->info.max_desc = 8192;
	/* DPDK's net_af_xdp depths: at 1024 a full-speed burst into veth finds the fill ring
	 * empty (docs/drivers/afxdp.md, the kept group), and l2fwd gains from the deeper Rx ring. */
	p->info.rx_desc_pref = 2048;
	p->info.tx_desc_pref = 2048;
	p->info.count_completion = 1;
	/* A frame's room: the UMEM frame less the XDP headroom (frame=, else the default
	 * pool's 2048 bytes until an Rx queue names the pool). */
	tide_port_frame_limit(p, (ap->frame ? ap->frame : 2048) - AFXDP_XDP_HEADROOM);
	rc = afxdp_nl_open(ap);
	if (rc < 0) {
		tide_port_free_unregistered(p);
		return rc;
	}
	{
		struct ifreq ifr = {0};

		if (afxdp_dev_ioctl(dev, SIOCGIFHWADDR, &ifr) == 0)
			memcpy(p->info.mac, ifr.ifr_hwaddr.sa_data, 6);
	}
	ports[0] = p;
	return 1;
}

const struct tide_driver tide_driver_afxdp = {
	.name = "afxdp",
	.keys = "dev, queue, queues, mode, zero_copy, need_wakeup, frame, prog, busy_poll, busy_budget"
		TIDE_BENCH_KEYS("txc_walk"),
	.open = afxdp_open,
	.configure = afxdp_configure,
	.rxq_setup = afxdp_rxq_setup,
	.txq_setup = afxdp_txq_setup,
	.rxq_release = afxdp_rxq_release,
	.txq_release = txc_txq_release,
	.start = afxdp_start,
	.stop = afxdp_stop,
	.close = afxdp_close,
	.mtu_get = afxdp_mtu_get,
	.mtu_set = afxdp_mtu_set,
	.link_get = afxdp_link_get,
	.poll_ctl = afxdp_poll_ctl,
	.stats_add = afxdp_stats_add,
	.stats_reset = afxdp_stats_reset,
	.xstats = afxdp_xstats,
	.rxq_intr_fd = afxdp_rxq_intr_fd,
	.rxq_intr_set = afxdp_rxq_intr_set,
};
