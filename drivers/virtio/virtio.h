/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * virtio driver: tide as a virtio-net frontend (the driver side of a virtio device). One
 * virtqueue frontend (split rings in tide's memory, Rx and Tx bursts: virtio_rxtx.c; packed
 * rings when VIRTIO_F_RING_PACKED is asked for and offered: virtio_packed.c) over
 * a transport that reaches the device (struct virtio_transport): vhost-user
 * (virtio_user.c: a backend process on a UNIX socket), vhost-kernel (virtio_kernel.c:
 * /dev/vhost-net and a tap device) or virtio-pci (virtio_pci.c: a modern virtio-net PCI
 * function through the PCI layer, src/pci.h).
 *
 * Queue mapping (virtio-net): vring 2i is the receive queue (tide's Rx queue i: the device
 * writes into buffers we post), vring 2i+1 the transmit queue (tide's Tx queue i).
 *
 * Memory. Rings live in one shared (memfd) area of the port, made at start; packet buffers
 * are the mbufs of the Rx queues' pools: the device reads and writes them in place (zero
 * copy both ways). The device's addresses are our virtual addresses. vhost-user: the pools
 * must be TIDE_POOL_F_SHARED (memfd-backed) and the memory table maps each area at its
 * address; virtio-pci: any pool, mapped into the device's IOMMU domain at IOVA = address.
 *
 * Threads. The control plane runs on the port's control thread (connect, handshake,
 * watching the connection, reconnecting); bursts on worker threads. They share each
 * queue through the quiesce scheme of src/quiesce.h:
 *
 *   live   written by the control thread: a connection generation (neither 0 nor
 *          VIRTIO_SEEN_NONE) while the queue's vring runs, 0 while it does not. Ring memory is reset before it is
 *          stored (release).
 *   busy   written by the worker around each burst.
 *   seen   written by the worker: the generation its indices belong to. A burst that
 *          finds live != seen resynchronises first (virtio_burst.h): the buffers
 *          of the old connection come home (the device is gone: they never complete), the
 *          indices restart at 0, and an Rx queue posts a full ring. So only the polling
 *          thread touches the Rx refill ring and the Tx engine, as everywhere in tide (a
 *          manual tide_recycle() writes the refill ring from that thread too). The Rx
 *          queues go live first; the control thread waits (briefly) until their workers
 *          have posted the receive buffers before the Tx queues go live, so that a device
 *          answering the first packets finds somewhere to put the answers.
 *   fault.why written by the worker: the rule the device broke (a used id out of range,
 *          a used index beyond what was posted, ...). The queue moves nothing after it;
 *          the control thread, woken through its eventfd, logs the reason, counts the
 *          fault and drops the connection.
 */
#ifndef TIDE_VIRTIO_H_INTERNAL
#define TIDE_VIRTIO_H_INTERNAL

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <unistd.h>

#include "driver.h"
#include "mem.h"
#include "quiesce.h"
#include "rxr.h"
#include "txc.h"
#include "vhost_user.h"
#include "virtio_hdr.h"
#include "virtio_ring.h"

#define VIRTIO_MAX_QP	     8
#define VIRTIO_MAX_POOLS     (VHOST_USER_MAX_REGIONS - 1) /* one region is the rings' */
#define VIRTIO_HDR_LEN	     12 /* VIRTIO_F_VERSION_1 is required */
#define VIRTIO_TX_SEGS	     8	/* segments of a Tx packet sent in place (an indirect table) */
#define VIRTIO_RETRY_NS	     (50 * 1000000)
#define VIRTIO_REPLY_MS	     2000 /* a backend that does not answer a request in time is dropped */
#define VIRTIO_RX_WAIT_MS    100  /* at a connect: how long Tx waits for Rx buffers to be posted */
#define VIRTIO_SEEN_NONE     UINT32_MAX /* seen: no connection's state; never a live value */
/* In a live value: the connection runs packed virtqueues (VIRTIO_F_RING_PACKED); the
 * generation is in the other bits, and seen holds only the generation. So the split
 * bursts find live != seen on a packed queue and jump to the packed ones
 * (virtio_packed.c): no cost on the split path. virtio_live_seen() is the test. */
#define VIRTIO_LIVE_PACKED   (1u << 31)

extern const struct tide_driver tide_driver_virtio;

/* The driver's open and pci_open (virtio_open.c). */
int virtio_open(struct tide_kvargs *kv, struct tide_port **ports, unsigned max);
int virtio_pci_open(struct tide_kvargs *kv, const char *bdf, struct tide_port **ports,
		    unsigned max);

struct virtio_port;

/* Where a vring lives (our addresses; the device's are the same numbers). */
struct virtio_vring_addr {
	unsigned num;
	struct vring_desc *desc;
	struct vring_avail *avail;
	struct vring_used *used;
};

