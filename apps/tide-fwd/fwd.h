/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fwd.h - the forwarding core of tide-fwd: configuration, engines, lcores and the Tx buffers.
 *
 * Shape. Every forwarding lcore polls a list of streams (an Rx port/queue pair). For each
 * received burst the engine decides an egress port per packet and queues the packet in the
 * lcore's Tx buffer for that port (fwd_tx_add); after the burst the loop sends every non-empty
 * buffer with one tide_tx_burst() on the lcore's own Tx queue of that port (Tx queue index =
 * lcore index) and frees what the queue refused, counting it as a tx_full drop (no_txq when
 * the port has no Tx at all: a pcap port with rx= only).
 *
 * Threads. A struct fwd_lcore belongs to its lcore: only that thread writes its counters
 * (fwd_stat_add, relaxed stores); the main thread reads them with relaxed loads for the live
 * statistics. Everything else in struct fwd_ctx is written before the lcores start and only
 * read while they run.
 *
 * Public tide API only: this core is linked by the tide-fwd executable and its tests.
 */
#ifndef TIDE_FWD_FWD_H
#define TIDE_FWD_FWD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <tide/lcore.h>
#include <tide/mbuf.h>
#include <tide/offload.h>
#include <tide/pool.h>
#include <tide/port.h>

#define FWD_MAX_LCORES	TIDE_MAX_QUEUES /* one Tx queue per lcore on every port */
#define FWD_MAX_SPECS	TIDE_MAX_PORTS
#define FWD_MAX_STREAMS (TIDE_MAX_PORTS * TIDE_MAX_QUEUES)
#define FWD_BURST_MAX	512
#define FWD_BURST_DEF	32
#define FWD_DESC_DEF	1024
#define FWD_TXONLY_MIN	42 /* Ethernet + IPv4 + UDP headers */
#define FWD_TXONLY_DEF	64
#define FWD_FLOWS_DEF	1024
#define FWD_MBUF_MIN	64    /* --mbuf-size */
#define FWD_MBUF_MAX	65280 /* the mbuf, headroom and data room fit a 16-bit length */

/* Why a packet was not forwarded. Names in fwd_drop_name(). */
enum fwd_drop {
	FWD_DROP_NOT_IPV4 = 0, /* EtherType is not IPv4 */
	FWD_DROP_BAD_HEADER,   /* too short, version != 4, bad IHL or total length */
	FWD_DROP_BAD_CHECKSUM, /* IPv4 header checksum wrong */
	FWD_DROP_TTL_EXPIRED,  /* TTL <= 1 */
	FWD_DROP_NO_ROUTE,     /* no route for the destination */
	FWD_DROP_SAME_PORT,    /* routed back to the ingress port */
	FWD_DROP_TX_FULL,      /* the Tx queue refused it */
	FWD_DROP_NO_TXQ,       /* the egress port cannot send (a pcap port without tx=) */
	FWD_DROP_OFFLOAD,      /* an offload the egress port lacks, refused in software */
	FWD_DROP_NR,
};

const char *fwd_drop_name(enum fwd_drop d);

/* One entry of --map: lcore (its position in --lcores) polls Rx queue @queue of @port. */
struct fwd_map_entry {
	unsigned lcore;
	unsigned port;
	unsigned queue;
};

