/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vhost driver: internal structures shared by the control plane (vhost_ctl.h), the port
 * operations (vhost.c) and the data path (vhost_rxtx.c, vhost_copy.h and the two ring
 * layouts, vhost_split.c and vhost_packed.c).
 *
 * Roles. The frontend (QEMU, DPDK virtio-user) owns the virtqueues in its memory and drives
 * the protocol; tide is the backend. Either side may listen on the socket (role=server:
 * tide listens; role=client: tide connects and reconnects). Queue mapping (virtio-net):
 * vring 2i is the guest's receive queue (tide's Tx queue i writes into it), vring 2i+1 the
 * guest's transmit queue (tide's Rx queue i reads from it).
 *
 * Threads. The control plane runs on the port's control thread (vhost_ctl.c: it sleeps in
 * poll() until the frontend, the reconnect timeout or its eventfd wakes it) and in
 * tide_port_poll_ctl(), one at a time under the port's lock; bursts run on worker threads.
 * They share each queue through three words, as the memif driver does:
 *
 *   live   written by the control thread: the layout of the queue's vring while it runs
 *          (VHOST_LIVE_SPLIT, VHOST_LIVE_PACKED), 0 otherwise. The ring pointers, the
 *          memory table copy, the indices and the fds are written before `live` is stored
 *          (release) and only while the queue is quiescent.
 *   busy   written by the worker: 1 from the start of a burst until its end.
 *   fault.why written by the worker: the reason of a violation it found in guest memory;
 *          the queue then moves nothing until the control thread, woken through the
 *          slot's eventfd (fault.wakefd, vhost_fault()), disconnects.
 *
 * Taking a vring away (GET_VRING_BASE, a new memory table, a disconnect): live = 0,
 * membarrier() (a full barrier on every thread), wait until busy is 0. After that no
 * burst touches the old mapping and the indices are the control thread's to read. When
 * membarrier() fails, a grace period under the port lock instead: every other taker of the
 * lock is offline while it waits for it (vhost_lock()).
 *
 * The queue's burst function is set once, at port start (vhost_start()), and only port
 * start and stop (the port's control calls) store it: the control thread never does. The
 * burst reads the layout from the live word it loads anyway (split: a compare with 1 where
 * it compared with 0; packed: one more compare and a jump to the packed burst).
 *
 * Copy mode only: no mbuf is ever visible to the frontend, so a queue holds no buffer
 * between bursts; stopping or losing a connection has nothing to give back.
 */
#ifndef TIDE_VHOST_H_INTERNAL
#define TIDE_VHOST_H_INTERNAL

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <unistd.h>

#include <tide/vhost.h>

#include "inline.h"
#include "driver.h"
#include "offload_vnet.h"
#include "quiesce.h"
#include "txc.h"
#include "unix_sock.h"
#include "vhost_user.h"
#include "virtio_ring.h"

#define VHOST_MAX_QP	  16		 /* queue pairs (TIDE_MAX_QUEUES) */
#define VHOST_RETRY_NS	  (50 * 1000000) /* client: pause between connection attempts */
#define VHOST_MAX_PKT	  16384u	 /* longest frame accepted from the guest */
#define VHOST_REASON_LEN  127
/* Longest frame accepted from a guest that negotiated VIRTIO_NET_F_HOST_TSO4/6: an IP
 * datagram of 64 KiB behind Ethernet and two VLAN tags. */
#define VHOST_MAX_GSO_PKT (65535u + 22u)

/* Every offload feature tide may offer (vhost_start() picks). */
#define VHOST_OL_FEATURES                                                                 \
	(VIRTIO_BIT(VIRTIO_NET_F_CSUM) | VIRTIO_BIT(VIRTIO_NET_F_GUEST_CSUM) |            \
	 VIRTIO_BIT(VIRTIO_NET_F_GUEST_TSO4) | VIRTIO_BIT(VIRTIO_NET_F_GUEST_TSO6) |      \
	 VIRTIO_BIT(VIRTIO_NET_F_GUEST_ECN) | VIRTIO_BIT(VIRTIO_NET_F_HOST_TSO4) |        \
	 VIRTIO_BIT(VIRTIO_NET_F_HOST_TSO6) | VIRTIO_BIT(VIRTIO_NET_F_HOST_ECN))

/* What the guest takes in its receive headers (struct vhost_vq.gfeat), from its features. */
#define VHOST_G_CSUM 1u /* VIRTIO_NET_F_GUEST_CSUM: partial checksums, DATA_VALID */
#define VHOST_G_TSO4 2u /* VIRTIO_NET_F_GUEST_TSO4 */
#define VHOST_G_TSO6 4u /* VIRTIO_NET_F_GUEST_TSO6 */
#define VHOST_G_ECN  8u /* VIRTIO_NET_F_GUEST_ECN */

/* The mbuf requests a Tx queue with offloads enabled looks at, per packet. */
#define VHOST_TX_REQ                                                                    \
	(TIDE_MBUF_F_TX_IP_CKSUM | TIDE_MBUF_F_TX_L4_MASK | TIDE_MBUF_F_TX_TCP_SEG |    \
	 TIDE_MBUF_F_TX_UDP_SEG)

/* The protocol features VIRTIO_F_ACCESS_PLATFORM needs (vhost_iotlb.c). */
#define VHOST_IOTLB_PROTO                                                                          \
	(VIRTIO_BIT(VHOST_USER_PROTOCOL_F_BACKEND_REQ) | VIRTIO_BIT(VHOST_USER_PROTOCOL_F_REPLY_ACK))

/* A queue's live word: its vring runs, with this layout (0: it does not run). */
#define VHOST_LIVE_SPLIT  1u
#define VHOST_LIVE_PACKED 2u

extern const struct tide_driver tide_driver_vhost;

/*
 * A queue's fault: the worker's violation (NULL while the queue is sound) and the control
 * thread's wake fd that vhost_fault() writes when it records one.
 */
struct vhost_fault_slot {
	const char *why;
	int wakefd; /* -1 while the port is stopped */
};

/* One guest memory region as the data path sees it. */
struct vhost_mreg {
	uint64_t gpa;
	uint64_t size;
	uint8_t *host; /* where gpa is mapped here */
};

/* The device IOTLB (VIRTIO_F_ACCESS_PLATFORM, vhost_iotlb.c): entries the port keeps. */
#define VHOST_IOTLB_MAX 128
#define VHOST_MTAB_MAX	(VHOST_IOTLB_MAX > VHOST_USER_MAX_REGIONS ? VHOST_IOTLB_MAX : VHOST_USER_MAX_REGIONS)

/*
 * The memory table (worker copy: written by the control thread while quiescent). @last is
 * the region of the latest translation, tried first (the worker's; always below @n, and
 * r[0] has size 0 when @n is 0). Without the IOTLB the regions are the memory table's,
 * guest physical -> here; with it (@iotlb) they are the IOTLB entries that give this
 * queue's buffers the access they need, IOVA -> here (vhost_iotlb_fill()).
 *
 * A miss (@iotlb only): the worker's translation that found no entry leaves its address in
 * @miss_at; the burst then posts it once (vhost_fail(): @miss_iova, then @miss_state 1,
 * release, and a wake of the control thread), stops where it is and takes nothing more
 * until the control thread has asked the frontend (@miss_state 2) and an update restarted
 * the queue with a new table (@miss_state 0 again).
 */
struct vhost_mtab {
	unsigned n;
	unsigned last;
	bool iotlb;
	uint32_t miss_state; /* 0 none, 1 posted by the worker, 2 sent by the control thread */
	uint64_t miss_at;    /* the worker's */
	uint64_t miss_iova;  /* posted */
	struct vhost_mreg r[VHOST_MTAB_MAX];
};

/* How a queue frees the copied Tx burst (seed 003) and publishes the used ring (seed 004). */
enum vhost_txfree {
	VHOST_FREE_AFTER, /* the queue's release policy, on the whole burst after the loop */
	VHOST_FREE_LOOP,  /* tide_mbuf_free() right after each packet's copy */
};

/* One running vring as a queue uses it. */
struct vhost_vq {
	struct vring_desc *desc;
	struct vring_avail *avail;
	struct vring_used *used;
	uint16_t num, mask;
	uint16_t last_avail;   /* next avail entry to take */
	uint16_t used_idx;     /* our copy of used->idx */
	uint16_t hdr_len;      /* virtio-net header: 10 or 12 */
	bool mrg;	       /* VIRTIO_NET_F_MRG_RXBUF */
	bool event_idx;
	bool indirect;
	bool used_per_pkt;     /* publish used->idx after every packet (benchmark) */
	bool in_order;	       /* VIRTIO_F_IN_ORDER: the guest Tx vring completes by count */
	/* Offloads (docs/drivers/vhost.md, "Offloads"). @ol, Rx only: the guest's headers
	 * are applied (VIRTIO_NET_F_CSUM negotiated; read by the offload burst, which port
	 * start chose when the feature was offered). A Tx queue that enabled offloads has the
	 * offload burst: the packets' requests go into the header where the guest takes them
	 * (@gfeat), are done in software where it does not. */
	bool ol;
	uint8_t gfeat;	       /* VHOST_G_*: what the guest's receive headers may carry */
	uint32_t max_frame;    /* Rx: longest frame taken (VHOST_MAX_PKT or _GSO_PKT) */
	uint64_t ol_en;	       /* the queue's enabled offloads (queue setup) */
	int callfd;	       /* -1: never notify; else a non-blocking eventfd */
	uint64_t call_errors;  /* writes to callfd that failed (worker; read relaxed) */
	struct vhost_mtab mem;
	/* Packed layout (vhost_packed.c): desc is the descriptor ring, avail the driver's
	 * event area, used the device's (cast to the packed types); last_avail is a ring
	 * position (0..num-1) and wrap its wrap counter. Buffers complete in order, so the
	 * next used position is last_avail too (used_idx follows it). */
	bool packed;
	bool wrap;
};

struct vhost_rxq {
	struct tide_rxq pub; /* first: the handle */
	uint32_t busy;
	bool fence; /* no membarrier(): burst entry fences (quiesce.h) */
	uint16_t dataroom;
	uint16_t fast_max; /* longest frame copied by the one-descriptor path: min(dataroom, max) */
	uint16_t port_id;
	struct tide_pool *pool;
	struct vhost_vq vq;
	uint32_t live TIDE_CACHE_ALIGNED; /* 0, VHOST_LIVE_SPLIT or VHOST_LIVE_PACKED */
	struct vhost_fault_slot fault;
	/* Guest headers refused (offload_vnet_to_mbuf()), by reason; the packet dropped. */
	uint64_t hdr_drops[OFFLOAD_VNET_NR_REASONS];
};

/* A Tx queue's offload counters (worker; read relaxed). */
struct vhost_tx_olstats {
	uint64_t sw_cksum;    /* packets whose checksums were filled in software */
	uint64_t sw_gso;      /* packets segmented in software (the guest takes no TSO) */
	uint64_t bad;	      /* requests refused (inconsistent, or no fallback): dropped */
	uint64_t nombuf;      /* software segmentation found its pool empty: dropped */
	uint64_t gso_partial; /* segments of a packet dropped: the guest ring filled midway */
};

struct vhost_txq {
	struct tide_txq pub;
	uint32_t busy;
	bool fence;
	enum vhost_txfree free_mode;
	struct vhost_vq vq;
	struct txc txc;
	uint32_t live TIDE_CACHE_ALIGNED; /* 0, VHOST_LIVE_SPLIT or VHOST_LIVE_PACKED */
	struct vhost_fault_slot fault;
	struct vhost_tx_olstats ols;
};

/* A mapped region (control thread). */
struct vhost_map {
	void *addr;
	size_t len;
	uint64_t gpa, size, uva;
	uint8_t *host; /* addr + mmap offset */
};

/* What the frontend told us about one vring (control thread). */
struct vhost_vring {
	uint32_t num;
	uint16_t base;
	bool num_set, addr_set, kicked, enabled, running;
	uint64_t desc, avail, used; /* frontend virtual addresses */
	int kickfd, callfd;
};

/* The message being received (a stream socket may deliver it in pieces). */
struct vhost_rxmsg {
	uint8_t buf[sizeof(struct vhost_user_msg_hdr) + VHOST_USER_MAX_PAYLOAD];
	size_t have;
	struct unix_sock_fds fds; /* max VHOST_USER_MAX_FDS */
};

_Static_assert(VHOST_USER_MAX_FDS <= UNIX_SOCK_MAX_FDS, "vhost_rxmsg fds");

struct vhost_port {
	/* Configuration (spec). */
	bool server;
	char path[108];
	unsigned queues;
	bool mrg, event_idx, in_order, indirect;
	bool txfree_loop, used_per_pkt;
	bool unsealed_mem; /* map memory that cannot be sealed against shrinking */
	bool offloads;	   /* offer the checksum and segmentation offloads (offloads=yes) */
	struct tide_port *port;

	/* Control plane: the port's control thread (vhost_ctl.c) and tide_port_poll_ctl(),
	 * one at a time under @lock; tide_vhost_info_get() reads under it too. */
	pthread_mutex_t lock;
	pthread_t thread;
	bool thread_on, quit;
	int wakefd; /* eventfd: port stop, a worker's fault, a changed fd set */
	int lfd, cfd;
	bool started;
	uint64_t retry_at;
	uint64_t offered, features, proto_offered, proto;
	/* The MTU the frontend stated (VHOST_USER_NET_SET_MTU), else the default: written by
	 * the control thread, read by tide_port_mtu_get() (relaxed atomics). */
	unsigned mtu;
	bool owner;
	bool fence; /* resolved at start: no membarrier(), the workers fence */
	struct vhost_rxmsg rx;
	struct vhost_map map[VHOST_USER_MAX_REGIONS];
	unsigned nmap;
	struct vhost_vring vr[2 * VHOST_MAX_QP];

	/* The device IOTLB (VIRTIO_F_ACCESS_PLATFORM; vhost_iotlb.c) and the backend's
	 * request channel that misses go out on (-1: none). */
	struct vhost_iotlb_ent {
		uint64_t iova, size, uaddr;
		uint8_t perm;
	} iotlb[VHOST_IOTLB_MAX];
	unsigned niotlb;
	int bfd;

	/* Shared with other threads (relaxed). */
	int up;
	uint64_t iotlb_misses; /* misses sent to the frontend */
	uint64_t connects, disconnects, violations, ctl_errors;
	char reason[VHOST_REASON_LEN + 1];
};

static inline struct vhost_port *vport(const struct tide_port *p)
{
	return p->priv;
}

/* VIRTIO_F_IN_ORDER negotiated: buffers are used in the order they were made available. */
static inline bool vhost_in_order(const struct vhost_port *vp)
{
	return vp->features & VIRTIO_BIT(VIRTIO_F_IN_ORDER);
}

/* ---- control plane (vhost_ctl.c; its other files: vhost_ctl.h) ---- */
/*
 * Take the port lock from a control call of the application (tide_port_poll_ctl(),
 * tide_vhost_info_get(), port stop; the control thread takes it plainly). The lock's
 * holder may be waiting for a grace period (quiesce_fallback(): membarrier() failed), which
 * waits for every online thread to pass a burst call: the caller, when it runs bursts, goes
 * offline while it waits for the lock (it holds nothing of the data path inside a control
 * call) and comes back online once it has it, so that wait never waits for it.
 */
void vhost_lock(struct vhost_port *vp);
int vhost_ctl_start(struct vhost_port *vp);
void vhost_ctl_stop(struct vhost_port *vp);
int vhost_ctl_poll(struct vhost_port *vp);

/* ---- data path ---- */
/* The queues' burst functions (vhost_rxtx.c). */
tide_rx_burst_fn vhost_rx_fn(bool ol);
tide_tx_burst_fn vhost_tx_fn(enum vhost_txfree f, bool ol);
unsigned vhost_tx_advance_ool(struct txc *t);

/*
 * Offloads, off the fast paths (vhost_offload.c). vhost_rx_ol(): apply the guest's header
 * @h to received packet @m; 0, or -1 when it was refused (counted by reason: the caller
 * drops the packet). vhost_tx_ol_prep(): what to do with packet @m, which carries Tx
 * requests: 0: send it with header *@h; k > 0: it was cut into the k packets in @segs
 * (the guest takes no TSO; @m is left whole and unchanged, still the caller's: the caller
 * frees it once the outputs are sent, or gives it back);
 * -1: drop it (counted).
 */
#define VHOST_GSO_MAX_SEGS 128
int vhost_rx_ol(struct vhost_rxq *q, struct tide_mbuf *m, const struct virtio_net_hdr_mrg *h);
int vhost_tx_ol_prep(struct vhost_txq *q, struct tide_mbuf *m, struct virtio_net_hdr_mrg *h,
		     struct tide_mbuf **segs);

/* The bodies of each layout (vhost_split.c, vhost_packed.c), jumped to by the queue's burst
 * once it has entered (busy stored), read the layout from the live word and found no fault;
 * they leave. */
uint16_t vhost_split_rx(struct tide_rxq *q, struct tide_mbuf **pkts, uint16_t n);
uint16_t vhost_split_tx_after(struct tide_txq *q, struct tide_mbuf **pkts, uint16_t n);
uint16_t vhost_split_tx_loop(struct tide_txq *q, struct tide_mbuf **pkts, uint16_t n);
uint16_t vhost_packed_rx(struct tide_rxq *q, struct tide_mbuf **pkts, uint16_t n);
uint16_t vhost_packed_tx_after(struct tide_txq *q, struct tide_mbuf **pkts, uint16_t n);
uint16_t vhost_packed_tx_loop(struct tide_txq *q, struct tide_mbuf **pkts, uint16_t n);
/* The same for a queue that enabled offloads (chosen at port start: the bodies above never
 * look at offloads). */
uint16_t vhost_split_rx_ol(struct tide_rxq *q, struct tide_mbuf **pkts, uint16_t n);
uint16_t vhost_split_tx_after_ol(struct tide_txq *q, struct tide_mbuf **pkts, uint16_t n);
uint16_t vhost_split_tx_loop_ol(struct tide_txq *q, struct tide_mbuf **pkts, uint16_t n);
uint16_t vhost_packed_rx_ol(struct tide_rxq *q, struct tide_mbuf **pkts, uint16_t n);
uint16_t vhost_packed_tx_after_ol(struct tide_txq *q, struct tide_mbuf **pkts, uint16_t n);
uint16_t vhost_packed_tx_loop_ol(struct tide_txq *q, struct tide_mbuf **pkts, uint16_t n);

/*
 * Guest physical address -> our address and how many bytes follow it in its region, through
 * the queue's checked copy of the memory table (the region of the previous translation
 * first). NULL when @gpa is in no region.
 */
TIDE_ALWAYS_INLINE uint8_t *vhost_gpa_host(struct vhost_mtab *m,
					   uint64_t gpa,
					   uint64_t *contig)
{
	const struct vhost_mreg *r = &m->r[m->last];
	uint64_t off = gpa - r->gpa;

	if (tide_likely(off < r->size)) {
		*contig = r->size - off;
		return r->host + off;
	}
	for (unsigned i = 0; i < m->n; i++) {
		off = gpa - m->r[i].gpa;
		if (off < m->r[i].size) {
			m->last = i;
			*contig = m->r[i].size - off;
			return m->r[i].host + off;
		}
	}
	m->miss_at = gpa;
	return NULL;
}

/* The reason a translation of a buffer address failed: a fault without the IOTLB, a miss
 * with it (vhost_fail()). */
extern const char vhost_why_nomap[];

/*
 * Burst entry and exit, and a fault found by a worker: the shared quiesce scheme
 * (src/quiesce.h; vhost_vring_stop() in vhost_vring.c is the control thread's half).
 * @fence is set when the kernel has no membarrier(): then every burst entry carries a full
 * fence.
 */
TIDE_ALWAYS_INLINE uint32_t vhost_enter(uint32_t *busy,
					const uint32_t *live, bool fence)
{
	return quiesce_enter(busy, live, fence);
}

TIDE_ALWAYS_INLINE void vhost_leave(uint32_t *busy)
{
	quiesce_leave(busy);
}

/* Wake the control thread through its eventfd (-1: no thread). A full counter (EAGAIN) is
 * readable already, so a failed write loses no wake-up. */
static inline void vhost_wake(int wakefd)
{
	uint64_t one = 1;

	if (wakefd >= 0 && write(wakefd, &one, sizeof(one)) < 0) {
		/* nothing to do: see above */
	}
}

/*
 * A worker found the frontend breaking a rule: record it in the queue's fault slot and wake
 * the control thread, which disconnects. The eventfd write is the data path's only syscall,
 * once per fault (the queue moves nothing after it).
 */
static inline void vhost_fault(struct vhost_fault_slot *s, uint64_t *errors, const char *why)
{
	bool first = __atomic_load_n(&s->why, __ATOMIC_RELAXED) == NULL;

	quiesce_fault(&s->why, errors, why);
	if (first)
		vhost_wake(s->wakefd);
}

/*
 * The burst found @why: with the IOTLB, a translation that failed (vhost_why_nomap) is a
 * miss, posted once (struct vhost_mtab) with the control thread woken; the burst returns
 * what it has and the same buffer is tried again once the frontend answered. Anything else
 * is a fault (vhost_fault()).
 */
static inline void vhost_fail(struct vhost_fault_slot *fault, uint64_t *errors, struct vhost_mtab *m,
			      const char *why)
{
	if (m->iotlb && why == vhost_why_nomap) {
		if (__atomic_load_n(&m->miss_state, __ATOMIC_RELAXED) == 0) {
			__atomic_store_n(&m->miss_iova, m->miss_at, __ATOMIC_RELAXED);
			/* Release: pairs with the control thread's acquire (vhost_iotlb_service()). */
			__atomic_store_n(&m->miss_state, 1, __ATOMIC_RELEASE);
			vhost_wake(fault->wakefd);
		}
		return;
	}
	vhost_fault(fault, errors, why);
}

#endif
