/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tide/telemetry.h - the ports' counters, info and link state over a UNIX socket, for
 * monitoring tools (opt-in).
 *
 * The application opens a telemetry socket and calls tide_telemetry_poll() from its control
 * thread now and then (tide-fwd: every 10 ms, with --telemetry PATH), or when the fd of
 * tide_telemetry_fd() is readable. A client connects to the SOCK_SEQPACKET socket, receives
 * one JSON object that names the protocol, then sends commands, one per message, and gets one
 * JSON object per command, keyed by the command:
 *
 *	/                    the commands
 *	/info                {"version", "pid", "ports"}
 *	/ports/list          the ids of the open ports
 *	/ports/info,PORT     driver, name, queues, descriptor limits, MAC, ...
 *	/ports/stats,PORT    the counters of tide_port_stats_get()
 *	/ports/xstats,PORT   every extended statistic (tide_xstats_*), by name
 *	/ports/link,PORT     {"up", "speed_mbps"}
 *
 * PORT is a port id (tide_port_id()) or a port name. A bad command, a bad port, a message
 * that is not text gets {"error": "..."}; nothing a client sends can stop the server. Poll
 * never blocks: a client that does not read its answers is disconnected when its socket's
 * buffer is full, not waited for. At most TIDE_TELEMETRY_MAX_CLIENTS clients at a time;
 * one more is told so and closed. scripts/tide-telemetry is a client.
 *
 * Thread safety: the calls of this header belong to the control thread, the one that opens
 * and closes ports (the answers read the table of open ports).
 */
#ifndef TIDE_TELEMETRY_H
#define TIDE_TELEMETRY_H

#include <stdint.h>

#include <tide/common.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TIDE_TELEMETRY_MAX_CLIENTS 16
#define TIDE_TELEMETRY_MAX_CMD 1024        /* bytes of one command */
#define TIDE_TELEMETRY_MAX_REPLY (64 * 1024) /* bytes of one answer */

struct tide_telemetry;

/*
 * Listen on @path (a socket file; one left by a process that died is taken over, a live
 * one is not). Returns 0 and the server in *@out; -EINVAL for a NULL or too long path,
 * -EADDRINUSE when another server listens on it, or another -errno of socket()/bind().
 */
TIDE_EXPORT int tide_telemetry_open(const char *path, struct tide_telemetry **out);

/* A file descriptor that is readable when tide_telemetry_poll() has work (epoll). */
TIDE_EXPORT int tide_telemetry_fd(const struct tide_telemetry *t);

/*
 * Accept new clients and answer every command that has arrived; never blocks. Returns the
 * number of commands answered, or -errno when the listening socket failed.
 */
TIDE_EXPORT int tide_telemetry_poll(struct tide_telemetry *t);

struct tide_telemetry_stats {
	size_t sz;          /* sizeof(struct tide_telemetry_stats), set by the caller */
	uint64_t clients;   /* accepted */
	uint64_t commands;  /* answered, errors included */
	uint64_t errors;    /* answers that were {"error": ...} */
	uint64_t dropped;   /* clients disconnected: not reading, too many, or a socket error */
};

/* The counters as far as @out->sz goes; -EINVAL when @out is NULL or its sz is below the
 * struct's first version (up to dropped). */
TIDE_EXPORT int tide_telemetry_stats_get(const struct tide_telemetry *t,
					 struct tide_telemetry_stats *out);

/* Disconnect every client, close the socket and remove its file. NULL is a no-op. */
TIDE_EXPORT void tide_telemetry_close(struct tide_telemetry *t);

#ifdef __cplusplus
}
#endif

#endif /* TIDE_TELEMETRY_H */
