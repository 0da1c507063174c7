/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * AF_XDP driver internals. One AF_XDP socket per queue index k (device queue queue + k),
 * carrying Rx queue k and Tx queue k; the port's sockets share one UMEM registered over the
 * Rx pool's memory area (tide/afxdp.h has the frame layout).
 *
 * Ring ownership (libxdp rings: cached copies of the kernel's index, reserve/submit,
 * peek/release):
 *   fill  user produces frames for Rx    - written by the Rx burst (its refill also moves
 *                                           a paired Tx queue's completed frames here)
 *   rx    kernel produces received frames - read by the Rx burst
 *   tx    user produces frames to send    - written by the Tx burst
 *   comp  kernel produces sent frames     - read by Tx completion
 *
 * Frame ownership: `owner[frame]` is 1 while the kernel may hold the frame (posted to fill
 * or tx and not yet seen on rx or comp), else 0. The kernel keeps frames it took from the
 * fill ring out of sight; after the sockets close, stop gives every frame still marked back
 * to the pool, so a stopped port holds nothing. One byte store per frame per transition.
 */
#ifndef TIDE_DRIVERS_AFXDP_H
#define TIDE_DRIVERS_AFXDP_H

#include <net/if.h>
#include <stdbool.h>
#include <xdp/xsk.h>

#include <tide/afxdp.h>
#include <tide/port.h>

#include "inline.h"
#include "driver.h"
#include "link.h"
#include "txc.h"

#define AFXDP_MAX_QUEUES 16
#define AFXDP_XDP_HEADROOM 256 /* XDP_PACKET_HEADROOM: where the kernel puts Rx data */
#define AFXDP_MBUF_HDR 64

enum afxdp_mode { AFXDP_MODE_AUTO, AFXDP_MODE_NATIVE, AFXDP_MODE_GENERIC };
enum afxdp_zc { AFXDP_ZC_AUTO, AFXDP_ZC_YES, AFXDP_ZC_NO };

/* What Rx descriptors and Tx completions need to turn an address into an mbuf. */
struct afxdp_umem_view {
	uint8_t *base;        /* area start = pool element 0 */
	uint8_t *owner;       /* one byte per frame, see above */
	struct tide_pool *pool;
	uint64_t frame_mask;  /* ~(frame - 1) */
	uint32_t frame_shift;
};

struct afxdp_port;

/* Busy polling of an Rx queue. A socket has nothing to busy-poll until it has a NAPI id,
 * which a copy-mode socket learns from the first frame it receives: until then an empty
 * poll's recvfrom would be a syscall that does nothing (an Rx queue that never receives,
 * such as the return direction of a one-way forwarder, would pay one per poll). */
enum {
	AFXDP_BUSY_OFF,   /* busy_poll=0, refused by the kernel, or generic XDP (no NAPI) */
	AFXDP_BUSY_ARMED, /* on, waiting for the first frame */
	AFXDP_BUSY_ON,    /* every empty poll calls recvfrom, which runs the device's NAPI */
};

struct afxdp_rxq {
	struct tide_rxq pub; /* first */
	struct xsk_ring_cons rx;
	struct xsk_ring_prod fill;
	struct afxdp_umem_view u;
	uint32_t batch;       /* fill in bulk of this many frames */
	uint16_t buf_len;     /* mbuf buf_len of the pool */
	uint16_t port_id;
	int fd;
	bool wakeup;          /* need_wakeup: kick only when the fill ring asks */
	uint8_t busy;         /* AFXDP_BUSY_*: whether an empty poll drives the device */
	unsigned nb_desc;
	struct tide_mbuf__rx_tmpl tmpl; /* a received mbuf's second half (pkt_len..) */
	/* Frames the kernel may hold for this queue at most: its descriptors (the pool budget
	 * an application gives an Rx queue; the fill ring is twice as deep, so it always has
	 * room). Held = fill.cached_prod - rx.cached_cons (posted, not yet received). */
	uint32_t hold_max;
	struct tide_pool *pool;
	struct afxdp_port *ap;
	/* The recycle link (src/link.h, by address): the Tx queue whose completed frames
	 * refill this fill ring first. */
	struct link_rx link;
} TIDE_CACHE_ALIGNED;

struct afxdp_txq {
	struct tide_txq pub; /* first */
	struct xsk_ring_prod tx;
	struct xsk_ring_cons comp;
	struct afxdp_umem_view u;
	uint32_t copy_off;    /* data offset of a copied packet in its frame */
	uint32_t copy_room;   /* longest packet a frame holds */
	int fd;
	bool wakeup;
	uint32_t kick_max;    /* kicks per burst at most (copy mode sends 32 frames per kick) */
	/* Kicks taken; refused (no frame moved: the frames wait for a later kick); failed. */
	uint64_t kicks, kick_refused, kick_errors, copies;
	unsigned nb_desc;
	struct afxdp_port *ap;
	struct txc txc;
} TIDE_CACHE_ALIGNED;

/* Per queue index: the socket and the rings it needs when only one direction is set up. */
struct afxdp_sock {
	struct xsk_socket *xsk;
	struct xsk_ring_prod fill_spare;
	struct xsk_ring_cons comp_spare;
};

/* The counters of struct xdp_statistics, in the order afxdp_xstats() names them. */
enum {
	AFXDP_XS_RX_DROPPED,
	AFXDP_XS_RX_INVALID,
	AFXDP_XS_TX_INVALID,
	AFXDP_XS_RX_RING_FULL,
	AFXDP_XS_FILL_RING_EMPTY,
	AFXDP_XS_TX_RING_EMPTY,
	AFXDP_XS_N
};

struct afxdp_port {
	struct tide_port *port;
	char dev[IF_NAMESIZE];
	int ifindex;
	unsigned queue, nq;
	unsigned nb_rxq, nb_txq;
	enum afxdp_mode mode;
	enum afxdp_zc zc;
	bool need_wakeup, txc_walk;
	unsigned frame;        /* 0: the pool's */
	unsigned busy_poll;    /* SO_BUSY_POLL microseconds; 0: no busy polling */
	unsigned busy_budget;  /* SO_BUSY_POLL_BUDGET */
	bool busy_explicit;    /* busy_poll= given in the spec: a refusal is a warning */
	bool busy_on;          /* what the sockets got (the kernel may refuse) */
	char prog_path[256];   /* empty: the embedded program */

	/* Running state (between start and stop). */
	struct tide_pool *pool;      /* the UMEM's pool */
	struct tide_pool *own_pool;  /* made for a port without Rx queues */
	uint8_t *owner;
	struct xsk_umem *umem;
	struct afxdp_sock sk[AFXDP_MAX_QUEUES];
	void *bpf_obj;               /* struct bpf_object */
	int link_fd, xsks_map_fd;
	bool zero_copy;              /* what the sockets got */
	const char *attached_mode;
	/* The kernel's XDP_STATISTICS of the sockets (AFXDP_XS_* order), summed over the Rx
	 * queues: what sockets deleted at stop had counted, and the live values at the last
	 * stats reset. Control thread. */
	uint64_t xs_saved[AFXDP_XS_N], xs_base[AFXDP_XS_N];
	/* Link events (afxdp_link.c): the NETLINK_ROUTE socket, and the state last seen. */
	int nl_fd;
	int nl_up;
};

extern const struct tide_driver tide_driver_afxdp;

/* afxdp_xdp.c: the XDP program. Both log why they fail. */
int afxdp_prog_attach(struct afxdp_port *ap);
void afxdp_prog_detach(struct afxdp_port *ap);
/* Route libbpf/libxdp messages to tide's log while tide calls them; returns a token. */
void afxdp_lib_log_begin(void);
void afxdp_lib_log_end(void);

/* afxdp_link.c: the interface. ioctl @req on @dev: 0 or -errno. */
int afxdp_dev_ioctl(const char *dev, unsigned long req, struct ifreq *ifr);
/* Rx queues of the device (ethtool channels), or -errno when the driver does not say. */
int afxdp_dev_queues(const char *dev);
int afxdp_link_get(struct tide_port *p, struct tide_link *out);
/* Open the port's link event socket (logs why it fails) / close it. */
int afxdp_nl_open(struct afxdp_port *ap);
void afxdp_nl_close(struct afxdp_port *ap);
/* Read the link event socket: fire the port's link event on each up/down change. */
int afxdp_poll_ctl(struct tide_port *p);
int afxdp_mtu_get(const struct tide_port *p, unsigned *mtu);
int afxdp_mtu_set(struct tide_port *p, unsigned mtu);

/* afxdp_stats.c: the sockets' XDP_STATISTICS, summed over the open sockets (AFXDP_XS_*
 * order); kept at stop (afxdp_xs_save) so counts span stop/start. */
void afxdp_xs_live(const struct afxdp_port *ap, uint64_t out[AFXDP_XS_N]);
void afxdp_xs_save(struct afxdp_port *ap);
void afxdp_stats_add(const struct tide_port *p, struct tide_port_stats *st);
void afxdp_stats_reset(struct tide_port *p);
unsigned afxdp_xstats(struct tide_port *p, const char **xnames, uint64_t *values, unsigned max);

/* afxdp_rxtx.c: burst functions and the out-of-line completion check. */
uint16_t afxdp_rx_burst(struct tide_rxq *q, struct tide_mbuf **pkts, uint16_t n);
uint16_t afxdp_tx_burst(struct tide_txq *q, struct tide_mbuf **pkts, uint16_t n);
unsigned afxdp_tx_advance(struct txc *t);
/* The recycle link's by-address hook: move completed frames of Tx queue @q straight into
 * @rq's fill ring (the calling thread owns both: txc_link_src). */
void afxdp_tx_reap(struct afxdp_txq *q, struct afxdp_rxq *rq);
/* Post every whole batch of frames the fill ring has room for. */
void afxdp_rx_refill(struct afxdp_rxq *q);
/* Write the template @r into @m's second half with the Rx length @len and data offset
 * @data_off put in: two 16-byte stores (tide/mbuf.h). */
TIDE_ALWAYS_INLINE void
afxdp_mbuf_rx(struct tide_mbuf *m, struct tide_mbuf__rx_regs r, uint32_t len, uint16_t data_off)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	typedef uint16_t v8u16 __attribute__((vector_size(16)));
	v8u16 lo = (v8u16)r.lo;

	lo[0] = (uint16_t)len; /* pkt_len (a frame is at most 4096 bytes: upper half 0) */
	lo[2] = (uint16_t)len; /* data_len */
	lo[3] = data_off;
	r.lo = (tide_mbuf__v16)lo;
	tide_mbuf__rx_tmpl_write(m, r);
#else
	tide_mbuf__rx_tmpl_write(m, r);
	m->pkt_len = len;
	m->data_len = (uint16_t)len;
	m->data_off = data_off;
#endif
}

/* Frames the kernel may hold for @q beyond what it holds now (posted, not yet received). */
static inline uint32_t afxdp_rx_room(const struct afxdp_rxq *q)
{
	return q->hold_max - (q->fill.cached_prod - q->rx.cached_cons);
}

#endif