/* Everything the command line sets. fwd_config_init() fills the defaults. */
struct fwd_config {
	const char *specs[FWD_MAX_SPECS];
	unsigned nspecs;
	int cpus[FWD_MAX_LCORES]; /* --lcores: CPU of each forwarding lcore; -1 = not pinned */
	unsigned nlcores;
	struct fwd_map_entry map[FWD_MAX_STREAMS];
	unsigned nmap;	 /* 0: spread the Rx queues over the lcores */
	bool lcores_given; /* --lcores seen; otherwise cpus[0] is the first CPU allowed */
	unsigned nb_rxq; /* Rx queues per port; 0: min(lcores, the port's maximum) */
	const char *engine;
	unsigned burst, rxd, txd; /* rxd/txd 0: FWD_DESC_DEF or deeper if a driver prefers */
	unsigned pool_n; /* 0: sized to fit every ring, cache and burst */
	unsigned cache;
	unsigned mbuf_size; /* data room of the packet buffers; 0: the library's default */
	unsigned mtu;       /* --mtu: set on every port; 0: each port's own */
	struct tide_txq_conf txconf;
	const char *routes; /* l3fwd route file; NULL: routes_default() */
	unsigned txonly_size, flows;
	double rate_pps;     /* txonly: packets per second per port; 0: as fast as possible */
	double duration;     /* seconds; 0: until a signal or --packets */
	uint64_t packets;    /* stop after this many packets (Rx, or Tx for txonly); 0: no limit */
	double stats_period; /* seconds; 0: no live statistics */
	const char *json;    /* --json FILE (opened before the run: see main.c) */
	const char *telemetry; /* --telemetry PATH: serve tide/telemetry.h on it */
	const char *prom;    /* --prom FILE: Prometheus textfile, rewritten every period */
	bool xstats;         /* --xstats: print every port's extended statistics at the end */
	bool quiet;
	bool rx_intr; /* --rx-mode interrupt: sleep on the Rx interrupt fds when idle */
	bool offloads; /* --offloads on (default): enable what the ports offer (fwd_ol.c) */
};

void fwd_config_init(struct fwd_config *cfg);

/* --rx-mode interrupt (fwd_intr.c): sleep until a stream of @lc has packets, or 10 ms. */
#define FWD_IDLE_ROUNDS 1024 /* empty rounds before an lcore sleeps */
struct fwd_lcore;
struct tide_mbuf;
void fwd_rx_sleep(struct fwd_lcore *lc, struct tide_mbuf **pkts);

struct fwd_ctx;
struct fwd_lcore;

struct fwd_stream {
	uint16_t port;
	uint16_t queue;
	struct tide_rxq *rxq;
};

/*
 * Per-port counters of one lcore, for what the ports do not count themselves (packets and
 * bytes are the ports' own statistics): cycles, and drops by reason (engine drops on the
 * ingress port, tx_full on the egress port).
 */
struct fwd_ctr {
	uint64_t cycles; /* TSC cycles spent polling and processing this port's streams */
	uint64_t idle_cycles; /* of those, in polls that moved no packet (idle_time_pct) */
	/* The active window: from the first poll that moved packets to the last one so far.
	 * The wait before a peer connects and after it stops is left out; an idle poll inside
	 * the window is counted once a later poll moves packets (struct fwd_pend). */
	uint64_t active_cycles, active_idle_cycles; /* (active_idle_time_pct) */
	uint64_t active_polls, active_idle_polls;   /* (active_idle_poll_pct) */
	uint64_t drops[FWD_DROP_NR];
	uint64_t sw_cksum; /* egress: packets whose checksums were filled in software */
	uint64_t sw_gso;   /* egress: packets segmented in software (TSO) */
};

/* Idle polls after a port's last moving poll, not yet in its active window (lcore-private). */
struct fwd_pend {
	uint64_t cycles, polls;
};

/* txonly --rate: a token bucket per stream, in packets (TSC time). */
struct fwd_pace {
	uint64_t last;
	double credit;
};

struct fwd_txbuf {
	uint16_t n;
	struct tide_mbuf **pkts; /* room for FWD_BURST_MAX */
};

struct fwd_lcore {
	struct fwd_ctx *ctx;
	unsigned idx; /* position in --lcores = Tx queue index on every port */
	int cpu;
	struct fwd_stream streams[FWD_MAX_STREAMS];
	unsigned nstreams;
	struct tide_txq *txq[TIDE_MAX_PORTS];
	struct fwd_txbuf txb[TIDE_MAX_PORTS];
	uint16_t dirty[TIDE_MAX_PORTS]; /* ports with a non-empty Tx buffer */
	unsigned ndirty;
	uint64_t seq; /* txonly: packets built so far */
	uint64_t sent; /* packets its Tx bursts placed: a txonly poll that adds none sent none */
	unsigned flow; /* txonly: seq modulo --flows, the flow of the next packet */
	struct fwd_pace pace[FWD_MAX_STREAMS]; /* txonly --rate, by stream index */
	struct fwd_ctr ctr[TIDE_MAX_PORTS];
	struct fwd_pend pend[TIDE_MAX_PORTS];
	struct tide_lcore *thread;
	bool launched;
};

