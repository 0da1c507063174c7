/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tide/pcap.h - extras of the pcap driver ("pcap:" ports): how far a replay has got.
 *
 * A pcap port with rx= replays a capture loop= times (0: without end). An application that
 * wants to stop when the input is over, or to show progress, reads this; the port's link
 * also reads down once the replay has ended.
 */
#ifndef TIDE_PCAP_H
#define TIDE_PCAP_H

#include <stdbool.h>
#include <stdint.h>

#include <tide/common.h>

#ifdef __cplusplus
extern "C" {
#endif

struct tide_port;

struct tide_pcap_replay {
	size_t sz;        /* sizeof(struct tide_pcap_replay), set by the caller (tide/port.h) */
	uint64_t records; /* records read since the port started (handed out or skipped) */
	uint64_t total;   /* records the whole replay reads (capture size x loop); 0: no end */
	bool ended;       /* the replay is over: Rx returns nothing more until a restart */
};

/*
 * Fill @out for @port. Safe while another thread receives on the port (relaxed reads: the
 * figures may be one burst old). Returns 0; -EINVAL if @port is not a pcap port, has no
 * rx= capture, or sz is too small; -ENOTSUP if tide was built without libpcap.
 */
TIDE_EXPORT int tide_pcap_replay_get(const struct tide_port *port, struct tide_pcap_replay *out);

#ifdef __cplusplus
}
#endif

#endif
