/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tide/port.h - ports, queues and the burst calls.
 *
 * A port is opened from a spec string "driver:key=value,key=value", e.g.
 *     simnic:ports=2,mode=inline,wire=gen,size=64
 *     ring:name=a            ring:name=a,peer=1
 *     null:size=64
 *     pcap:rx=in.pcap,tx=out.pcap
 * Life cycle: open -> configure (queue counts) -> rxq/txq setup -> start -> bursts ->
 * stop -> (setup/start again) -> close. Control calls return 0 or -errno and leave the port
 * unchanged on error; bad configuration gets -EINVAL and a log line naming the value and the
 * reason. Control calls are not thread-safe against each other: one control thread.
 *
 * Control calls and bursts on other threads: stop, close, configure, queue setup and
 * tide_recycle_pair() may run while other threads (with a thread index, tide/lcore.h) keep
 * calling bursts on any port, this one included. A stopped queue's bursts return 0; before
 * a stop returns, every burst that could still see the queue running has finished, and no
 * thread follows a recycle pairing into a queue that is stopped or gone. The application
 * keeps its own queue handles valid: after close, no thread may call a burst on them (it
 * unpublishes them and waits for its threads first). A thread that polls queues and then
 * blocks calls tide_thread_offline() first, or control calls wait for it.
 *
 * The same holds for every data-path call, not only the bursts: tide_rx_burst() and
 * tide_tx_burst() are quiescent points, and tide_recycle() and tide_txq_done_cleanup(),
 * made between them, check the queue's live state (a stopped Rx queue's burst is the
 * no-op; a stopped Tx queue's completion state belongs to no thread) before they touch
 * it. Called on a queue that is stopping, stopped or not yet started, they return 0; a Tx
 * burst that began while the port ran and reaches the queue after stop began takes
 * nothing. From tide_port_start() on, the first thread that polls a Tx queue owns it.
 *
 * Moving a queue to another thread: the application hands it over (the old thread stops
 * polling it before the new one starts). Recycling follows: a pairing between queues of
 * different threads is never used, a moved Rx queue is re-paired by its new thread, and a
 * moved Tx queue accepts packets once its old thread has passed a burst call (until then
 * its bursts return 0).
 *
 * Buffers: an Rx queue owns the buffers posted to its device; a Tx queue owns the buffers it
 * was given until the device completes them. Stopping a port gives every buffer it holds back
 * to its pool; so does closing it.
 */
#ifndef TIDE_PORT_H
#define TIDE_PORT_H

#include <tide/common.h>
#include <tide/lcore.h>
#include <tide/mbuf.h>
#include <tide/offload.h>
#include <tide/port_core.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TIDE_MAX_PORTS 32
#define TIDE_MAX_QUEUES 16

/* ---- the burst calls (inline; no argument checks; one thread per queue at a time) ---- */

/*
 * Internal: count a burst call. Only the polling thread adds, but tide_port_stats_reset()
 * may zero the counters from another thread: the load is a relaxed atomic like the store
 * (a plain mov each on x86 and arm64), so the race is defined (a count may be lost), not a
 * data race.
 */
static inline void tide_queue_count_(struct tide_queue_stats *s, uint16_t k)
{
	__atomic_store_n(&s->polls, __atomic_load_n(&s->polls, __ATOMIC_RELAXED) + 1,
			 __ATOMIC_RELAXED);
	if (k == 0)
		__atomic_store_n(&s->idle_polls,
				 __atomic_load_n(&s->idle_polls, __ATOMIC_RELAXED) + 1,
				 __ATOMIC_RELAXED);
}

/*
 * Receive up to @n packets into @pkts. Returns how many (0..n); the caller owns them.
 * Never fails: errors and drops are counted in the queue's stats.
 */
static inline uint16_t tide_rx_burst(struct tide_rxq *q, struct tide_mbuf **pkts, uint16_t n)
{
	uint16_t k;

	tide_qs_tick_(); /* a quiescent point: before the burst function is read */
	/* Acquire: pairs with the release in tide_port_start(). */
	k = __atomic_load_n(&q->call, __ATOMIC_ACQUIRE)(q, pkts, n);
	tide_queue_count_(&q->stats, k);
	return k;
}

