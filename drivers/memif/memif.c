/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * memif driver: spec, port and queue operations, queue resync, and the tide/memif.h
 * extras. The spec keys are documented in include/tide/memif.h; the design (threads and
 * the control plane) in memif.h, the data paths at the top of memif_copy.c and memif_zc.c.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mem.h"
#include "log.h"
#include "memif.h"

#define MEMIF_DEFAULT_SOCKET "/run/memif.sock"

/* ---- queue resync (worker thread, slow path of a burst) ---- */

bool memif_rxq_resync(struct memif_rxq *q, uint32_t live)
{
	if (q->seen != MEMIF_SEEN_NONE) {
		if (!memif_zq_clear(q->mp, q->zgen))
			return false; /* posted: the peer may still write them (memif.h) */
		/* The old connection's buffers come home (zero-copy: posted to the peer). */
		if (q->rxr_ok)
			rxr_release_all(&q->rxr);
		q->seen = MEMIF_SEEN_NONE;
	}
	if (live == 0 || __atomic_load_n(&q->fault, __ATOMIC_RELAXED) != NULL)
		return false;
	q->cons = q->peer = q->head = 0;
	if (q->mp->role == MEMIF_ROLE_CLIENT && !q->mp->zc) {
		/* Copy mode: every slot's buffer is posted from the start ([S2C-head]). */
		q->head = q->r.size;
		memif_publish(&q->r.ring->head, q->head);
	}
	q->seen = q->zgen = live;
	return true;
}

bool memif_txq_resync(struct memif_txq *q, uint32_t live)
{
	if (q->seen != MEMIF_SEEN_NONE) {
		if (!memif_zq_clear(q->mp, q->zgen))
			return false; /* sent: the peer may still read them (memif.h) */
		/* In-flight buffers of the old connection will never complete. */
		txc_release_all(&q->txc);
		q->seen = MEMIF_SEEN_NONE;
	}
	if (live == 0 || __atomic_load_n(&q->fault, __ATOMIC_RELAXED) != NULL)
		return false;
	q->head = q->peer = 0;
	q->seen = q->zgen = live;
	return true;
}

void memif_rxq_flush(struct memif_rxq *q)
{
	if (q->rxr_ok)
		rxr_release_all(&q->rxr);
	q->seen = MEMIF_SEEN_NONE;
	q->fault = NULL;
}

void memif_txq_flush(struct memif_txq *q)
{
	txc_release_all(&q->txc);
	q->seen = MEMIF_SEEN_NONE;
	q->fault = NULL;
}

/* ---- queues ---- */

static int memif_rxq_setup(struct tide_port *p, unsigned qid, unsigned nb_desc,
			   struct tide_pool *pool, const struct tide_rxq_conf *conf,
			   struct tide_rxq **out)
{
	struct memif_port *mp = mport(p);
	struct memif_rxq *q = tide_zalloc_aligned(sizeof(*q));
	unsigned room = tide_pktpool_data_room(pool);

	(void)qid;
	if (q == NULL)
		return -ENOMEM;
	if (room == 0 || room > UINT16_MAX) {
		TIDE_LOG_ERR_(p->name, "Rx queue %u: pool data room %u unusable", qid, room);
		free(q);
		return -EINVAL;
	}
	q->mp = mp;
	q->pool = pool;
	q->nb_desc = nb_desc;
	q->headroom = (uint16_t)tide_pktpool_headroom(pool);
	q->dataroom = (uint16_t)room;
	q->seen = MEMIF_SEEN_NONE;
	if (mp->zc) {
		int rc = rxr_init(&q->rxr, &q->pub, nb_desc, pool, conf, memif_zc_rx_post_ool, q);

		if (rc < 0) {
			free(q);
			return rc;
		}
		q->rxr_ok = true;
	}
	*out = &q->pub;
	return 0;
}

