/* SPDX-License-Identifier: BSD-3-Clause */
/* tide-fwd --prom FILE: every open port's counters for node_exporter's textfile collector. */
#ifndef TIDE_FWD_PROM_H
#define TIDE_FWD_PROM_H

#include <stdio.h>

/* The metrics of every open port, in the Prometheus text format. Returns 0 or -errno. */
int fwd_prom_print(FILE *f);

/*
 * Rewrite @path: written to a temporary file beside it, then renamed over it, so that a
 * reader never sees half a file. Returns 0 or -errno (nothing is left behind on error).
 */
int fwd_prom_write(const char *path);

#endif
