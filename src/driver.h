/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The driver contract. A driver is one `struct tide_driver` listed in the driver table
 * (src/drivers.c, generated list from Meson); there is no constructor self-registration.
 *
 * Division of work:
 *  - port.c checks the life cycle (states, queue ids, descriptor ranges, Tx engine knobs)
 *    before calling the driver, so drivers see only valid requests;
 *  - the driver allocates its queues with the public queue handle as the first member, sets
 *    the handle's `burst` in start() and owns its descriptor format;
 *  - Tx ring bookkeeping goes through the engine (txc.h), Rx buffer refill through rxr.h.
 *
 * Every callback returns 0 or -errno and leaves things as they were on error, except where
 * noted. Callbacks run on the control thread. Other threads may be calling bursts on any
 * port meanwhile (tide/port.h): before stop() and before a queue release, port.c has made
 * the port's bursts no-ops and run a grace period (qs.h), so no burst of this port is
 * running; other ports' bursts are, and a driver whose device side runs inside them
 * (simnic inline: a Tx step storing into another port's Rx queue) runs a grace period of
 * its own before it reuses what they might touch.
 *
 * The rule every data-path entry keeps, so that the above holds: it is a quiescent point
 * (the burst calls: tide_qs_tick_() before the burst function is loaded), or it runs
 * between two of them on the polling thread and checks a word that the control thread
 * changes before its grace period: a queue's `call` (the no-op when stopped), a Tx
 * engine's owner (txc_own(): STOPPED from before stop's grace period until the next start,
 * and never taken from there), or a driver's live word (quiesce.h). A new public entry
 * that touches queue state does the same; a check of port->started is not enough (it
 * changes only after stop() returns). A driver's own path from a burst into an engine
 * goes through txc_own() or txc_link_src().
 */
#ifndef TIDE_SRC_DRIVER_H
#define TIDE_SRC_DRIVER_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include <tide/port.h>

#include "kvargs.h"
#include "sized.h"
#include "stat.h"

/* A vendor/device ID pair a PCI driver claims. */
struct tide_pci_id {
	uint16_t vendor, device;
};

/*
 * The tail of a driver's .keys for its benchmark-only keys: listed only in a build with them
 * (meson option bench_variants, read with tide_kvargs_bench()). tests/test_docs.py reads it.
 */
#if TIDE_BENCH_VARIANTS
#define TIDE_BENCH_KEYS(list) ", " list
#else
#define TIDE_BENCH_KEYS(list) ""
#endif

struct tide_driver {
	const char *name;
	const char *keys; /* one-line list of spec keys, for error messages */

	/*
	 * Create the ports a spec describes (tide_port_alloc for each), fill their info
	 * (limits, max_rs_gap, MAC). Every key the driver reads is marked used; port.c rejects
	 * leftover keys afterwards (and then closes what was opened). Returns the number of
	 * ports or -errno.
	 */
	int (*open)(struct tide_kvargs *kv, struct tide_port **ports, unsigned max);

	/* Optional: react to a new queue count (checked against the info limits). */
	int (*configure)(struct tide_port *p, unsigned nb_rxq, unsigned nb_txq);

	/* Allocate queue @qid. @conf is complete and checked. The queue starts stopped. */
	int (*rxq_setup)(struct tide_port *p, unsigned qid, unsigned nb_desc, struct tide_pool *pool,
			 const struct tide_rxq_conf *conf, struct tide_rxq **out);
	int (*txq_setup)(struct tide_port *p, unsigned qid, unsigned nb_desc,
			 const struct tide_txq_conf *conf, struct tide_txq **out);

	/* Free a stopped queue that holds no buffers. */
	void (*rxq_release)(struct tide_rxq *q);
	void (*txq_release)(struct tide_txq *q);

	/* Post Rx buffers, enable the device, set every queue's burst function. */
	int (*start)(struct tide_port *p);

	/*
	 * Quiesce the device and give back every buffer the port holds (posted Rx buffers,
	 * Tx buffers in flight). port.c has already set the bursts to no-ops, marked the Tx
	 * engines STOPPED and run a grace period: the engines are the driver's alone until
	 * the next start. Cannot fail.
	 */
	void (*stop)(struct tide_port *p);

	/* Free the port's private state (queues are already released). */
	void (*close)(struct tide_port *p);

	/*
	 * Optional MTU hooks. mtu_get: the MTU now, for a driver where someone else may change
	 * it (the interface of afxdp, the frontend of vhost); else port.c answers info.mtu.
	 * mtu_set: @mtu is within the info limits and differs from the MTU now; on 0 port.c
	 * stores it in info.mtu. Without mtu_set the MTU cannot change (-ENOTSUP). A driver
	 * that can change it only while stopped sets mtu_stopped_only.
	 */
	int (*mtu_get)(const struct tide_port *p, unsigned *mtu);
	int (*mtu_set)(struct tide_port *p, unsigned mtu);
	bool mtu_stopped_only;