/*
 * A transport: how the frontend reaches the device. Control thread only; each returns 0 or
 * -errno and logs why. The frontend's order is virtio's (section 3.1): reset, features,
 * memory, each vring, then enable (DRIVER_OK); a PCI transport fits the same calls (status
 * register, feature windows, queue_desc/avail/used registers, the notify area).
 */
struct virtio_transport {
	const char *name;
	/* The device's features; then the ones the driver takes (a subset). */
	int (*features_get)(struct virtio_port *vp, uint64_t *out);
	int (*features_set)(struct virtio_port *vp, uint64_t features);
	/* Make the port's memory (rings, pools) reachable by the device. */
	int (*mem_set)(struct virtio_port *vp);
	/* Give vring @v its size and addresses; @kickfd is what a notify writes. */
	int (*queue_set)(struct virtio_port *vp, unsigned v, const struct virtio_vring_addr *a,
			 int kickfd);
	/* Write the device status (DRIVER_OK starts the vrings). */
	int (*status_set)(struct virtio_port *vp, uint8_t status);
	/* Optional: after DRIVER_OK, before the queues go live (a PCI device's queue pairs
	 * are set through its control queue). */
	int (*driver_ok)(struct virtio_port *vp);
	/* Read @len bytes of the device's config space at @off (-ENOTSUP without one). */
	int (*config_read)(struct virtio_port *vp, unsigned off, void *buf, unsigned len);
	/* Port start (after the rings are laid out) and stop: reach the device and run
	 * virtio_dev_init(), now or from a thread of the transport's; stop leaves every queue
	 * off and the device no longer touching the port's memory. */
	int (*start)(struct virtio_port *vp);
	void (*stop)(struct virtio_port *vp);
	/* Optional: port close (what the transport's open made). */
	void (*close)(struct virtio_port *vp);
	/* Optional: the link state (NULL: up while a device runs, vp->up). */
	int (*link_get)(struct virtio_port *vp, int *up);
	/* Optional: the eventfd that signals used entries on Rx queue @qid (Rx interrupts,
	 * tide_rxq_intr_*), or -errno (-ENOTCONN while the queue's vring is not running);
	 * NULL: no Rx interrupts (-ENOTSUP). */
	int (*rx_intr_fd)(struct virtio_port *vp, unsigned qid);
	/* The device reaches any memory of the process (the kernel; a PCI device once a
	 * pool is in its IOMMU domain): Rx pools need not be shared (memfd-backed). */
	bool any_pool;
	/* The device holds what it has for Rx until buffers are posted (a tap's queue): Tx
	 * need not wait for the Rx queues at a start. */
	bool rx_held;
	/* queue_set() gives the device each Rx vring's call eventfd (vp->callfd), which
	 * rx_intr_fd returns. */
	bool rx_intr;
	/* packed=yes and the device does not offer VIRTIO_F_RING_PACKED: an error, not a
	 * fallback to split virtqueues (a transport whose start is the caller's, so that the
	 * error reaches tide_port_start()). */
	bool packed_strict;
};

extern const struct virtio_transport virtio_user_transport;
extern const struct virtio_transport virtio_kernel_transport;

/* A transport's rx_intr_fd when it has call eventfds (rx_intr): Rx queue @qid's, or
 * -ENOTCONN while the port is stopped. */
int virtio_callfd_rx(struct virtio_port *vp, unsigned qid);

/* The port's Rx interrupt operations (struct tide_driver rxq_intr_fd, rxq_intr_set):
 * -ENOTSUP without a transport rx_intr_fd. */
int virtio_rxq_intr_fd(struct tide_port *p, unsigned qid);
int virtio_rxq_intr_set(struct tide_port *p, unsigned qid, int enable);

/* The offload features to ask the device for, from what the port's queues enabled; those
 * of @f whose prerequisites @f lacks dropped; the VIRTIO_OL_* the device does in @f. */
uint64_t virtio_offload_features(const struct virtio_port *vp);
uint64_t virtio_offload_deps(uint64_t f);
uint32_t virtio_offload_dev(uint64_t f);

/* The vhost-kernel transport is chosen when @iface is given or @path is a device node: a
 * character device, or a path under /dev/ (not /dev/shm/) that is not there. */
bool virtio_kernel_wanted(const char *path, const char *iface);
/* Check its configuration at open (logged): the device node, the tap name and what a tap of
 * that name already is. 0 or -EINVAL. */
int virtio_kernel_check(const char *path, const char *iface, unsigned queues);
/* At port open: create or attach the tap (vp->iface, vp->queues), bring it up. 0 or -errno
 * (logged; nothing left behind). */