/*
 * Send up to @n packets from @pkts. Returns how many were taken (0..n); the queue now owns
 * pkts[0..ret) and frees them when the device is done. The caller still owns the rest
 * (typically it frees or retries them).
 */
static inline uint16_t tide_tx_burst(struct tide_txq *q, struct tide_mbuf **pkts, uint16_t n)
{
	uint16_t k;

	tide_qs_tick_();
	k = __atomic_load_n(&q->call, __ATOMIC_ACQUIRE)(q, pkts, n);
	tide_queue_count_(&q->stats, k);
	return k;
}

/* ---- Tx queue configuration: the Tx completion engine's knobs ---- */

/* Where the "report status" mark goes (see docs/design/engine.md). */
enum tide_rs {
	TIDE_RS_BUCKET = 0, /* the last slot of every rs_thresh-slot bucket (default) */
	TIDE_RS_EVERY,      /* every packet */
	TIDE_RS_BURST,      /* the last packet of each burst, and whenever the gap reaches rs_thresh */
};

/* How completed buffers are released. */
enum tide_txfree {
	TIDE_TXFREE_AUTO = 0, /* recycle when paired and safe, else fast if asserted, else bulk */
	TIDE_TXFREE_EACH,     /* one free per mbuf (refcount- and chain-aware) */
	TIDE_TXFREE_BULK,     /* refcount-aware, grouped by pool, bulk puts */
	TIDE_TXFREE_FAST,     /* fast-free contract: bulk put straight from the ring, headers unread */
	TIDE_TXFREE_RECYCLE,  /* move completed buffers into the paired Rx queue's refill slots */
};

/* Flags of struct tide_txq_conf. */
#define TIDE_TXQ_F_FAST_FREE 0x1u /* the application promises: every mbuf sent on this queue
				     comes from one pool, has refcnt 1 and one segment */

struct tide_txq_conf {
	size_t sz;              /* sizeof(struct tide_txq_conf) */
	enum tide_rs rs;
	uint16_t rs_thresh;     /* bucket size; 0 = default 32 */
	uint16_t free_thresh;   /* reclaim when fewer free slots; 0 = the port's default:
				   32, or nb_desc - rs_thresh if tx_reclaim_eager */
	enum tide_txfree txfree;
	unsigned flags;         /* TIDE_TXQ_F_* */
	uint64_t offloads;      /* TIDE_OFFLOAD_TX_* to enable (tide/offload.h); each must be
				   in the port's tx_offload_capa, else setup fails (-ENOTSUP) */
};

struct tide_rxq_conf {
	size_t sz;              /* sizeof(struct tide_rxq_conf) */
	uint16_t free_thresh;   /* refill batch; 0 = default 32 */
	uint64_t offloads;      /* TIDE_OFFLOAD_RX_* to enable; each must be in the port's
				   rx_offload_capa, else setup fails (-ENOTSUP) */
};

/* Names <-> values for the knobs ("bucket", "every", "burst"; "auto", "each", ...). */
TIDE_EXPORT const char *tide_rs_name(enum tide_rs rs);
TIDE_EXPORT int tide_rs_parse(const char *s, enum tide_rs *out);
TIDE_EXPORT const char *tide_txfree_name(enum tide_txfree f);
TIDE_EXPORT int tide_txfree_parse(const char *s, enum tide_txfree *out);

/* ---- ports ---- */

struct tide_port;

/*
 * Open every port a spec describes (a simnic spec with ports=2 describes two). Returns the
 * number of ports (>= 1) stored in @ports, or -EINVAL (unknown driver, unknown key, bad
 * value; logged), -ENOSPC (more than @max ports), or another -errno from the driver.
 */
TIDE_EXPORT int tide_ports_open(const char *spec, struct tide_port **ports, unsigned max);

