/* SPDX-License-Identifier: BSD-3-Clause */
/* tide-fwd --prom FILE (see prom.h). Public API only. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tide/port.h>

#include "prom.h"

struct metric {
	const char *name, *type, *help;
	size_t off; /* in struct tide_port_stats; SIZE_MAX: the link state */
};

#define STAT(f) offsetof(struct tide_port_stats, f)

static const struct metric metrics[] = {
	{"tide_port_rx_packets_total", "counter", "Packets received.", STAT(ipackets)},
	{"tide_port_rx_bytes_total", "counter", "Bytes received.", STAT(ibytes)},
	{"tide_port_rx_errors_total", "counter", "Received frames dropped as errors.",
	 STAT(ierrors)},
	{"tide_port_rx_nombuf_total", "counter", "Rx refills that found no buffer.",
	 STAT(rx_nombuf)},
	{"tide_port_rx_missed_total", "counter", "Frames the device or peer dropped for lack of "
	 "room.", STAT(rx_missed)},
	{"tide_port_tx_packets_total", "counter", "Packets sent.", STAT(opackets)},
	{"tide_port_tx_bytes_total", "counter", "Bytes sent.", STAT(obytes)},
	{"tide_port_tx_errors_total", "counter", "Packets that could not be sent.", STAT(oerrors)},
	{"tide_port_tx_hangs_total", "counter", "Tx queue hangs detected.", STAT(tx_hangs)},
	{"tide_port_tx_released_total", "counter", "Buffers released by Tx completion.",
	 STAT(tx_released)},
	{"tide_port_tx_recycled_total", "counter", "Of those, moved straight into an Rx queue.",
	 STAT(tx_recycled)},
	{"tide_port_rx_polls_total", "counter", "Rx burst calls.", STAT(rx_polls)},
	{"tide_port_rx_idle_polls_total", "counter", "Rx burst calls that received nothing.",
	 STAT(rx_idle_polls)},
	{"tide_port_link_up", "gauge", "1 while the link is up.", SIZE_MAX},
};

/* A label value: backslash, double quote and newline escaped, as the format asks. */
static void label(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			fprintf(f, "\\%c", *s);
		else if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
}

int fwd_prom_print(FILE *f)
{
	for (unsigned i = 0; i < sizeof(metrics) / sizeof(metrics[0]); i++) {
		const struct metric *m = &metrics[i];

		fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", m->name, m->help, m->name, m->type);
		for (struct tide_port *p = tide_port_next(NULL); p; p = tide_port_next(p)) {
			struct tide_port_info pi = {.sz = sizeof(pi)};
			uint64_t v;

			tide_port_info_get(p, &pi);
			if (m->off == SIZE_MAX) {
				struct tide_link l;

				v = tide_port_link_get(p, &l) == 0 && l.up;
			} else {
				struct tide_port_stats st = {.sz = sizeof(st)};

				tide_port_stats_get(p, &st);
				memcpy(&v, (const char *)&st + m->off, sizeof(v));
			}
			fprintf(f, "%s{port=\"", m->name);
			label(f, tide_port_name(p));
			fprintf(f, "\",driver=\"");
			label(f, pi.driver != NULL ? pi.driver : "");
			fprintf(f, "\"} %llu\n", (unsigned long long)v);
		}
	}
	return ferror(f) ? -EIO : 0;
}

int fwd_prom_write(const char *path)
{
	size_t n = strlen(path) + 32;
	char *tmp = malloc(n);
	FILE *f;
	int rc;

	if (tmp == NULL)
		return -ENOMEM;
	snprintf(tmp, n, "%s.tmp.%d", path, (int)getpid());
	f = fopen(tmp, "w");
	if (f == NULL) {
		rc = -errno;
		free(tmp);
		return rc;
	}
	rc = fwd_prom_print(f);
	if (fclose(f) != 0 && rc == 0)
		rc = -errno;
	if (rc == 0 && rename(tmp, path) != 0)
		rc = -errno;
	if (rc < 0)
		unlink(tmp);
	free(tmp);
	return rc;
}