static int memif_txq_setup(struct tide_port *p, unsigned qid, unsigned nb_desc,
			   const struct tide_txq_conf *conf, struct tide_txq **out)
{
	struct memif_port *mp = mport(p);
	struct memif_txq *q = tide_zalloc_aligned(sizeof(*q));
	struct txc_drv d = {.slots_empty = !mp->zc, .count_mode = true,
			    .advance = memif_tx_advance_ool};
	int rc;

	(void)qid;
	if (q == NULL)
		return -ENOMEM;
	d.drv = q;
	/* Client: the ring has 2^log2 slots whatever nb_desc says; an engine with more slots
	 * than the ring would wait for completions the ring can never hold. */
	if (mp->role == MEMIF_ROLE_CLIENT && (1u << mp->log2) < nb_desc)
		nb_desc = 1u << mp->log2;
	rc = txc_init(&q->txc, &q->pub, nb_desc, conf, &d);
	if (rc < 0) {
		free(q);
		return rc;
	}
	q->mp = mp;
	q->nb_desc = nb_desc;
	q->seen = MEMIF_SEEN_NONE;
	q->free_mode = mp->txfree_loop ? MEMIF_FREE_LOOP : MEMIF_FREE_AFTER;
	copy_adapt_init(&q->ad, (enum copy_stores)mp->tx_stores);
	*out = &q->pub;
	return 0;
}

static void memif_rxq_release(struct tide_rxq *pub)
{
	struct memif_rxq *q = (struct memif_rxq *)pub;

	if (q->rxr_ok)
		rxr_fini(&q->rxr);
	free(q);
}

/*
 * Port names: "memif_c3" (client, id 3), "memif_s3"; a second port with the same role and
 * id (another socket) gets "memif_c3.2", and so on, so that names stay unique.
 */
static pthread_mutex_t names_lock = PTHREAD_MUTEX_INITIALIZER;
static struct tide_port *names[64];

static void memif_port_name(char *out, size_t size, const char *role, unsigned id)
{
	pthread_mutex_lock(&names_lock);
	for (unsigned k = 1;; k++) {
		bool taken = false;

		if (k == 1)
			snprintf(out, size, "memif_%s%u", role, id);
		else
			snprintf(out, size, "memif_%s%u.%u", role, id, k);
		for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			if (names[i] != NULL && strcmp(names[i]->name, out) == 0)
				taken = true;
		if (!taken)
			break;
	}
	pthread_mutex_unlock(&names_lock);
}

/*
 * MAC addresses: locally administered unicast 02:vv:vv:vv:vv:vv, v = (pid << 18) | n, n a
 * per-process counter of opened ports. Two live processes differ in the pid (below 2^22,
 * the kernel's limit; processes in different pid namespaces can share one), and the ports
 * of one process differ in n: after 2^18 opens the counter wraps and skips the values of
 * ports still open. The id and role play no part: two ports with the same id on two
 * sockets, or both ends of a pair in one process, must not share an address.
 */
uint32_t memif_mac_next;

static void mac_make(uint32_t n, uint8_t mac[6])
{
	uint64_t v = ((uint64_t)((uint32_t)getpid() & 0x3fffff) << MEMIF_MAC_CTR_BITS) | n;

	mac[0] = 0x02;
	for (int i = 5; i >= 1; i--, v >>= 8)
		mac[i] = (uint8_t)v;
}

static bool mac_taken(const uint8_t mac[6])
{
	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i] != NULL && memcmp(names[i]->info.mac, mac, 6) == 0)
			return true;
	return false;
}

/* Register @p (its name is unique) and give it a MAC no other open memif port has. */
static void memif_names_add(struct tide_port *p, uint8_t mac[6])
{
	const uint32_t span = 1u << MEMIF_MAC_CTR_BITS;

	pthread_mutex_lock(&names_lock);
	for (uint32_t tries = 0; tries < span; tries++) {
		mac_make(memif_mac_next, mac);
		memif_mac_next = (memif_mac_next + 1) & (span - 1);
		if (!mac_taken(mac))
			break;
	}
	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i] == NULL) {
			names[i] = p;
			break;
		}
	pthread_mutex_unlock(&names_lock);
}

static void memif_names_del(struct tide_port *p)
{
	pthread_mutex_lock(&names_lock);
	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i] == p)
			names[i] = NULL;
	pthread_mutex_unlock(&names_lock);
}

/* ---- port ---- */