	/* Optional. */
	int (*link_get)(struct tide_port *p, struct tide_link *out);
	int (*poll_ctl)(struct tide_port *p);
	/* Optional Rx interrupts (tide_rxq_intr_*; qid checked): the fd, or 0/-errno. */
	int (*rxq_intr_fd)(struct tide_port *p, unsigned qid);
	int (*rxq_intr_set)(struct tide_port *p, unsigned qid, int enable);
	/* Device counters not kept per queue (rx_missed, tx_hangs, ...). */
	void (*stats_add)(const struct tide_port *p, struct tide_port_stats *st);
	/* Zero the driver's counters: those of stats_add and those of xstats. */
	void (*stats_reset)(struct tide_port *p);
	/*
	 * Optional: the driver's own counters for tide_xstats_*(), up to @max of them, in the
	 * same order every call while the port is open: names are static strings without the
	 * driver's prefix (xstats.c adds "DRIVER_"). Returns how many the port has.
	 */
	unsigned (*xstats)(struct tide_port *p, const char **names, uint64_t *values, unsigned max);

	/* PCI drivers: the IDs claimed (ending with {0, 0}), and an open for the device at
	 * @bdf (normalised), which the "pci" driver calls for a spec pci:BDF,key=value... */
	const struct tide_pci_id *pci_ids;
	int (*pci_open)(struct tide_kvargs *kv, const char *bdf, struct tide_port **ports,
			unsigned max);
};

struct tide_port {
	const struct tide_driver *drv;
	struct tide_port_info info;
	char name[64];
	unsigned nb_rxq, nb_txq;
	bool started;
	int id; /* slot in the port registry */
	int link_efd; /* tide_port_link_event_fd(): -1 until asked for (written by any thread) */
	struct tide_rxq *rxq[TIDE_MAX_QUEUES];
	struct tide_txq *txq[TIDE_MAX_QUEUES];
	void *priv;
};

/*
 * Allocate a port for driver @drv with @priv_size bytes of zeroed private state (p->priv).
 * Info defaults: 1 queue each way, 64..4096 descriptors, no RS gap limit, frames up to
 * TIDE_MAX_FRAME_DEFAULT (tide_port_frame_limit() for another).
 */
#define TIDE_MAX_FRAME_DEFAULT (65535u + TIDE_FRAME_OVERHEAD) /* MTU up to 65535 */

int tide_port_alloc(const struct tide_driver *drv, const char *name, size_t priv_size,
		    struct tide_port **out);

/*
 * Set the port's frame limit (open): max_frame, and max_mtu from it; the MTU becomes
 * TIDE_DEFAULT_MTU, or max_mtu when that is lower. @max_frame is at least
 * TIDE_MIN_MTU + TIDE_FRAME_OVERHEAD.
 */
void tide_port_frame_limit(struct tide_port *p, unsigned max_frame);

/* An mtu_set hook for drivers whose MTU is a number they keep and nothing more. */
int tide_port_mtu_set_keep(struct tide_port *p, unsigned mtu);

/* Free a port that tide_port_alloc() made but that was never handed to the application. */
void tide_port_free_unregistered(struct tide_port *p);

/*
 * The port's link went up or down: signal tide_port_link_event_fd(). Any thread (a driver's
 * control thread too); never blocks; a no-op until the application asked for the fd.
 */
void tide_port_link_changed(struct tide_port *p);

/*
 * The end of a driver's xstats hook: hand out its @count counters (names @n, values @v), at
 * most @max of them, and return @count.
 */
static inline unsigned tide_xstats_put(const char *const *n, const uint64_t *v, unsigned count,
				       const char **names, uint64_t *values, unsigned max)
{
	for (unsigned i = 0; i < count && i < max; i++) {
		names[i] = n[i];
		values[i] = v[i];
	}
	return count;
}

/* Burst functions for stopped queues. */
uint16_t tide_rx_burst_noop(struct tide_rxq *q, struct tide_mbuf **pkts, uint16_t n);
uint16_t tide_tx_burst_noop(struct tide_txq *q, struct tide_mbuf **pkts, uint16_t n);

/* Call @fn for every Rx queue of every open port (used to drop recycle pairings). */
void tide_port_foreach_rxq(void (*fn)(struct tide_rxq *q, void *arg), void *arg);

/* The driver table. */
const struct tide_driver *tide_driver_find(const char *name);
/* The driver at position @i of the table, NULL past the end. */
const struct tide_driver *tide_driver_at(unsigned i);
const char *tide_driver_names(void);

#define container_of(ptr, type, member) ((type *)((char *)(ptr) - offsetof(type, member)))

#endif
