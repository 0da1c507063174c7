/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * memif_msg.h - memif control messages: encode, decode and validate, and the per-connection
 * control-channel state machine. No sockets and no file descriptors here: the caller does the
 * I/O, passes what it received (bytes and the number of SCM_RIGHTS fds that came with them)
 * and sends what these functions tell it to. Everything is pure and single-threaded per
 * connection.
 *
 * Errors: -EPROTO for framing and sequence violations (size, type, order, fd count), -EINVAL
 * for a field value out of range. On error *reason points to a short static string meant for
 * the disconnect message (it fits in MEMIF_REASON_LEN); outputs and the connection are left
 * unchanged. The functions never own fds: on any error the caller closes what it received.
 */
#ifndef TIDE_MEMIF_MSG_H
#define TIDE_MEMIF_MSG_H

#include <stdint.h>
#include <stddef.h>

#include "memif_proto.h"

/* Decoded messages. Strings are always NUL-terminated here, whatever the wire held. */
struct memif_msg_hello {
	char name[MEMIF_NAME_LEN + 1];
	uint16_t min_version;
	uint16_t max_version;
	uint16_t max_region;
	uint16_t max_s2c_ring;
	uint16_t max_c2s_ring;
	uint8_t max_log2_ring_size;
};

struct memif_msg_init {
	uint16_t version;
	uint32_t id;
	uint8_t mode;
	char secret[MEMIF_SECRET_LEN + 1];
	char name[MEMIF_NAME_LEN + 1];
};

struct memif_msg_add_region {
	uint16_t index;
	uint64_t size;
};

struct memif_msg_add_ring {
	uint16_t flags; /* MEMIF_RING_FLAG_C2S */
	uint16_t index;
	uint16_t region;
	uint32_t offset;
	uint8_t log2_ring_size;
	uint16_t private_hdr_size;
};

struct memif_msg_connect { /* connect and connected */
	char if_name[MEMIF_NAME_LEN + 1];
};

struct memif_msg_disconnect {
	uint32_t code;
	char reason[MEMIF_REASON_LEN + 1];
};

struct memif_msg {
	uint16_t type; /* enum memif_msg_type */
	union {
		struct memif_msg_hello hello;
		struct memif_msg_init init;
		struct memif_msg_add_region add_region;
		struct memif_msg_add_ring add_ring;
		struct memif_msg_connect connect;   /* MEMIF_MSG_CONNECT */
		struct memif_msg_connect connected; /* MEMIF_MSG_CONNECTED */
		struct memif_msg_disconnect disconnect;
	};
};

/*
 * Encode @m into exactly MEMIF_MSG_SIZE bytes at @buf (zero padded). Field values are written
 * as given, without range checks, so that tests can build hostile messages. A string is
 * copied up to its wire field size; one that fills the field goes out unterminated, so senders
 * should keep names below MEMIF_NAME_LEN (DPDK reads them with strlcpy).
 * Returns 0, or -EINVAL if the type is not one of MEMIF_MSG_ACK..MEMIF_MSG_DISCONNECT.
 */
int memif_msg_encode(const struct memif_msg *m, uint8_t buf[MEMIF_MSG_SIZE]);

/*
 * Decode and validate the @len bytes at @buf into @m. Checks what needs no connection
 * context: the exact size, a known type, strings read no further than their field (a field
 * without NUL is accepted, truncated at the field size: libmemif may send that), and the ranges
 * of the fields:
 *   hello:      MEMIF_VERSION within [min_version, max_version];
 *   init:       version == MEMIF_VERSION, mode == MEMIF_MODE_ETHERNET;
 *   add_region: index < MEMIF_MAX_REGIONS, 0 < size <= MEMIF_REGION_SIZE_MAX;
 *   add_ring:   no unknown flag, index < MEMIF_MAX_RINGS, region < MEMIF_MAX_REGIONS,
 *               offset a multiple of MEMIF_RING_ALIGN, log2 size <= MEMIF_LOG2_RING_SIZE_MAX,
 *               private header size 0.
 * Returns 0, -EPROTO (size, type) or -EINVAL (field value) with *reason set; @m is written
 * only on success. @reason may be NULL.
 */
int memif_msg_decode(const void *buf, size_t len, struct memif_msg *m, const char **reason);