int virtio_kernel_open(struct virtio_port *vp);

/* A queue's fault: the worker's reason (NULL while sound) and the eventfd it wakes. */
struct virtio_fault_slot {
	const char *why;
	int wakefd;
};

/* The ring pointers a queue uses (written by the control thread while the queue is off). */
struct virtio_vq {
	struct vring_desc *desc;
	struct vring_avail *avail;
	struct vring_used *used;
	uint16_t num, mask;
	int kickfd;	 /* eventfd the device waits on, -1: never notify */
	volatile uint16_t *notify; /* PCI: the queue's notify register (NULL: kickfd) */
	uint16_t notify_val;	   /* what a notify writes there: the vring index */
	bool event_idx;	 /* VIRTIO_F_EVENT_IDX */
	bool in_order;	 /* VIRTIO_F_IN_ORDER */
	bool mrg;	 /* VIRTIO_NET_F_MRG_RXBUF */
	bool indirect;	 /* VIRTIO_F_INDIRECT_DESC */
	bool packed;	 /* VIRTIO_F_RING_PACKED: desc is the packed ring, avail the driver
			    event area, used the device event area (struct vring_packed_event) */
};

struct virtio_rxq {
	struct tide_rxq pub; /* first: the handle */
	struct rxr rxr;	     /* sw[] by avail position; posted = [next, refill) */
	uint32_t busy;
	bool fence;
	uint16_t last_used;  /* used entries consumed (== (uint16_t)rxr.next) */
	uint16_t avail_idx;  /* what we published (== (uint16_t)rxr.refill; packed too) */
	uint16_t headroom;   /* the pool's: the header goes just before it */
	uint32_t buf_len;    /* posted descriptor length: header + data room */
	uint16_t port_id;
	struct tide_pool *pool;
	struct virtio_vq vq;
	/* Descriptor ids: slot_desc[avail slot] is the descriptor of the buffer in sw[slot],
	 * desc_slot[descriptor] its slot (a device may use buffers out of order). */
	uint16_t *slot_desc, *desc_slot;
	/* Split ring: how many slots must still be posted with their avail entries compared
	 * (virtio_rxtx.c, rx_avail_sync()): the ring's size after a flush or a buffer used out
	 * of order, 0 in steady state. */
	uint32_t avail_check;
	struct tide_mbuf__rx_tmpl tmpl;
	uint32_t seen;
	uint64_t kicks;
	uint64_t offloads;	 /* TIDE_OFFLOAD_RX_* enabled: the burst with headers */
	struct virtio_rx_ol ol;
	uint32_t live TIDE_CACHE_ALIGNED;
	struct virtio_fault_slot fault;
};

struct virtio_txq {
	struct tide_txq pub;
	struct txc txc; /* slot == descriptor id == avail position & mask */
	uint32_t busy;
	bool fence;
	uint16_t last_used; /* used entries consumed (packed: the next used ring position) */
	struct virtio_vq vq;
	uint8_t *done;	    /* per slot: the device used it (out-of-order completion) */
	struct vring_desc *ind; /* per slot: an indirect table of VIRTIO_TX_SEGS (shared area) */
	/* Pools the device can reach (the memory table) and one to copy into for the rest. */
	unsigned npools;
	struct tide_pool *pools[VIRTIO_MAX_POOLS];
	struct tide_pool *bounce;
	uint32_t seen;
	uint64_t kicks, bounced;
	uint32_t claim_off; /* completion claims the line at this offset in an mbuf (where
			       a packet starts), or 0: no claiming (virtio_tx_claim()) */
	uint64_t offloads; /* TIDE_OFFLOAD_TX_* enabled: the burst with headers */
	struct virtio_tx_ol ol;
	uint32_t live TIDE_CACHE_ALIGNED;
	struct virtio_fault_slot fault;
};

struct virtio_pci;

struct virtio_port {
	/* First: the PCI transport's device (pci_bus.c reads it), NULL under vhost-user. */
	struct pci_dev *pci;
	struct virtio_pci *vpci;
	/* Configuration (spec). */
	char path[108];
	char iface[16];	      /* vhost-kernel: the tap (IFNAMSIZ) */
	bool server;
	unsigned queues;
	unsigned queue_size; /* 0: each queue's nb_desc */
	bool mrg, event_idx, in_order;
	bool packed; /* ask for VIRTIO_F_RING_PACKED */
	struct tide_port *port;
	const struct virtio_transport *tr;

	/* Set at start (control thread while stopped). */
	struct tide_mem rings; /* every vring of the port, shared */
	unsigned npools;
	struct tide_pool *pools[VIRTIO_MAX_POOLS];
	struct virtio_vring_addr va[2 * VIRTIO_MAX_QP];
	int kickfd[2 * VIRTIO_MAX_QP];
	int callfd[2 * VIRTIO_MAX_QP]; /* Rx vrings, with tr->rx_intr; else -1 */
	bool fence;

