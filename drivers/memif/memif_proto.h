/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * memif_proto.h - memif protocol 2.0: constants, control message wire layout, shared ring
 * layout. Wire-compatible with DPDK's net_memif and VPP's libmemif.
 *
 * Names: the protocol's "slave" is our client, its "master" our server; ring direction S2M is
 * our C2S (client to server), M2S our S2C.
 *
 * Layout choice. Control messages arrive as 128 opaque bytes from a socket, so they are never
 * accessed through a struct cast onto the buffer (unaligned access, aliasing, and a hostile
 * peer's bytes living in a typed object). The packed `struct memif_wire_*` below only describe
 * the layout: every offset and size is pinned by a static assertion against the numbers of the
 * protocol, and memif_msg.c copies each field with memcpy at its offsetof() and converts it
 * from little endian. Decoded messages are plain host structs (memif_msg.h).
 *
 * The shared-memory ring header and descriptors are different: both peers access them in
 * place, head and tail with atomic 16-bit loads and stores, so they are ordinary naturally
 * aligned structs (no packing needed; the assertions prove there is no padding). They are in
 * host byte order, as both peers run on the same host; protocol 2.0 peers exist only on
 * little-endian hosts, which the assertion below makes explicit.
 */
#ifndef TIDE_MEMIF_PROTO_H
#define TIDE_MEMIF_PROTO_H

#include <stddef.h>
#include <stdint.h>

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
	       "memif shared rings are in host order; only little-endian hosts are supported");

/* ---- Constants ---------------------------------------------------------------------------- */

#define MEMIF_COOKIE	    0x3E31F20u
#define MEMIF_VERSION_MAJOR 2
#define MEMIF_VERSION_MINOR 0
#define MEMIF_VERSION	    ((MEMIF_VERSION_MAJOR << 8) | MEMIF_VERSION_MINOR) /* 0x0200 */

#define MEMIF_NAME_LEN	 32 /* interface and application name fields, bytes on the wire */
#define MEMIF_SECRET_LEN 24
#define MEMIF_REASON_LEN 96 /* disconnect reason string */

#define MEMIF_MODE_ETHERNET 0
#define MEMIF_MODE_IP	    1
#define MEMIF_MODE_PUNT	    2

#define MEMIF_LOG2_RING_SIZE_DEFAULT 10
#define MEMIF_LOG2_RING_SIZE_MAX     14
#define MEMIF_BUFFER_SIZE_DEFAULT    2048

/*
 * Our own limits on what a peer may add. DPDK allows 255 queue pairs and 256 regions; rings
 * are counted per direction. A region larger than 1 TiB is refused before anyone tries to map
 * it.
 */
#define MEMIF_MAX_REGIONS     256
#define MEMIF_MAX_RINGS	      256
#define MEMIF_REGION_SIZE_MAX (UINT64_C(1) << 40)

/* Ring header offsets must allow aligned atomic access to the u32 cookie and u16 indices. */
#define MEMIF_RING_ALIGN 4

/* ---- Control channel messages ------------------------------------------------------------- */

/*
 * Every message is exactly MEMIF_MSG_SIZE bytes on an AF_UNIX SOCK_SEQPACKET socket: a
 * little-endian u16 type at offset 0, the payload from offset 2, zero padding to the end.
 * Regions (add_region) and interrupt eventfds (add_ring) ride along as SCM_RIGHTS.
 *
 *   client                                server
 *     |            <-------- hello          |  server speaks first
 *     |   init     -------->                |
 *     |            <-------- ack            |
 *     |   add_region x R (one fd each), each acked
 *     |   add_ring x (C2S rings, then S2C rings) (one fd each), each acked
 *     |   connect  -------->                |
 *     |            <-------- connected      |
 *     |   disconnect <------> (either side, any time, carries a reason)
 */
#define MEMIF_MSG_SIZE	       128
#define MEMIF_MSG_TYPE_OFF     0
#define MEMIF_MSG_PAYLOAD_OFF  2
#define MEMIF_MSG_PAYLOAD_SIZE (MEMIF_MSG_SIZE - MEMIF_MSG_PAYLOAD_OFF)

enum memif_msg_type {
	MEMIF_MSG_NONE = 0, /* never valid on the wire */
	MEMIF_MSG_ACK = 1,
	MEMIF_MSG_HELLO = 2,	  /* server -> client */
	MEMIF_MSG_INIT = 3,	  /* client -> server */
	MEMIF_MSG_ADD_REGION = 4, /* client -> server, 1 fd: the region's memfd */
	MEMIF_MSG_ADD_RING = 5,	  /* client -> server, 1 fd: the ring's interrupt eventfd */
	MEMIF_MSG_CONNECT = 6,	  /* client -> server */
	MEMIF_MSG_CONNECTED = 7,  /* server -> client */
	MEMIF_MSG_DISCONNECT = 8, /* either way */
	MEMIF_MSG_TYPE_MAX = MEMIF_MSG_DISCONNECT,
};