/*
 * A forwarding engine. @init (optional) runs once at setup, before the ports start, and may
 * store shared read-only state in ctx->engine_data; it returns 0 or -errno with a message in
 * @err. @fini (optional) undoes it. @burst handles @n packets received on stream @s: each
 * packet is either queued with fwd_tx_add() or dropped with fwd_drop(); it must not keep any.
 * Engines with FWD_ENGINE_F_NO_RX are not given received packets: @burst is called with @n
 * the most it may build and send (1..burst; pkts is scratch room for FWD_BURST_MAX pointers).
 */
struct fwd_engine {
	const char *name;
	const char *help;
	unsigned flags;
	int (*init)(struct fwd_ctx *ctx, char *err, size_t errlen);
	void (*fini)(struct fwd_ctx *ctx);
	void (*burst)(struct fwd_lcore *lc, const struct fwd_stream *s, struct tide_mbuf **pkts,
		      uint16_t n);
};

#define FWD_ENGINE_F_NO_RX 0x1u

/* The engine table (NULL-terminated) and a lookup by name (NULL when unknown). */
extern const struct fwd_engine *const fwd_engines[];
const struct fwd_engine *fwd_engine_find(const char *name);

extern const struct fwd_engine fwd_engine_io;
extern const struct fwd_engine fwd_engine_mac;
extern const struct fwd_engine fwd_engine_macswap;
extern const struct fwd_engine fwd_engine_l3fwd;
extern const struct fwd_engine fwd_engine_txonly;
extern const struct fwd_engine fwd_engine_rxonly;

struct fwd_ctx {
	const struct fwd_config *cfg;
	const struct fwd_engine *engine;
	void *engine_data;
	struct tide_port *ports[TIDE_MAX_PORTS];
	struct tide_port_info info[TIDE_MAX_PORTS];
	unsigned nports;
	unsigned nb_rxq[TIDE_MAX_PORTS];
	unsigned rxd, txd;		/* descriptors per queue: --rxd/--txd or the default */
	unsigned nb_txq;		/* Tx queues of every port that can send: one per lcore */
	unsigned port_txq[TIDE_MAX_PORTS]; /* nb_txq, or 0 for a port without Tx */
	uint16_t pair[TIDE_MAX_PORTS];		/* io/mac/macswap egress: 0<->1, 2<->3, ... */
	uint8_t nexthop_mac[TIDE_MAX_PORTS][6]; /* l3fwd/mac: 02:00:00:00:01:<port> */
	/* Offloads (fwd_ol.c): what each port's queues enabled; sw_ol: some Rx queue enabled
	 * offloads, so packets may carry Tx requests the egress does not do. */
	uint64_t rx_ol[TIDE_MAX_PORTS], tx_ol[TIDE_MAX_PORTS];
	bool sw_ol;
	struct tide_pool *pool;
	unsigned pool_n;
	struct fwd_lcore *lcores;
	unsigned nlcores;
	bool ports_started;
	int stop; /* set by fwd_stop(); lcores read it with relaxed loads */
	/* --packets: what the lcores may still receive (txonly: build), shared by all of
	 * them so that the run stops at exactly that count; each burst takes its size and
	 * gives back what it did not use. */
	int64_t budget;
	int64_t budget_done; /* --packets: handled (received; txonly: sent) so far */
	double t_launch;  /* fwd_now() just before fwd_start() launched the lcores */
	double t_stopped; /* fwd_now() once fwd_stop() had joined them, before port stop */
	bool engine_ready;
};

/*
 * Build everything @cfg describes: open the ports, check the lcore/queue mapping, create
 * the pool, set up every queue, initialise the engine. Nothing runs yet, so a caller (a
 * test) may still attach simnic hooks to ctx->ports. Returns 0; -EINVAL for a configuration
 * error (message in @err: the command line should exit 2), another -errno for a runtime
 * failure. On error everything already built is undone (fwd_teardown is still safe).
 */
int fwd_setup(struct fwd_ctx *ctx, const struct fwd_config *cfg, char *err, size_t errlen);

/* Start the ports and launch one thread per lcore. Returns 0 or -errno (message in @err). */
int fwd_start(struct fwd_ctx *ctx, char *err, size_t errlen);

/*
 * Stop: tell the lcores, join them, stop the ports (every buffer goes back to the pool).
 * Safe to call twice or after a failed start.
 */