static int zc_check(struct tide_port *p)
{
	struct memif_port *mp = mport(p);

	if (p->nb_rxq == 0) {
		TIDE_LOG_ERR_(p->name, "zero_copy=yes needs an Rx queue (its pool is the packet memory)");
		return -EINVAL;
	}
	for (unsigned i = 0; i < p->nb_rxq; i++) {
		struct memif_rxq *q = (struct memif_rxq *)p->rxq[i];
		struct tide_pool_mem mi;

		tide_pool_mem_info(q->pool, &mi);
		if (mi.fd < 0) {
			TIDE_LOG_ERR_(p->name, "zero_copy=yes: Rx queue %u's pool '%s' is not shared (create it with TIDE_POOL_F_SHARED)",
				      i, tide_pool_name(q->pool));
			return -EINVAL;
		}
		if (mi.len > UINT32_MAX) {
			TIDE_LOG_ERR_(p->name, "zero_copy=yes: pool '%s' is above 4 GiB (descriptor offsets are 32-bit)",
				      tide_pool_name(q->pool));
			return -EINVAL;
		}
		if (q->nb_desc != (1u << mp->log2)) {
			TIDE_LOG_ERR_(p->name, "zero_copy=yes: Rx queue %u has %u descriptors; it must equal ring_size=%u",
				      i, q->nb_desc, 1u << mp->log2);
			return -EINVAL;
		}
	}
	return 0;
}

static int memif_start(struct tide_port *p)
{
	struct memif_port *mp = mport(p);
	int rc;

	if (mp->zc && (rc = zc_check(p)) < 0)
		return rc;
	for (unsigned i = 0; i < p->nb_rxq; i++) {
		struct memif_rxq *q = (struct memif_rxq *)p->rxq[i];

		q->live = 0;
		q->seen = MEMIF_SEEN_NONE;
		q->fault = NULL;
		q->port_id = (uint16_t)p->id;
		tide_mbuf__rx_tmpl_init(&q->tmpl, q->pool, q->port_id, 0);
	}
	for (unsigned i = 0; i < p->nb_txq; i++) {
		struct memif_txq *q = (struct memif_txq *)p->txq[i];

		q->live = 0;
		q->seen = MEMIF_SEEN_NONE;
		q->fault = NULL;
	}
	rc = memif_ctl_start(mp);
	if (rc < 0)
		return rc;
	for (unsigned i = 0; i < p->nb_rxq; i++)
		((struct memif_rxq *)p->rxq[i])->fence = mp->fence;
	for (unsigned i = 0; i < p->nb_txq; i++)
		((struct memif_txq *)p->txq[i])->fence = mp->fence;
	/* Role and mode are fixed by the spec: one burst function each, no per-packet test. */
	for (unsigned i = 0; i < p->nb_rxq; i++)
		p->rxq[i]->burst = mp->zc ? memif_zc_rx_fn() : memif_copy_rx_fn(mp);
	for (unsigned i = 0; i < p->nb_txq; i++)
		p->txq[i]->burst = mp->zc ? memif_zc_tx_fn()
					  : memif_copy_tx_fn(mp, ((struct memif_txq *)p->txq[i])->free_mode);
	return 0;
}

static void memif_stop(struct tide_port *p)
{
	struct memif_port *mp = mport(p);

	memif_ctl_stop(mp);
	for (unsigned i = 0; i < p->nb_rxq; i++)
		memif_rxq_flush((struct memif_rxq *)p->rxq[i]);
	for (unsigned i = 0; i < p->nb_txq; i++)
		memif_txq_flush((struct memif_txq *)p->txq[i]);
}

static void memif_close(struct tide_port *p)
{
	/* Stop released everything; the port frees the private state. */
	memif_names_del(p);
}

static int memif_link_get(struct tide_port *p, struct tide_link *out)
{
	out->up = __atomic_load_n(&mport(p)->up, __ATOMIC_RELAXED);
	out->speed_mbps = 0;
	return 0;
}

static int memif_poll_ctl(struct tide_port *p)
{
	return memif_ctl_poll(mport(p));
}

static void memif_stats_add(const struct tide_port *p, struct tide_port_stats *st)
{
	st->ierrors += __atomic_load_n(&mport(p)->ctl_errors, __ATOMIC_RELAXED);
}

static int parse_uint(struct tide_kvargs *kv, const char *key, uint64_t def, uint64_t min,
		      uint64_t max, uint64_t *out)
{
	return tide_kvargs_uint(kv, key, def, min, max, out);
}