/*
 * Server side of the init check that needs configuration: the peer's secret must equal
 * @configured (compared over at most MEMIF_SECRET_LEN bytes, in time independent of where
 * they differ). A NULL or empty @configured accepts any secret. The caller also checks that
 * an interface with init->id exists in server role and is not connected yet.
 * Returns 0 or -EINVAL with *reason set.
 */
int memif_msg_secret_check(const char *configured, const struct memif_msg_init *init,
			   const char **reason);

/* ---- Control-channel state machine ------------------------------------------------------- */

enum memif_role {
	MEMIF_ROLE_SERVER,
	MEMIF_ROLE_CLIENT,
};

enum memif_state {
	MEMIF_STATE_WAIT_INIT,	/* server: hello sent, init must come first */
	MEMIF_STATE_CONFIG,	/* server: regions, rings, then connect */
	MEMIF_STATE_WAIT_HELLO, /* client: connected to the socket, hello must come first */
	MEMIF_STATE_SETUP,	/* client: sending init/regions/rings/connect, each answered */
	MEMIF_STATE_CONNECTED,	/* both: rings in use; only disconnect may arrive */
	MEMIF_STATE_CLOSED,	/* both: disconnect received or sent; nothing more */
};

/* Counts (not the wire's maximum indices). */
struct memif_limits {
	uint16_t regions;
	uint16_t c2s_rings;
	uint16_t s2c_rings;
	uint8_t max_log2_ring_size;
};

/* Direction index for the per-direction arrays below. */
#define MEMIF_DIR_C2S 0
#define MEMIF_DIR_S2C 1

/*
 * One control connection. Fields are readable by the driver (what the peer set up); change
 * them only through the functions below.
 */
struct memif_conn {
	enum memif_role role;
	enum memif_state state;
	/*
	 * Server: what it advertised in hello. Client: what the server advertised (from hello),
	 * clamped to our own maxima; the client negotiates its plan within these.
	 */
	struct memif_limits limits;
	uint8_t awaiting;  /* client: type of the sent message whose answer is pending, or 0 */
	uint8_t init_sent; /* client: init went out (it must be the first) */
	/* Server: what the client added so far. */
	uint16_t n_regions;			    /* regions 0..n_regions-1 exist */
	uint16_t n_rings[2];			    /* distinct ring indices per direction */
	uint64_t ring_map[2][MEMIF_MAX_RINGS / 64]; /* which ring indices were added */
	uint64_t region_size[MEMIF_MAX_REGIONS];
};

/*
 * Start a connection in @role. A server passes the limits it advertises in its hello (counts
 * from 1 to MEMIF_MAX_REGIONS / MEMIF_MAX_RINGS, log2 up to MEMIF_LOG2_RING_SIZE_MAX); a
 * client passes NULL. Returns 0 or -EINVAL (bad role or limits).
 */
int memif_conn_init(struct memif_conn *c, enum memif_role role, const struct memif_limits *lim);

/* Fill a hello message advertising @lim (the server's first message). */
void memif_msg_hello_from_limits(struct memif_msg *m, const struct memif_limits *lim,
				 const char *name);

/*
 * Feed one decoded message @m, received with @n_fds file descriptors. On success the
 * connection moves on (c->state) and the return is 0; the caller then answers:
 *   server: init, add_region, add_ring -> ack; connect -> connected (maps regions first);
 *   client: hello -> init; ack -> its next message; connected -> up;
 *   either: disconnect -> state CLOSED, tear down.
 * Rules: server expects init first, then add_region with indices in order from 0 (exactly
 * one fd each), add_ring with an index below the advertised count, no duplicate, inside a
 * region already added (exactly one fd each), then connect once at least one region and
 * rings 0..n-1 in each direction exist. The client expects hello, then one ack per init,
 * add_region or add_ring it sent and connected after connect (see memif_conn_sent()). Other
 * messages carry no fd. Disconnect is accepted in every state but CLOSED.
 * Returns 0, or -EPROTO / -EINVAL with *reason set and @c unchanged.
 */
int memif_conn_step(struct memif_conn *c, const struct memif_msg *m, unsigned int n_fds,
		    const char **reason);

/*
 * Record that we sent a message of @type. The client calls it for init, add_region, add_ring
 * and connect (one at a time: the previous one must have been answered); sending disconnect
 * closes the connection in either role; the server's other messages need no record.
 * Returns 0, or -EINVAL if the message may not be sent now (c unchanged).
 */
int memif_conn_sent(struct memif_conn *c, uint16_t type);

#endif /* TIDE_MEMIF_MSG_H */
