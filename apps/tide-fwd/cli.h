/* SPDX-License-Identifier: BSD-3-Clause */
/* cli.h - the command line of tide-fwd. */
#ifndef TIDE_FWD_CLI_H
#define TIDE_FWD_CLI_H

#include <stddef.h>
#include <stdio.h>

#include "fwd.h"

/*
 * Parse @argv into @cfg (which fwd_config_init() prepared; the strings stay in @argv).
 * Returns 0 to run, 1 when --help was asked for (nothing else done), or -EINVAL with one line
 * in @err naming the option and what is wrong with it.
 */
int fwd_cli_parse(int argc, char **argv, struct fwd_config *cfg, char *err, size_t errlen);

/* The --help text. */
void fwd_cli_usage(FILE *f);

/* Write --lcores / --map of @cfg back as text (for the summary). */
void fwd_cli_format_lcores(const struct fwd_config *cfg, char *buf, size_t len);
/* --free-thresh as given: the number, or "auto" for 0 (each port's default). */
void fwd_cli_format_free_thresh(const struct fwd_config *cfg, char *buf, size_t len);
void fwd_cli_format_map(const struct fwd_ctx *ctx, char *buf, size_t len);

#endif