/* Open exactly one port; -EINVAL when the spec describes several. */
TIDE_EXPORT int tide_port_open(const char *spec, struct tide_port **out);

/*
 * Port identity. Every open port has an id, 0..TIDE_MAX_PORTS-1, unique among the ports open
 * at the same time (an id is reused after its port is closed): the value the drivers store
 * in the mbuf's `port` field of every packet they receive, so tide_port_by_id(m->port) is
 * the port a packet came in on. tide_port_by_name() finds an open port by the name
 * tide_port_name() gives (NULL when none has it); tide_port_next() iterates over the open
 * ports in id order, from tide_port_next(NULL) until it returns NULL.
 * These read the table of open ports, which open and close change: call them on the
 * control thread, or on any thread while no port is being opened or closed.
 */
TIDE_EXPORT int tide_port_id(const struct tide_port *p);
TIDE_EXPORT struct tide_port *tide_port_by_id(unsigned id);
TIDE_EXPORT struct tide_port *tide_port_by_name(const char *name);
TIDE_EXPORT struct tide_port *tide_port_next(const struct tide_port *prev);

/* Set the number of Rx and Tx queues (port stopped). -EINVAL beyond the driver's limits. */
TIDE_EXPORT int tide_port_configure(struct tide_port *p, unsigned nb_rxq, unsigned nb_txq);

/*
 * Set up Rx queue @qid with @nb_desc descriptors (a power of two in the driver's range)
 * refilled from @pool. @conf may be NULL for defaults. Port stopped; replaces an earlier
 * setup of the same queue.
 */
TIDE_EXPORT int tide_rxq_setup(struct tide_port *p, unsigned qid, unsigned nb_desc,
			       struct tide_pool *pool, const struct tide_rxq_conf *conf);

/*
 * Set up Tx queue @qid. Checks: @nb_desc a power of two in range; rs_thresh divides
 * nb_desc; rs_thresh <= free_thresh; rs_thresh + free_thresh <= nb_desc; rs_thresh no more
 * than the device's max RS gap; txfree=fast needs TIDE_TXQ_F_FAST_FREE.
 */
TIDE_EXPORT int tide_txq_setup(struct tide_port *p, unsigned qid, unsigned nb_desc,
			       const struct tide_txq_conf *conf);

/* Start every set-up queue; -EINVAL if a configured queue was not set up. Each Tx queue
 * then belongs to the first thread that polls it (a burst, tide_recycle() or
 * tide_txq_done_cleanup()). */
TIDE_EXPORT int tide_port_start(struct tide_port *p);

/* Stop: bursts become no-ops, every buffer the port holds goes back to its pool. Waits for
 * every data-path call on the port that began while it ran (one grace period); afterwards
 * none reaches its queues until the next start. */
TIDE_EXPORT int tide_port_stop(struct tide_port *p);

/* Stop if needed and free the port (NULL allowed). Queue handles become invalid. Waits for
 * the other threads' next burst calls at most twice (stop's grace period and one for
 * releasing the queues), however many queues the port has; tide_port_configure() and
 * queue setup, which release queues too, wait once. */
TIDE_EXPORT void tide_port_close(struct tide_port *p);

/* Queue handles (valid from setup until close); NULL for a queue that was not set up. */
TIDE_EXPORT struct tide_rxq *tide_port_rxq(struct tide_port *p, unsigned qid);
TIDE_EXPORT struct tide_txq *tide_port_txq(struct tide_port *p, unsigned qid);

/*
 * The info and stats structs the library fills (this one, tide_port_stats, the drivers'
 * info structs) carry their size first: the caller sets sz = sizeof(the struct) before
 * the call; the library fills the first min(sz, its own size) bytes and keeps sz, so the
 * struct can grow without breaking programs built against an older one. A sz below the
 * first version's size is -EINVAL.
 */