static int memif_open(struct tide_kvargs *kv, struct tide_port **ports, unsigned max)
{
	static const char *const roles[] = {"server", "client", "master", "slave", NULL};
	static const char *const quiesces[] = {"auto", "membarrier", "fence", NULL};
	/* In enum copy_stores order. */
	static const char *const stores[] = {"auto", "cache", "stream", NULL};
	const char *sock = tide_kvargs_get(kv, "socket");
	const char *secret = tide_kvargs_get(kv, "secret");
	const char *name = tide_kvargs_get(kv, "name");
	uint64_t id, rings, rsize, buf, chain, hs, zq;
	unsigned role, quiesce, txs;
	bool zc, loop, abstract;
	struct memif_port *mp;
	struct tide_port *p;
	char pname[64];
	int rc;

	(void)max;
	if (tide_kvargs_choice(kv, "role", roles, 1, &role) ||
	    parse_uint(kv, "id", 0, 0, UINT32_MAX, &id) ||
	    parse_uint(kv, "rings", 1, 1, MEMIF_MAX_QP, &rings) ||
	    parse_uint(kv, "ring_size", 1024, 2, 1u << MEMIF_LOG2_RING_SIZE_MAX, &rsize) ||
	    parse_uint(kv, "buffer", MEMIF_BUFFER_SIZE_DEFAULT, 128, UINT16_MAX, &buf) ||
	    tide_kvargs_bool(kv, "zero_copy", false, &zc) ||
	    tide_kvargs_bench(kv, "txfree_loop", &loop) ||
	    tide_kvargs_bool(kv, "abstract", false, &abstract) ||
	    parse_uint(kv, "max_chain", MEMIF_CHAIN_DEFAULT, 1, MEMIF_MAX_CHAIN, &chain) ||
	    parse_uint(kv, "handshake_timeout", MEMIF_HANDSHAKE_MS, 1, 3600000, &hs) ||
	    parse_uint(kv, "zc_quarantine", MEMIF_ZQ_MS, 0, 60000, &zq) ||
	    tide_kvargs_choice(kv, "quiesce", quiesces, 0, &quiesce) ||
	    tide_kvargs_choice(kv, "tx_stores", stores, COPY_STORES_AUTO, &txs))
		return -EINVAL;
	role = role % 2; /* master = server, slave = client */
	if (!tide_is_pow2(rsize)) {
		TIDE_LOG_ERR_("memif", "ring_size=%u: must be a power of two", (unsigned)rsize);
		return -EINVAL;
	}
	if (sock == NULL)
		sock = MEMIF_DEFAULT_SOCKET;
	if (sock[0] == '@') {
		abstract = true;
		sock++;
	}
	if (sock[0] == '\0' || strlen(sock) >= sizeof(mp->path) - 1) {
		TIDE_LOG_ERR_("memif", "socket=%s: need a path of 1..%zu characters", sock,
			      sizeof(mp->path) - 2);
		return -EINVAL;
	}
	if (secret != NULL && strlen(secret) > MEMIF_SECRET_LEN - 1) {
		/* The wire field is 24 bytes, but libmemif and VPP keep a NUL in it. */
		TIDE_LOG_ERR_("memif", "secret: %zu characters, at most %d (libmemif and VPP keep %d)",
			      strlen(secret), MEMIF_SECRET_LEN - 1, MEMIF_SECRET_LEN - 1);
		return -EINVAL;
	}
	if (name != NULL && strlen(name) >= MEMIF_NAME_LEN) {
		TIDE_LOG_ERR_("memif", "name=%s: at most %d characters", name, MEMIF_NAME_LEN - 1);
		return -EINVAL;
	}
	if (zc && role == 0) {
		TIDE_LOG_ERR_("memif", "zero_copy=yes: only the client can (the client owns the memory)");
		return -EINVAL;
	}
	memif_port_name(pname, sizeof(pname), role == 0 ? "s" : "c", (unsigned)id);
	rc = tide_port_alloc(&tide_driver_memif, pname, sizeof(*mp), &p);
	if (rc < 0)
		return rc;
	mp = p->priv;
	mp->port = p;
	mp->role = role == 0 ? MEMIF_ROLE_SERVER : MEMIF_ROLE_CLIENT;
	snprintf(mp->path, sizeof(mp->path), "%s", sock);
	mp->abstract = abstract;
	mp->id = (uint32_t)id;
	snprintf(mp->secret, sizeof(mp->secret), "%s", secret ? secret : "");
	snprintf(mp->ifname, sizeof(mp->ifname), "%s", name ? name : "tide");
	mp->rings = (unsigned)rings;
	mp->log2 = (uint8_t)__builtin_ctzll(rsize);
	mp->bufsize = (uint32_t)buf;
	mp->zc = zc;
	mp->txfree_loop = loop;
	mp->tx_stores = (uint8_t)txs;
	mp->max_chain = (uint16_t)chain;
	mp->hs_timeout_ms = (uint32_t)hs;
	mp->zq_ms = (uint32_t)zq;
	mp->zq_fd = -1;
	mp->quiesce = (int)quiesce;
	mp->cfd = -1;
	for (unsigned i = 0; i < MEMIF_MAX_REGIONS; i++)
		mp->reg[i].fd = -1;
	for (unsigned d = 0; d < 2; d++)
		for (unsigned i = 0; i < MEMIF_MAX_RINGS; i++)
			mp->ring[d][i].efd = -1;
	p->info.max_rxq = mp->rings;
	p->info.max_txq = mp->rings;
	p->info.min_desc = 64;
	p->info.max_desc = 1u << MEMIF_LOG2_RING_SIZE_MAX;
	p->info.count_completion = 1;
	/* Copy mode takes a frame of up to max_chain buffers either way; the buffers are
	 * bufsize bytes when this end makes them (client), and the peer's otherwise. */
	tide_port_frame_limit(p, mp->bufsize * mp->max_chain);
	memif_names_add(p, p->info.mac);
	ports[0] = p;
	return 1;
}

