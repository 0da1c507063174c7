/* SPDX-License-Identifier: BSD-3-Clause */
/* Built instead of pcap.c when libpcap is not found: the extras say so. */
#include <errno.h>

#include <tide/pcap.h>

int tide_pcap_replay_get(const struct tide_port *port, struct tide_pcap_replay *out)
{
	(void)port;
	(void)out;
	return -ENOTSUP;
}