struct tide_port_info {
	size_t sz;               /* sizeof(struct tide_port_info), set by the caller */
	const char *driver;
	const char *name;
	unsigned max_rxq, max_txq;
	unsigned min_desc, max_desc;
	unsigned max_rs_gap;     /* longest run of descriptors the device allows without RS */
	unsigned nb_rxq, nb_txq; /* configured */
	uint8_t mac[6];
	int count_completion;    /* completions are reported as a count (O(1) reclaim) */
	/* The depths the driver prefers when the application has no preference of its own
	 * (0: none). An application that picks depths for many ports takes the deepest of
	 * these and its own default, as tide-fwd does without --rxd/--txd. */
	unsigned rx_desc_pref, tx_desc_pref;
	/* 1: the port's control plane runs only inside tide_port_poll_ctl(), which the
	 * application must call now and then (memif). 0: it needs no call (no control plane,
	 * or a thread of the port's own serves it, as vhost's does); calling it anyway is
	 * harmless. Fixed from open to close: ask once. */
	int needs_poll_ctl;
	/*
	 * Frame sizes. The MTU is the L3 payload, as in Linux and DPDK: a frame of MTU bytes
	 * of payload is MTU + TIDE_FRAME_OVERHEAD bytes long (Ethernet header and one VLAN
	 * tag; no FCS). max_frame is the largest frame the port can receive and send whole,
	 * Ethernet header included, no FCS; max_mtu = max_frame - TIDE_FRAME_OVERHEAD.
	 * mtu is the current value (tide_port_mtu_set()); min_mtu is TIDE_MIN_MTU.
	 */
	unsigned mtu, min_mtu, max_mtu;
	unsigned max_frame;
	/* Offloads (TIDE_OFFLOAD_*, tide/offload.h) the port can do, enabled per queue in
	 * struct tide_rxq_conf / tide_txq_conf; 0: none (use the software fallback). */
	uint64_t rx_offload_capa;
	uint64_t tx_offload_capa;
	/*
	 * 1: a Tx queue set up with free_thresh 0 reclaims eagerly, as soon as a whole
	 * bucket may be complete (free_thresh = nb_desc - rs_thresh), not only when the ring
	 * is nearly full. Drivers whose peer reads the buffers with a CPU (virtio: the
	 * backend copies out of them) set it: buffers return to the pool while still in
	 * cache instead of after a trip round the whole ring. 0: the default 32.
	 */
	int tx_reclaim_eager;
};

/* A frame's bytes beyond its MTU: Ethernet header (14) and one VLAN tag (4). */
#define TIDE_FRAME_OVERHEAD 18u
/* The smallest MTU a port takes (IPv4's minimum, as Linux's ETH_MIN_MTU). */
#define TIDE_MIN_MTU 68u
/* The MTU a port has when opened, unless its driver knows better (an AF_XDP interface's
 * own MTU, a vhost-user frontend's), or less when its max_mtu is lower. */
#define TIDE_DEFAULT_MTU 1500u

/* Fill @out (its sz set). Returns 0, or -EINVAL for a NULL argument or a bad sz. */
TIDE_EXPORT int tide_port_info_get(const struct tide_port *p, struct tide_port_info *out);

/*
 * The port's MTU (L3 payload bytes; see struct tide_port_info).
 *
 * tide_port_mtu_get() stores the current MTU in @mtu and returns 0 (-EINVAL for a NULL
 * argument). For afxdp it asks the interface, whose MTU anyone may change.
 *
 * tide_port_mtu_set() changes it and returns 0 (also when @mtu is the MTU already), or:
 *   -EINVAL   @mtu below min_mtu or above max_mtu (logged with the limits);
 *   -ENOTSUP  the driver cannot change it: vhost (the frontend states it);
 *   -EBUSY    the driver changes it only while the port is stopped, and the port runs:
 *             virtio (stated to the backend when the port connects, at start);
 *   another -errno from the device: afxdp passes on SIOCSIFMTU's (-EPERM, or -EINVAL when
 *   the kernel refuses the value, for example with the attached XDP program).
 * simnic, null, ring, pcap, memif and e1000e take it at any time. Setting it never
 * changes max_frame. Rx: a frame above the MTU but within max_frame is delivered as it is
 * (the MTU is what the port promises to take and the application promises to send, as in
 * DPDK's software drivers); one above max_frame cannot arrive whole and is dropped and
 * counted by the driver. afxdp is the exception: the kernel applies the interface's MTU
 * before the frame reaches the socket. Tx does not check the MTU either; a frame above
 * max_frame is dropped and counted in oerrors (pcap: written cut to the snap length).
 * ring and null have no limit of their own: their max_frame only bounds the MTU.
 * Control thread (not safe against other control calls on the port).
 */