	/* The control thread's. */
	pthread_t thread;
	bool thread_on;
	uint32_t quit;
	int wakefd;
	int lfd, cfd;
	uint32_t gen;
	uint64_t features, proto;
	bool proto_on; /* VHOST_USER_F_PROTOCOL_FEATURES negotiated */
	uint64_t retry_at;
	bool mtu_given; /* tide_port_mtu_set() was called: state the MTU to the backend */
	struct virtio_kernel *vk; /* vhost-kernel: the fds, from start to stop */

	/* Read by other threads (relaxed). */
	int up;
	uint64_t connects, disconnects, faults, ctl_errors;
};

static inline struct virtio_port *virtio_vport(const struct tide_port *p)
{
	return p->priv;
}

/* SET_VRING_BASE's value for a vring of a new connection: index 0; packed rings add the
 * wrap counter (1) in bit 15. */
static inline uint32_t virtio_vring_base(const struct virtio_port *vp)
{
	return vp->features & VIRTIO_BIT(VIRTIO_F_RING_PACKED) ? VRING_PACKED_WRAP : 0;
}

/* Does the queue run on connection @live, with @seen its worker's generation? */
static inline bool virtio_live_seen(uint32_t live, uint32_t seen)
{
	return (live & ~VIRTIO_LIVE_PACKED) == seen;
}

/* ---- data path (virtio_rxtx.c) ---- */
/* The burst for the queue: with the header helpers (virtio_hdr.h) when it enabled
 * offloads, else the one that writes zero headers and ignores the received ones. */
tide_rx_burst_fn virtio_rx_fn(const struct virtio_rxq *q);
tide_tx_burst_fn virtio_tx_fn(const struct virtio_txq *q);
unsigned virtio_tx_advance_ool(struct txc *t);
void virtio_rx_post_ool(struct rxr *r, uint32_t first, unsigned n, bool doorbell);
/* The queue's buffers go home (port stop; the worker's resync). Both layouts. */
void virtio_rxq_flush(struct virtio_rxq *q);
void virtio_txq_flush(struct virtio_txq *q);

/* ---- packed virtqueues (virtio_packed.c) ---- */
/* The bursts, entered from the split ones with the queue busy and @live its live value
 * (VIRTIO_LIVE_PACKED set); they leave the queue. */
uint16_t virtio_packed_rx(struct virtio_rxq *q, struct tide_mbuf **pkts, uint16_t n,
			  uint32_t live);
uint16_t virtio_packed_tx(struct virtio_txq *q, struct tide_mbuf **pkts, uint16_t n,
			  uint32_t live);
/* ... and the instances with offloads (virtio_hdr.h), entered from the split ones'. */
uint16_t virtio_packed_rx_ol(struct virtio_rxq *q, struct tide_mbuf **pkts, uint16_t n,
			     uint32_t live);
uint16_t virtio_packed_tx_ol(struct virtio_txq *q, struct tide_mbuf **pkts, uint16_t n,
			     uint32_t live);
/* tide_recycle()'s post and the out-of-line completion check, on a running packed queue. */
void virtio_packed_rx_post(struct virtio_rxq *q, uint32_t first, unsigned n, bool doorbell);
unsigned virtio_packed_tx_advance(struct txc *t);
/* Rx interrupts on or off: the driver event area (the queue's thread, while it runs). */
void virtio_packed_rx_intr(struct virtio_rxq *q, bool enable);

/* ---- control plane (virtio_user.c) ---- */
int virtio_ctl_start(struct virtio_port *vp);
void virtio_ctl_stop(struct virtio_port *vp);

/* ---- the generic frontend (virtio.c), called by the control plane ---- */
/* Bring the device up over the transport: features, memory, vrings, DRIVER_OK; then the
 * queues go live. Returns 0 or -errno (the caller drops the connection). */
int virtio_dev_init(struct virtio_port *vp);
/* Take every queue off its vring and wait until no burst uses it. */
void virtio_queues_off(struct virtio_port *vp);

/* A worker found the device breaking a rule: record it and wake the control thread. */
static inline void virtio_fault(struct virtio_fault_slot *s, uint64_t *errors, const char *why)
{
	bool first = __atomic_load_n(&s->why, __ATOMIC_RELAXED) == NULL;
	uint64_t one = 1;

	quiesce_fault(&s->why, errors, why);
	if (first && s->wakefd >= 0 && write(s->wakefd, &one, sizeof(one)) < 0) {
		/* a full eventfd counter is readable already */
	}
}

#endif