void fwd_stop(struct fwd_ctx *ctx);

/* Close the ports, free the pool and the engine state. Safe after a failed setup. */
void fwd_teardown(struct fwd_ctx *ctx);

/* The lcore main loop (the function given to tide_lcore_launch). */
int fwd_lcore_main(void *arg);

/* Send every non-empty Tx buffer of @lc; refused packets are freed and counted. */
void fwd_tx_flush(struct fwd_lcore *lc);

/* A round of @lc that received nothing: each of its Tx queues completes what it sent
 * (tide_txq_done_cleanup()), so that frames a device left queued (AF_XDP: a refused kick)
 * go out and finished buffers come back without waiting for the next burst. */
void fwd_idle(struct fwd_lcore *lc);

/*
 * The same when packets may carry Tx requests (ctx->sw_ol, fwd_ol.c): a packet asking for a
 * checksum or a segmentation its egress queue did not enable gets it in software first
 * (segments from the packet's own pool), counted in sw_cksum / sw_gso; one the software
 * refuses is dropped (FWD_DROP_OFFLOAD).
 */
void fwd_tx_flush_ol(struct fwd_lcore *lc);


/* The Rx and Tx offloads to enable on port @p's queues: what it offers and forwarding uses. */
uint64_t fwd_rx_offloads(const struct fwd_ctx *ctx, unsigned p);
uint64_t fwd_tx_offloads(const struct fwd_ctx *ctx, unsigned p);

/* Queue @m for transmission on @port (sent by the next fwd_tx_flush). */
static inline void fwd_tx_add(struct fwd_lcore *lc, uint16_t port, struct tide_mbuf *m)
{
	struct fwd_txbuf *b = &lc->txb[port];

	if (b->n == 0)
		lc->dirty[lc->ndirty++] = port;
	b->pkts[b->n++] = m;
}

/* fwd_tx_add() of @n packets, all to @port, in order. */
static inline void fwd_tx_add_bulk(struct fwd_lcore *lc, uint16_t port, struct tide_mbuf **m,
				   uint16_t n)
{
	struct fwd_txbuf *b = &lc->txb[port];

	if (n == 0)
		return;
	if (b->n == 0)
		lc->dirty[lc->ndirty++] = port;
	memcpy(b->pkts + b->n, m, n * sizeof(*m));
	b->n = (uint16_t)(b->n + n);
}

/* Add to a counter only the calling lcore writes (relaxed: the main thread reads it live). */
static inline void fwd_stat_add(uint64_t *c, uint64_t v)
{
	__atomic_store_n(c, *c + v, __ATOMIC_RELAXED);
}

/*
 * Account one poll of a stream of port counters @c that took @dt TSC cycles and moved
 * packets or not (@idle). The active window grows only when packets move: the idle polls
 * since the last moving one (@pd) join it then, and those before the first moving poll
 * never do.
 */
static inline void fwd_ctr_poll(struct fwd_ctr *c, struct fwd_pend *pd, uint64_t dt, bool idle)
{
	fwd_stat_add(&c->cycles, dt);
	if (idle) {
		fwd_stat_add(&c->idle_cycles, dt);
		if (c->active_polls != 0) {
			pd->cycles += dt;
			pd->polls++;
		}
		return;
	}
	fwd_stat_add(&c->active_cycles, pd->cycles + dt);
	fwd_stat_add(&c->active_idle_cycles, pd->cycles);
	fwd_stat_add(&c->active_polls, pd->polls + 1);
	fwd_stat_add(&c->active_idle_polls, pd->polls);
	pd->cycles = 0;
	pd->polls = 0;
}

/* Count @m as dropped for @reason on ingress port @port and free it. */
static inline void fwd_drop(struct fwd_lcore *lc, uint16_t port, enum fwd_drop reason,
			    struct tide_mbuf *m)
{
	fwd_stat_add(&lc->ctr[port].drops[reason], 1);
	tide_mbuf_free(m);
}

/* TSC (or nanoseconds where there is no TSC) and its rate, calibrated once. */
uint64_t fwd_tsc(void);
double fwd_tsc_hz(void);

/* The summary's memif lines (fwd_memif.c): connections and the last reason per port. */
void fwd_memif_print(const struct fwd_ctx *ctx); /* on stdout */

#endif