TIDE_EXPORT int tide_port_mtu_get(const struct tide_port *p, unsigned *mtu);
TIDE_EXPORT int tide_port_mtu_set(struct tide_port *p, unsigned mtu);
TIDE_EXPORT const char *tide_port_name(const struct tide_port *p);

struct tide_link {
	int up;
	uint32_t speed_mbps;
};

TIDE_EXPORT int tide_port_link_get(struct tide_port *p, struct tide_link *out);

/*
 * Link events: an eventfd that becomes readable when the port's link goes up or down (a
 * memif or vhost-user peer connects or leaves, ...). Read its 8-byte counter to clear it
 * (the fd is non-blocking), then tide_port_link_get() for the state now: events that come
 * close together read as one. Made on the first call, the same fd afterwards; closed with
 * the port. Returns the fd or -errno (eventfd() failed). Control thread.
 */
TIDE_EXPORT int tide_port_link_event_fd(struct tide_port *p);

/*
 * Drive the port's control plane (connection handshakes of memif, for example). Call it
 * from the control thread now and then on every port whose info has needs_poll_ctl set; on
 * the others it is optional (a no-op for drivers without a control plane; vhost: handles
 * at once what the frontend has sent). Returns 0 or -errno.
 */
TIDE_EXPORT int tide_port_poll_ctl(struct tide_port *p);

/*
 * Rx interrupts, for applications that sleep when a queue is idle. tide_rxq_intr_fd()
 * returns a file descriptor that becomes readable (poll/epoll POLLIN) when Rx queue @qid
 * of @p has received packets while its interrupt is enabled; tide_rxq_intr_disable() clears
 * it again (no read needed). It may change when the link reconnects: ask
 * again after a wake-up that found nothing. Enable, then burst once more before sleeping
 * (packets that came before the enable do not signal); disable when polling again, so the
 * peer need not signal while the queue is busy. Not on the fast path: control calls, same
 * thread as the queue's bursts.
 * Returns the fd (or 0 for enable/disable), -ENOTSUP when the driver has no Rx interrupt,
 * -ENOTCONN while the link is down, -EINVAL for a bad port or queue.
 */
TIDE_EXPORT int tide_rxq_intr_fd(struct tide_port *p, unsigned qid);
TIDE_EXPORT int tide_rxq_intr_enable(struct tide_port *p, unsigned qid);
TIDE_EXPORT int tide_rxq_intr_disable(struct tide_port *p, unsigned qid);

struct tide_port_stats {
	size_t sz;              /* sizeof(struct tide_port_stats), set by the caller */
	uint64_t ipackets, ibytes, ierrors, rx_nombuf, rx_missed;
	uint64_t opackets, obytes, oerrors; /* frames that went to the peer: a packet a driver
					      cut in software counts once per segment */
	uint64_t tx_hangs;      /* device hangs detected (RS gap above the device limit) */
	/*
	 * tx_released: buffers the Tx bursts took (counted in their return value) that the
	 * Tx queues have let go of since, whichever way: completed and released to a pool
	 * (any txfree policy), freed right after a copy (copy-mode drivers, txfree_loop),
	 * dropped by the driver (counted in oerrors too), handed to the peer port (ring),
	 * given back at stop, or recycled. Once a port is stopped it equals the packets its
	 * Tx bursts took since the last reset (with no packet in flight at that reset); while
	 * it runs, the difference is what its Tx queues hold. One exception: a chained packet
	 * that memif zero-copy sends as one slot per segment counts once per segment.
	 * tx_recycled: those of them moved straight into an Rx queue (<= tx_released).
	 */
	uint64_t tx_released;
	uint64_t tx_recycled;
	uint64_t rx_polls, rx_idle_polls, tx_polls, tx_idle_polls;
	struct tide_queue_stats rxq[TIDE_MAX_QUEUES];
	struct tide_queue_stats txq[TIDE_MAX_QUEUES];
};

