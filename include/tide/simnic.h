/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tide/simnic.h - extras of the simulated NIC driver ("simnic:" ports).
 *
 * simnic models a descriptor NIC: 16-byte Rx/Tx descriptors, tail doorbells, DD write-back
 * on RS descriptors (or head write-back), an on-die descriptor window that hangs the queue
 * when too many descriptors pass without RS. Its "wire" can be a traffic generator and sink
 * (wire=gen), a loop (a port's Tx comes back on its Rx) or a cross-connect (ports 2k and
 * 2k+1). Spec keys:
 *
 *   ports=N      ports in the device (1..16, default 1)
 *   queues=N     Rx and Tx queues per port (1..16, default 1)
 *   mode=M       thread: the device runs on its own thread (real concurrency);
 *                inline: it is stepped from the burst calls (deterministic; default)
 *   cpu=N        CPU for the device thread (default: the last CPU)
 *   wire=W       gen (default) | loop | cross
 *   size=N       generated packet size in bytes, 60..2048 (default 64)
 *   flows=N      distinct IPv4/UDP flows per port (default 1024)
 *   count=N      packets the generator makes per port, then stops (default 0: no limit)
 *   rate=N       generator rate per port in packets per second (default 0: as fast as it can)
 *   ondie=N      on-die Tx descriptor window: a run of N descriptors with no RS hangs the
 *                queue (default 40)
 *   wb=dd|head   Tx completion write-back: DD bits in RS descriptors, or the head index
 *
 * Generated packets on port p go to 10.<(p+1) % ports>.x.y (so an l3fwd with routes
 * 10.<q>.0.0/16 -> port q sends them to the next port), from 192.168.<p>.x, UDP, TTL 64,
 * with a valid IPv4 checksum and the port's MAC (02:00:00:00:00:<p>) as destination.
 */
#ifndef TIDE_SIMNIC_H
#define TIDE_SIMNIC_H

#include <tide/port.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * A sink check, called by the device for every packet a port transmits on wire=gen:
 * return 0 if the packet is as expected, anything else to count it as a failure. Runs on
 * the device's thread (mode=thread) or inside tide_tx_burst() (mode=inline).
 */
typedef int (*tide_simnic_verify_fn)(void *arg, unsigned port_idx, const uint8_t *pkt,
				     unsigned len);

/*
 * A packet generator replacing the built-in one: write packet number @seq of port
 * @port_idx, queue @qid into @buf (room bytes) and return its length (0 < len <= room).
 */
typedef unsigned (*tide_simnic_gen_fn)(void *arg, unsigned port_idx, unsigned qid,
				       uint64_t seq, uint8_t *buf, unsigned room);

/* Set or clear (NULL) the sink check / generator of a simnic port; port stopped. */
TIDE_EXPORT int tide_simnic_set_verify(struct tide_port *p, tide_simnic_verify_fn fn, void *arg);
TIDE_EXPORT int tide_simnic_set_gen(struct tide_port *p, tide_simnic_gen_fn fn, void *arg);

struct tide_simnic_stats {
	size_t sz;              /* sizeof(struct tide_simnic_stats), set by the caller */
	uint64_t gen_packets;   /* packets the generator put on this port's Rx */
	uint64_t sink_packets;  /* packets this port transmitted into the sink */
	uint64_t sink_bytes;
	uint64_t verify_failed; /* sink packets the check rejected */
	uint64_t rx_missed;     /* packets dropped: no Rx descriptor posted */
	uint64_t tx_hangs;      /* Tx queues hung by an RS gap above the window */
	uint64_t device_polls;  /* device loop iterations (thread mode) */
	uint64_t device_idle;   /* of those, iterations with nothing to do */
};

TIDE_EXPORT int tide_simnic_stats_get(const struct tide_port *p, struct tide_simnic_stats *out);

/* Index of a simnic port in its device (0..ports-1), or -EINVAL for another driver. */
TIDE_EXPORT int tide_simnic_port_index(const struct tide_port *p);

#ifdef __cplusplus
}
#endif

#endif /* TIDE_SIMNIC_H */
