/* SPDX-License-Identifier: BSD-3-Clause */
/* The summary's memif lines: how often each memif port connected and why it went down. */
#include <stdio.h>

#include <tide/memif.h>

#include "fwd.h"

void fwd_memif_print(const struct fwd_ctx *ctx)
{
	for (unsigned p = 0; p < ctx->nports; p++) {
		struct tide_memif_info mi = {.sz = sizeof(mi)};

		if (tide_memif_info_get(ctx->ports[p], &mi) < 0)
			continue; /* not a memif port */
		printf("memif %u %-14s connects %llu, disconnects %llu (%llu: the peer broke a rule)%s%s%s\n",
			p, tide_port_name(ctx->ports[p]), (unsigned long long)mi.connects,
			(unsigned long long)mi.disconnects, (unsigned long long)mi.violations,
			mi.reason[0] ? ", last: \"" : "", mi.reason, mi.reason[0] ? "\"" : "");
	}
}