/* Fill @out (its sz set). Returns 0, or -EINVAL for a NULL argument or a bad sz. */
TIDE_EXPORT int tide_port_stats_get(const struct tide_port *p, struct tide_port_stats *out);
TIDE_EXPORT void tide_port_stats_reset(struct tide_port *p);

/*
 * Extended statistics, by name: every counter of tide_port_stats_get() ("rx_good_packets",
 * "tx_good_bytes", "tx_recycled", ...), the per-queue ones ("rx_q0_packets", "tx_q1_bytes",
 * ...), then the driver's own, prefixed with the driver's name ("memif_disconnects",
 * "vhost_call_errors", ...). The order is the same in every call while the port's queue
 * counts stay: names_get() once, then get() as often as needed, index for index.
 *
 * tide_xstats_names_get() fills up to @n names and returns how many the port has (call it
 * with NULL, 0 for the count); tide_xstats_get() the same for the values. Both: -EINVAL for
 * a NULL port. tide_xstats_get_by_name(): 0 and the value, -ENOENT for a name the port
 * does not have. tide_xstats_reset() zeroes the port's counters and those the driver resets
 * with tide_port_stats_reset(); connection counters (memif's, vhost's) count from open.
 * Control calls; counters are read while bursts run, each one atomically.
 */
#define TIDE_XSTAT_NAME_SIZE 64

struct tide_xstat_name {
	char name[TIDE_XSTAT_NAME_SIZE];
};

TIDE_EXPORT int tide_xstats_names_get(struct tide_port *p, struct tide_xstat_name *names,
				      unsigned n);
TIDE_EXPORT int tide_xstats_get(struct tide_port *p, uint64_t *values, unsigned n);
TIDE_EXPORT int tide_xstats_get_by_name(struct tide_port *p, const char *name,
					uint64_t *value);
TIDE_EXPORT int tide_xstats_reset(struct tide_port *p);

/* ---- Tx completion and recycling ---- */

/*
 * Reclaim buffers the device has completed on an idle Tx queue, up to @max (0 = no limit).
 * It also hands the device packets a burst queued but the device refused to take then (an
 * afxdp kick the kernel refused): an application that may stop sending while packets are
 * in flight calls it on idle rounds. Returns how many were released: 0 on a stopped (or
 * never started) queue, and while the queue is being handed over from another thread.
 * Same thread rules as tide_tx_burst().
 */
TIDE_EXPORT unsigned tide_txq_done_cleanup(struct tide_txq *q, unsigned max);

/*
 * Move one completed bucket of @txq straight into @rxq's refill slots, skipping the pool.
 * Done only when the Rx refill has room for the bucket without wrapping, the buffers come
 * from the Rx queue's pool, and the fast-free contract is asserted or every buffer has
 * refcnt 1 and one segment; otherwise the bucket is released the normal way. Returns the
 * number of buffers recycled (0 when nothing was, when the calling thread does not poll
 * @txq, or when either queue is stopped). Both queues on the calling thread.
 */
TIDE_EXPORT unsigned tide_recycle(struct tide_rxq *rxq, struct tide_txq *txq);

/*
 * Pair @rxq with @txq for txfree=recycle (or override automatic pairing): from now on
 * @rxq's refill takes completed buffers from @txq first. @txq NULL unpairs (and gives the
 * queue back to automatic pairing). Buffers move only while one thread polls both queues;
 * otherwise the pairing is kept but unused. Control thread; safe while bursts run.
 */
TIDE_EXPORT int tide_recycle_pair(struct tide_rxq *rxq, struct tide_txq *txq);

#ifdef __cplusplus
}
#endif

#endif /* TIDE_PORT_H */