static unsigned memif_xstats(struct tide_port *p, const char **xnames, uint64_t *values,
			     unsigned max);

const struct tide_driver tide_driver_memif = {
	.name = "memif",
	.keys = "socket, role, id, secret, rings, ring_size, buffer, zero_copy, abstract, name, max_chain, handshake_timeout, quiesce, zc_quarantine, tx_stores"
		TIDE_BENCH_KEYS("txfree_loop"),
	.open = memif_open,
	.rxq_setup = memif_rxq_setup,
	.txq_setup = memif_txq_setup,
	.rxq_release = memif_rxq_release,
	.txq_release = txc_txq_release,
	.start = memif_start,
	.stop = memif_stop,
	.close = memif_close,
	.mtu_set = tide_port_mtu_set_keep,
	.link_get = memif_link_get,
	.poll_ctl = memif_poll_ctl,
	.stats_add = memif_stats_add,
	.rxq_intr_fd = tide_memif_rxq_eventfd,
	.rxq_intr_set = tide_memif_rxq_intr,
	.xstats = memif_xstats,
};

/* ---- tide/memif.h ---- */

static struct memif_port *memif_of(struct tide_port *p)
{
	return p != NULL && p->drv == &tide_driver_memif ? mport(p) : NULL;
}

/* The connection counters for tide_xstats_*(): handshakes completed, links that went down,
 * of those because the peer broke a rule, and of those in a control message; and of the
 * copy-mode Tx queues, how many write long frames with streaming stores now and how often
 * tx_stores=auto changed its mind (copy_adapt). */
static unsigned memif_xstats(struct tide_port *p, const char **xnames, uint64_t *values,
			     unsigned max)
{
	static const char *const n[] = {"connects",	    "disconnects",	   "violations",
					"ctl_errors",	    "tx_stream_queues", "tx_stores_switches"};
	const struct memif_port *mp = p->priv;
	uint64_t v[] = {
	    mp->connects,
	    __atomic_load_n(&mp->disconnects, __ATOMIC_RELAXED),
	    __atomic_load_n(&mp->violations, __ATOMIC_RELAXED),
	    __atomic_load_n(&mp->ctl_errors, __ATOMIC_RELAXED),
	    0,
	    0,
	};

	for (unsigned i = 0; i < p->nb_txq; i++) {
		const struct memif_txq *q = (const struct memif_txq *)p->txq[i];

		if (q == NULL)
			continue;
		v[4] += __atomic_load_n(&q->ad.settled, __ATOMIC_RELAXED);
		v[5] += __atomic_load_n(&q->ad.switches, __ATOMIC_RELAXED);
	}
	return tide_xstats_put(n, v, 6, xnames, values, max);
}