/* add_ring flags */
#define MEMIF_RING_FLAG_C2S 0x0001 /* the ring carries client-to-server traffic ("S2M") */

/* Payload layouts (offsets from the payload start). Never instantiated; see the top. */
struct memif_wire_hello {
	uint8_t name[MEMIF_NAME_LEN];
	uint16_t min_version;
	uint16_t max_version;
	uint16_t max_region;   /* highest region *index* the server accepts: count = max + 1 */
	uint16_t max_s2c_ring; /* highest S2C ("M2S") ring index */
	uint16_t max_c2s_ring; /* highest C2S ("S2M") ring index */
	uint8_t max_log2_ring_size;
} __attribute__((packed));

struct memif_wire_init {
	uint16_t version;
	uint32_t id;
	uint8_t mode;
	uint8_t secret[MEMIF_SECRET_LEN];
	uint8_t name[MEMIF_NAME_LEN];
} __attribute__((packed));

struct memif_wire_add_region {
	uint16_t index;
	uint64_t size;
} __attribute__((packed));

struct memif_wire_add_ring {
	uint16_t flags;
	uint16_t index;
	uint16_t region;
	uint32_t offset; /* of the ring header inside the region */
	uint8_t log2_ring_size;
	uint16_t private_hdr_size; /* must be 0 */
} __attribute__((packed));

struct memif_wire_connect { /* also connected */
	uint8_t if_name[MEMIF_NAME_LEN];
} __attribute__((packed));

struct memif_wire_disconnect {
	uint32_t code;
	uint8_t reason[MEMIF_REASON_LEN];
} __attribute__((packed));

