/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Copy-mode drivers' receive side (memif, vhost): bytes from a peer's buffer appended to a
 * packet, which grows by segments taken from the queue's pool. Internal.
 */
#ifndef TIDE_SRC_COPY_H
#define TIDE_SRC_COPY_H

#include <string.h>

#include <tide/mbuf.h>

/*
 * Append @len bytes at @src to packet @m, whose last segment is *@cur and whose segments
 * hold @dataroom bytes each; new segments come from @pool. Returns 0, or -1 when the pool
 * ran dry (the segments taken so far stay chained to @m, for the caller to free with it).
 * Inline, no argument checks: @src and @len are already checked against the peer's memory.
 */
static inline __attribute__((always_inline)) int
copy_append(struct tide_pool *pool, uint32_t dataroom, struct tide_mbuf *m,
	    struct tide_mbuf **cur, const uint8_t *src, uint32_t len)
{
	struct tide_mbuf *c = *cur;

	while (len > 0) {
		uint32_t room = dataroom - c->data_len, k;

		if (tide_unlikely(room == 0)) {
			struct tide_mbuf *n = tide_mbuf_alloc(pool);

			if (n == NULL)
				return -1;
			c->next = n;
			c = n;
			m->nb_segs++;
			continue;
		}
		k = len < room ? len : room;
		memcpy(tide_mbuf_mtod_offset(c, uint8_t *, c->data_len), src, k);
		c->data_len = (uint16_t)(c->data_len + k);
		m->pkt_len += k;
		src += k;
		len -= k;
	}
	*cur = c;
	return 0;
}

#endif /* TIDE_SRC_COPY_H */
