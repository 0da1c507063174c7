/* SPDX-License-Identifier: BSD-3-Clause */
/* l3fwd.h - the header checks of the l3fwd engine, exposed for tests. */
#ifndef TIDE_FWD_L3FWD_H
#define TIDE_FWD_L3FWD_H

#include <stdint.h>

#include "fwd.h"

/*
 * Check the Ethernet + IPv4 headers of a frame whose first @seg_len bytes are at @frame and
 * whose whole length is @pkt_len (>= @seg_len; the IPv4 header must lie in the first
 * segment). Returns FWD_DROP_NR for a packet fit to route, else the reason to drop it:
 * FWD_DROP_NOT_IPV4 (EtherType), FWD_DROP_BAD_HEADER (shorter than Ethernet + 20 bytes,
 * version not 4, IHL < 5, header past the segment, total length below the header or past
 * the frame), FWD_DROP_BAD_CHECKSUM, FWD_DROP_TTL_EXPIRED (TTL <= 1).
 * Never reads outside frame[0 .. seg_len).
 */
enum fwd_drop l3fwd_check(const uint8_t *frame, unsigned seg_len, unsigned pkt_len);

#endif