int tide_memif_info_get(struct tide_port *p, struct tide_memif_info *out)
{
	struct memif_port *mp = memif_of(p);
	struct tide_memif_info *dst = out, full;

	if (mp == NULL ||
	    tide_sized_check(dst, TIDE_SIZE_UPTO(struct tide_memif_info, peer_name)) < 0)
		return -EINVAL;
	out = &full; /* filled whole, then handed out as far as the caller's sz goes */
	memset(out, 0, sizeof(*out));
	out->connected = __atomic_load_n(&mp->up, __ATOMIC_RELAXED);
	out->server = mp->role == MEMIF_ROLE_SERVER;
	out->zero_copy = mp->zc;
	if (out->connected) {
		out->c2s_rings = mp->n_c2s;
		out->s2c_rings = mp->n_s2c;
		out->ring_size = mp->ring[MEMIF_DIR_C2S][0].present
					 ? 1u << mp->ring[MEMIF_DIR_C2S][0].log2
					 : 0;
	}
	out->connects = mp->connects;
	out->disconnects = __atomic_load_n(&mp->disconnects, __ATOMIC_RELAXED);
	out->violations = __atomic_load_n(&mp->violations, __ATOMIC_RELAXED);
	snprintf(out->reason, sizeof(out->reason), "%s", mp->reason);
	snprintf(out->peer_name, sizeof(out->peer_name), "%s", mp->peer_name);
	return tide_sized_put(dst, &full, sizeof(full));
}

static struct memif_rxq *rxq_of(struct tide_port *p, unsigned qid)
{
	struct memif_port *mp = memif_of(p);

	if (mp == NULL || qid >= p->nb_rxq || p->rxq[qid] == NULL)
		return NULL;
	return (struct memif_rxq *)p->rxq[qid];
}

/*
 * The interrupt calls below read the queue's ring (its flags in shared memory, its
 * eventfd) like a burst does, so they take the same guard: their own busy word (ibusy),
 * then live. A disconnect waits for a call in progress before it unmaps the ring and
 * closes the fd (memif_quiesce() in memif_link.c); a call that starts after it sees
 * live == 0.
 */
int tide_memif_rxq_eventfd(struct tide_port *p, unsigned qid)
{
	struct memif_rxq *q = rxq_of(p, qid);
	uint32_t live;
	int fd;

	if (q == NULL)
		return -EINVAL;
	live = memif_enter(&q->ibusy, &q->live, q->fence);
	fd = live != 0 && q->r.efd >= 0 ? q->r.efd : -ENOTCONN;
	memif_leave(&q->ibusy);
	return fd;
}

/* Mask the ring again and clear a signal that came meanwhile (the fd may block: poll
 * first). Inside the guard. */
static void memif_intr_mask(struct memif_rxq *q)
{
	struct pollfd pfd = {.fd = q->r.efd, .events = POLLIN};
	uint64_t v;

	__atomic_fetch_or(&q->r.ring->flags, MEMIF_RING_FLAG_MASK_INT, __ATOMIC_RELEASE);
	if (q->r.efd >= 0 && poll(&pfd, 1, 0) == 1 && read(q->r.efd, &v, sizeof(v)) < 0)
		return; /* nothing to clear after all */
}

int tide_memif_rxq_intr(struct tide_port *p, unsigned qid, int enable)
{
	struct memif_rxq *q = rxq_of(p, qid);
	uint32_t live;

	if (q == NULL)
		return -EINVAL;
	/* Kept for the next connections too (link_up() applies it). */
	__atomic_store_n(&q->intr, enable != 0, __ATOMIC_RELAXED);
	live = memif_enter(&q->ibusy, &q->live, q->fence);
	if (live == 0) {
		memif_leave(&q->ibusy);
		return -ENOTCONN;
	}
	/* The reader of a ring owns its flags; the peer only reads them. */
	if (enable)
		__atomic_fetch_and(&q->r.ring->flags, (uint16_t)~MEMIF_RING_FLAG_MASK_INT,
				   __ATOMIC_RELEASE);
	else
		memif_intr_mask(q);
	memif_leave(&q->ibusy);
	return 0;
}
