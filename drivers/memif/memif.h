/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * memif driver: internal structures shared by the control plane (memif_ctl.h), the port
 * operations (memif.c) and the data paths (memif_copy.c, memif_zc.c).
 *
 * Threads. The control plane runs in tide_port_poll_ctl() on the application's control
 * thread; bursts run on worker threads at the same time. They share each queue through
 * three words:
 *
 *   live   written by the control thread: the connection generation the queue may use,
 *          0 while the link is down. Ring pointers, sizes and region tables are written
 *          before `live` is stored (release) and only while the queue is quiescent.
 *   busy   written by the worker: 1 from the start of a burst until its end. The Rx
 *          interrupt calls (tide_memif_rxq_intr(), tide_memif_rxq_eventfd()) read the
 *          ring too and have their own word, ibusy, under the same rules.
 *   fault  written by the worker: the reason of a violation it found in shared memory.
 *
 * Bringing a queue down (disconnect): the control thread stores live = 0, runs
 * membarrier() (a full barrier on every thread of the process, so the worker needs only a
 * compiler barrier between its store of busy and its load of live), then waits until busy
 * is 0. After that no burst can touch the old mappings, and the control thread unmaps them.
 * A burst costs two plain stores to a line the worker owns, and no fence. Without
 * membarrier() (old kernels, seccomp) both sides use a full fence instead (Dekker's
 * store-fence-load on each side): correct, and one fence per burst slower; quiesce=
 * chooses, and quiesce=membarrier refuses to start rather than fall back.
 *
 * Buffers a queue holds (zero-copy Rx buffers posted to the peer, zero-copy Tx buffers in
 * flight) are owned by the worker: a burst that sees its generation gone gives them back
 * (the queue's "resync"), and so does port stop (bursts are stopped then). The control
 * thread never touches a queue's Rx refill or Tx engine while the port is started.
 *
 * Zero-copy quarantine. A peer may still write into the Rx buffers we posted (or read the
 * Tx buffers it was given) after the link went down on our side: its lcore can be in the
 * middle of a burst when its control thread handles the disconnect. So the buffers of a
 * zero-copy connection do not go back to the pool until the peer has closed its control
 * socket (we keep our end open to see it; at most MEMIF_ZQ_CLOSE_MS) and zc_quarantine ms
 * more have passed. The control thread then stores the connection's generation in
 * zq_clear (release); a worker's resync gives the old buffers back only once zq_clear has
 * reached the generation they were posted under (q->zgen), and until then its bursts
 * return 0 with the buffers held. The client does not reconnect during a quarantine, and
 * port stop waits for it to end, so a stopped port holds nothing.
 */
#ifndef TIDE_MEMIF_H_INTERNAL
#define TIDE_MEMIF_H_INTERNAL

#include <stdbool.h>
#include <stdint.h>
#include <unistd.h>

#include <tide/memif.h>

#include "inline.h"
#include "copy.h"
#include "driver.h"
#include "memif_desc.h"
#include "memif_msg.h"
#include "quiesce.h"
#include "rxr.h"
#include "txc.h"

#define MEMIF_MAX_QP	   16		  /* queue pairs per port (TIDE_MAX_QUEUES) */
#define MEMIF_SEEN_NONE	   UINT32_MAX	  /* a queue that adopted no connection */
#define MEMIF_SEEN_FAULT   (UINT32_MAX - 1) /* its connection broke a rule */
#define MEMIF_MAX_CHAIN	   256		  /* most descriptors one packet may span (max_chain=) */
#define MEMIF_CHAIN_DEFAULT 64		  /* max_chain default */
#define MEMIF_RETRY_NS	   (50 * 1000000) /* client: first pause between connection attempts */
#define MEMIF_RETRY_MAX_NS (2000 * 1000000ull) /* client: backoff doubles up to this */
#define MEMIF_HANDSHAKE_MS 3000		  /* default handshake_timeout */
#define MEMIF_DRAIN_NS	   (100 * 1000000ull) /* client stop: wait for C2S to drain */
#define MEMIF_MAX_ZC_POOLS 4		  /* zero-copy: distinct pools exposed as regions */
#define MEMIF_ZQ_MS	   100		  /* zc_quarantine default */
#define MEMIF_ZQ_CLOSE_MS  1000		  /* zero-copy: longest wait for the peer to close */

extern const struct tide_driver tide_driver_memif;

/* MAC addresses (memif.c): the per-process counter in the low bits, under the port-name
 * lock; the tests set it to make it wrap. */
#define MEMIF_MAC_CTR_BITS 18
extern uint32_t memif_mac_next;

struct memif_port;

/* Tx free policy of the copy paths (after the copy loop in bulk, seed 003; or in the loop). */
enum memif_txfree {
	MEMIF_FREE_AFTER, /* the queue's release policy, on the whole burst after the loop */
	MEMIF_FREE_LOOP,  /* tide_mbuf_free() right after each packet's copy (txfree_loop=yes) */
};

/*
 * One shared ring as a queue uses it. Written by the control thread while the queue is
 * quiescent; read-only for the worker.
 */
struct memif_qring {
	struct memif_ring *ring;
	uint16_t size, mask;
	int efd;	     /* the ring's interrupt eventfd (the client made it) */
	/* Copy mode, client: slot j's buffer (local address and offset in region 0). */
	uint8_t *buf0;
	uint32_t boff0;
	/* Every mapped region (server: the peer's; client: ours), for descriptor checks. */
	uint8_t *const *rbase;
	struct memif_desc_limits lim;
};

struct memif_rxq {
	struct tide_rxq pub; /* first: the handle */
	/* Worker-owned, hot. */
	uint32_t busy;
	bool fence;	     /* no membarrier(): burst entry carries its own full fence */
	uint32_t seen;	     /* generation adopted, or MEMIF_SEEN_NONE */
	uint32_t zgen;	     /* generation the held buffers were posted under */
	uint16_t cons;	     /* next slot to read */
	uint16_t peer;	     /* last accepted index of the peer (server: head, client: tail) */
	uint16_t head;	     /* client: head we published (buffers posted) */
	uint16_t headroom;
	uint16_t dataroom;
	uint16_t port_id;
	struct memif_qring r;
	struct tide_pool *pool;
	struct tide_mbuf__rx_tmpl tmpl; /* copy mode: every packet's header, second half */
	struct rxr rxr;	     /* zero-copy only */
	bool rxr_ok;
	uint16_t zreg;	     /* zero-copy: region index of the Rx pool */
	bool intr;	     /* the application asked the peer to signal this queue (atomic) */
	uint32_t ibusy;	     /* busy of the Rx interrupt calls (tide_memif_rxq_intr/eventfd) */
	unsigned nb_desc;
	struct memif_port *mp;
	/* Shared with the control thread. */
	uint32_t live TIDE_CACHE_ALIGNED;
	const char *fault;
};

struct memif_txq {
	struct tide_txq pub; /* first: the handle */
	uint32_t busy;
	bool fence;
	uint32_t seen;
	uint32_t zgen;	     /* generation the held buffers were sent under */
	uint16_t head;	     /* client: next slot we fill (published head); server: our tail */
	uint16_t peer;	     /* last accepted index of the peer (client: tail, server: head) */
	enum memif_txfree free_mode;
	struct memif_qring r;
	struct txc txc;
	unsigned nb_desc;
	/* Zero-copy: pools exposed as regions 1..n (region = index + 1). */
	struct tide_pool *zpool[MEMIF_MAX_ZC_POOLS];
	unsigned nzpool;
	struct memif_port *mp;
	struct copy_adapt ad; /* copy mode: cached or streaming stores (tx_stores=) */
	uint32_t live TIDE_CACHE_ALIGNED;
	const char *fault;
};

struct memif_region {
	uint8_t *addr;
	uint64_t size;
	int fd;
	bool mapped;	/* we mapped it (not a pool's own memory) */
};

/* What the client asked for in add_ring (server) or made (client). */
struct memif_ringinfo {
	bool present;
	uint16_t region;
	uint32_t offset;
	uint8_t log2;
	int efd;
	uint64_t boff; /* client, copy mode: the ring's first buffer in region 0 */
};

struct memif_port {
	/* Configuration (spec). */
	enum memif_role role;
	char path[108];
	bool abstract;
	uint32_t id;
	char secret[MEMIF_SECRET_LEN + 1];
	unsigned rings;	    /* queue pairs at most */
	uint8_t log2;	    /* client: ring size */
	uint32_t bufsize;   /* copy buffer size; longest descriptor accepted */
	bool zc;
	bool txfree_loop;
	uint8_t tx_stores;	/* enum copy_stores (tx_stores= key) */
	uint16_t max_chain;	/* descriptors one packet may span, both ways */
	uint32_t hs_timeout_ms; /* handshake_timeout */
	uint32_t zq_ms;		/* zc_quarantine */
	int quiesce;		/* MEMIF_QUIESCE_* (quiesce= key) */
	bool fence;		/* resolved at start: workers fence (no membarrier) */
	char ifname[MEMIF_NAME_LEN];
	struct tide_port *port;

	/* Control plane (control thread only). */
	struct memif_listener *lst; /* server: the socket it shares with other ids */
	int cfd;	    /* the control connection, -1 when none */
	bool started;
	struct memif_conn conn;
	uint16_t next_msg;  /* client: position in its message plan */
	uint16_t n_c2s, n_s2c;
	uint64_t retry_at;  /* client: next connection attempt (ns, CLOCK_MONOTONIC) */
	uint64_t retry_ns;  /* client: current backoff */
	uint64_t hs_deadline; /* the handshake in progress must end by then (ns) */
	int last_err;	    /* client: errno of the last failed connect, logged once */
	struct memif_region reg[MEMIF_MAX_REGIONS];
	uint8_t *rbase[MEMIF_MAX_REGIONS];
	uint64_t rsize[MEMIF_MAX_REGIONS];
	uint16_t nreg;
	struct memif_ringinfo ring[2][MEMIF_MAX_RINGS];
	uint32_t gen;
	char peer_name[MEMIF_NAME_LEN + 1];
	/* Zero-copy quarantine of connection zq_gen (see above). */
	bool zq_active;
	int zq_fd;	      /* the old control socket, until the peer closes it; -1 */
	uint64_t zq_close_by; /* stop waiting for the close then (ns) */
	uint64_t zq_until;    /* the quarantine ends then (ns); 0 while waiting for the close */
	uint32_t zq_gen;

	/* Shared with the workers: buffers of generations up to this one may go back. */
	uint32_t zq_clear;

	/* Shared with other threads (relaxed). */
	int up;
	uint64_t connects, disconnects, violations, ctl_errors;
	char reason[MEMIF_REASON_LEN + 1];
};

static inline struct memif_port *mport(const struct tide_port *p)
{
	return p->priv;
}

/* How bursts and the control thread agree that a queue is off the shared memory. */
#define MEMIF_QUIESCE_AUTO	 0 /* membarrier when the kernel has it, else fence */
#define MEMIF_QUIESCE_MEMBARRIER 1 /* membarrier() or refuse to start */
#define MEMIF_QUIESCE_FENCE	 2 /* a full fence in every burst entry (slower, portable) */

/* ---- control plane (memif_ctl.c and the files of memif_ctl.h) ---- */

int memif_ctl_start(struct memif_port *mp);
/* Control messages on a socket (both return 0/1 or -errno / <0 with *why; see memif_ctl.c). */
int memif_send_on(int sock, const struct memif_msg *m, int fd);
/* 1: a decoded message (*fd: the one fd that came with it, or -1); 0: nothing waiting;
 * -1: the peer is gone (*why); -2: a bad message (*why; its fds closed). */
int memif_recv_on(int sock, struct memif_msg *m, int *fd, const char **why);
/* Send disconnect with @reason on @fd and close it. */
void memif_refuse(int fd, const char *reason);
/* Server: the limits port @mp advertises (ring counts from its queues). */
void memif_server_limits(const struct memif_port *mp, struct memif_limits *lim);
/* Server: a new connection for @mp, hello not sent yet. */
void memif_server_take(struct memif_port *mp, int fd);
/* Server: a connection whose init (already stepped through @conn) names @mp's id. */
void memif_server_adopt(struct memif_port *mp, int fd, const struct memif_conn *conn,
			const struct memif_msg *init, uint64_t deadline);
/* A listening socket for @mp's path: the fd or -errno (logged). */
int memif_listen(const struct memif_port *mp);

/* ---- server sockets shared by several interface ids (memif_sock.c) ---- */
int memif_listener_join(struct memif_port *mp);
void memif_listener_leave(struct memif_port *mp);
void memif_listener_poll(struct memif_port *mp);

/* Choose the quiesce scheme (membarrier or fences); -ENOSYS if quiesce=membarrier can't. */
int memif_quiesce_setup(struct memif_port *mp);
void memif_ctl_stop(struct memif_port *mp);
int memif_ctl_poll(struct memif_port *mp);
/* Advance a zero-copy quarantine (control thread); true while one runs. */
bool memif_zq_step(struct memif_port *mp, uint64_t now);
/* Why a link goes down: the port or the peer closed it, or the peer broke a rule. */
#define MEMIF_DISC_NORMAL 0
#define MEMIF_DISC_CTL	  1 /* in a control message (counted in ierrors) */
#define MEMIF_DISC_DATA	  2 /* in shared memory (already counted by the queue) */

/* Bring the link down: queues quiesced, reason recorded, disconnect sent if @send. */
void memif_ctl_disconnect(struct memif_port *mp, const char *reason, int kind, bool send);

/* ---- data paths ---- */

/* Burst functions for the port's role and mode (set at start, constant afterwards). */
tide_rx_burst_fn memif_copy_rx_fn(const struct memif_port *mp);
tide_tx_burst_fn memif_copy_tx_fn(const struct memif_port *mp, enum memif_txfree f);
tide_rx_burst_fn memif_zc_rx_fn(void);
tide_tx_burst_fn memif_zc_tx_fn(void);
unsigned memif_tx_advance_ool(struct txc *t);
/* Tx slow path: the peer's index read again; the burst's room (0 after a violation). */
unsigned memif_tx_room_more(struct memif_txq *q, bool server);
void memif_zc_rx_post_ool(struct rxr *r, uint32_t first, unsigned n, bool doorbell);

/*
 * Resync (slow path of a burst, worker thread): give back what the queue holds from an old
 * connection, adopt the generation in @live. Returns true when the queue is up now.
 */
bool memif_rxq_resync(struct memif_rxq *q, uint32_t live);
bool memif_txq_resync(struct memif_txq *q, uint32_t live);

/* May the buffers a queue posted or sent under generation @zgen go back? (Worker.) Copy
 * mode: at once; zero-copy: once the quarantine of @zgen is over (acquire: pairs with the
 * control thread's release store of zq_clear). */
static inline bool memif_zq_clear(const struct memif_port *mp, uint32_t zgen)
{
	if (!mp->zc)
		return true;
	return (int32_t)(__atomic_load_n(&mp->zq_clear, __ATOMIC_ACQUIRE) - zgen) >= 0;
}

/* The release/drop of everything a stopped queue holds (port stop, control thread). */
void memif_rxq_flush(struct memif_rxq *q);
void memif_txq_flush(struct memif_txq *q);

/*
 * Burst entry and exit, and a fault found by a worker: the shared quiesce scheme
 * (src/quiesce.h; memif_quiesce() in memif_link.c is the control thread's half). @fence is
 * set without membarrier() (quiesce=fence, or a kernel without it).
 */
TIDE_ALWAYS_INLINE uint32_t memif_enter(uint32_t *busy,
					const uint32_t *live,
					bool fence)
{
	return quiesce_enter(busy, live, fence);
}

TIDE_ALWAYS_INLINE void memif_leave(uint32_t *busy)
{
	quiesce_leave(busy);
}

static inline void memif_fault(const char **fault, uint64_t *errors, const char *why)
{
	quiesce_fault(fault, errors, why);
}

/* Store a ring index as one aligned 16-bit store (release: the slots it covers are written). */
static inline void memif_publish(uint16_t *idx, uint16_t v)
{
	__atomic_store_n(idx, v, __ATOMIC_RELEASE);
}

/* Ring an interrupt after publishing, unless the reader masked it (it polls). */
static inline void memif_kick(const struct memif_qring *r)
{
	uint64_t one = 1;

	if (tide_unlikely(!(__atomic_load_n(&r->ring->flags, __ATOMIC_RELAXED) &
			    MEMIF_RING_FLAG_MASK_INT)) &&
	    r->efd >= 0) {
		ssize_t rc = write(r->efd, &one, sizeof(one));

		(void)rc; /* a full counter already wakes the reader */
	}
}

static inline void memif_rx_fault(struct memif_rxq *q, const char *why)
{
	memif_fault(&q->fault, &q->pub.stats.errors, why);
	q->seen = MEMIF_SEEN_FAULT;
}

static inline void memif_tx_fault(struct memif_txq *q, const char *why)
{
	memif_fault(&q->fault, &q->pub.stats.errors, why);
	q->seen = MEMIF_SEEN_FAULT;
}

/*
 * Client Tx: the server's tail on the C2S ring reports completions as a count. It may
 * move no further than the head we published.
 */
TIDE_ALWAYS_INLINE unsigned memif_tx_advance_client(struct txc *t)
{
	struct memif_txq *q = t->drv;
	/* [C2S-tail] acquire: pairs with the server's release store of tail. */
	uint16_t tail = __atomic_load_n(&q->r.ring->tail, __ATOMIC_ACQUIRE), moved;
	const char *why = NULL;

	if (tide_unlikely(memif_ring_index_check(q->peer, tail, (uint16_t)(q->head - q->peer),
						 &moved, &why))) {
		memif_tx_fault(q, why);
		return 0;
	}
	q->peer = tail;
	txc_advance_count(t, moved);
	return moved;
}

#endif