#define MEMIF_ASSERT_FIELD(s, f, off, size)                                                        \
	_Static_assert(offsetof(struct s, f) == (off) && sizeof(((struct s *)0)->f) == (size),     \
		       #s "." #f " must be " #size " bytes at " #off)

MEMIF_ASSERT_FIELD(memif_wire_hello, name, 0, 32);
MEMIF_ASSERT_FIELD(memif_wire_hello, min_version, 32, 2);
MEMIF_ASSERT_FIELD(memif_wire_hello, max_version, 34, 2);
MEMIF_ASSERT_FIELD(memif_wire_hello, max_region, 36, 2);
MEMIF_ASSERT_FIELD(memif_wire_hello, max_s2c_ring, 38, 2);
MEMIF_ASSERT_FIELD(memif_wire_hello, max_c2s_ring, 40, 2);
MEMIF_ASSERT_FIELD(memif_wire_hello, max_log2_ring_size, 42, 1);
_Static_assert(sizeof(struct memif_wire_hello) == 43, "hello payload is 43 bytes");

MEMIF_ASSERT_FIELD(memif_wire_init, version, 0, 2);
MEMIF_ASSERT_FIELD(memif_wire_init, id, 2, 4);
MEMIF_ASSERT_FIELD(memif_wire_init, mode, 6, 1);
MEMIF_ASSERT_FIELD(memif_wire_init, secret, 7, 24);
MEMIF_ASSERT_FIELD(memif_wire_init, name, 31, 32);
_Static_assert(sizeof(struct memif_wire_init) == 63, "init payload is 63 bytes");

MEMIF_ASSERT_FIELD(memif_wire_add_region, index, 0, 2);
MEMIF_ASSERT_FIELD(memif_wire_add_region, size, 2, 8);
_Static_assert(sizeof(struct memif_wire_add_region) == 10, "add_region payload is 10 bytes");

MEMIF_ASSERT_FIELD(memif_wire_add_ring, flags, 0, 2);
MEMIF_ASSERT_FIELD(memif_wire_add_ring, index, 2, 2);
MEMIF_ASSERT_FIELD(memif_wire_add_ring, region, 4, 2);
MEMIF_ASSERT_FIELD(memif_wire_add_ring, offset, 6, 4);
MEMIF_ASSERT_FIELD(memif_wire_add_ring, log2_ring_size, 10, 1);
MEMIF_ASSERT_FIELD(memif_wire_add_ring, private_hdr_size, 11, 2);
_Static_assert(sizeof(struct memif_wire_add_ring) == 13, "add_ring payload is 13 bytes");

MEMIF_ASSERT_FIELD(memif_wire_connect, if_name, 0, 32);
_Static_assert(sizeof(struct memif_wire_connect) == 32, "connect payload is 32 bytes");

MEMIF_ASSERT_FIELD(memif_wire_disconnect, code, 0, 4);
MEMIF_ASSERT_FIELD(memif_wire_disconnect, reason, 4, 96);
_Static_assert(sizeof(struct memif_wire_disconnect) == 100, "disconnect payload is 100 bytes");

_Static_assert(sizeof(struct memif_wire_disconnect) <= MEMIF_MSG_PAYLOAD_SIZE &&
		   sizeof(struct memif_wire_init) <= MEMIF_MSG_PAYLOAD_SIZE,
	       "every payload fits in a 128-byte message");

/* ---- Shared memory ------------------------------------------------------------------------ */

/*
 * Regions are created by the client (memfd, mapped MAP_SHARED by both). A ring is a header
 * followed by 2^log2 descriptors at `offset` inside a region; head and tail are free-running
 * u16 indices, slot = index & (size - 1).
 *
 *   offset +0   cookie u32 | flags u16 | head u16 |  ...        <- cache line of the client
 *          +64  tail u16 | ...                                  <- cache line of the server
 *          +128 desc[0] desc[1] ... desc[size - 1]  (16 bytes each)
 *
 * Who writes what: the CLIENT writes head, the SERVER writes tail, on BOTH rings.
 *
 *   C2S ring (client Tx -> server Rx)       S2C ring (server Tx -> client Rx)
 *
 *      tail          head                       tail           head
 *   ----|============|-------               -----|=============|-------
 *       | full slots |                           | empty bufs  |
 *       ^ server consumes, then                  ^ server fills packets,
 *         publishes tail (frees slots)             sets lengths, publishes tail
 *                    ^ client fills, then                      ^ client posts empty
 *                      publishes head                            buffers, publishes head
 *
 *   C2S: the client's Tx completion is tail moving. S2C: the client receives up to tail.
 *
 * Ordering: a writer fills descriptors and buffers, then stores its index with release; the
 * reader loads the index with acquire before touching the slots it covers. Indices are
 * written as one aligned 16-bit atomic store (two byte stores would let the peer see torn
 * values). The reader treats every index and descriptor as hostile (memif_desc.h).
 *
 * Copy mode: region 0 holds all rings (C2S 0..n-1, then S2C 0..m-1), then all buffers; the
 * server never changes a descriptor's region or offset. Zero-copy (client only): region 0
 * holds the rings, descriptors point into further regions; the server cannot tell.
 */
#define MEMIF_RING_FLAG_MASK_INT 0x0001 /* ring header flags: the reader polls, no interrupt */
#define MEMIF_DESC_FLAG_NEXT	 0x0001 /* descriptor flags: the packet continues in the next slot */

struct memif_desc {
	uint16_t flags;
	uint16_t region;
	uint32_t length;
	uint32_t offset; /* of the buffer from the region base */
	uint32_t metadata;
};

MEMIF_ASSERT_FIELD(memif_desc, flags, 0, 2);
MEMIF_ASSERT_FIELD(memif_desc, region, 2, 2);
MEMIF_ASSERT_FIELD(memif_desc, length, 4, 4);
MEMIF_ASSERT_FIELD(memif_desc, offset, 8, 4);
MEMIF_ASSERT_FIELD(memif_desc, metadata, 12, 4);
_Static_assert(sizeof(struct memif_desc) == 16, "a descriptor is 16 bytes");

struct memif_ring {
	uint32_t cookie; /* MEMIF_COOKIE, written by the client before add_ring */
	uint16_t flags;	 /* MEMIF_RING_FLAG_MASK_INT, written by the reader of the ring */
	uint16_t head;	 /* written by the client only */
	uint8_t pad0[56];
	uint16_t tail; /* written by the server only */
	uint8_t pad1[62];
	struct memif_desc desc[];
};

MEMIF_ASSERT_FIELD(memif_ring, cookie, 0, 4);
MEMIF_ASSERT_FIELD(memif_ring, flags, 4, 2);
MEMIF_ASSERT_FIELD(memif_ring, head, 6, 2);
MEMIF_ASSERT_FIELD(memif_ring, tail, 64, 2);
_Static_assert(offsetof(struct memif_ring, desc) == 128, "descriptors start at byte 128");
_Static_assert(sizeof(struct memif_ring) == 128, "the ring header is 128 bytes");
_Static_assert(_Alignof(struct memif_ring) <= MEMIF_RING_ALIGN, "ring offsets need 4 bytes");

/* Bytes of one ring with 2^log2 slots (header and descriptors). */
static inline uint64_t memif_ring_bytes(unsigned int log2_size)
{
	return sizeof(struct memif_ring) + (sizeof(struct memif_desc) << log2_size);
}

#endif /* TIDE_MEMIF_PROTO_H */
