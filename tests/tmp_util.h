/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Where tests and benchmarks put their sockets, files and scratch directories: $TMPDIR
 * when it is set to an absolute path, else /tmp. scripts/mutate runs every mutant's tests
 * under a private TMPDIR and removes it afterwards, so that what a crashed or cut-short
 * test leaves behind goes with it, and nothing of a run beside it. A unix socket's path
 * must fit 108 bytes: a long TMPDIR makes the socket tests fail at bind.
 */
#ifndef TIDE_TMP_UTIL_H
#define TIDE_TMP_UTIL_H

#include <stdlib.h>

static inline const char *test_tmp(void)
{
	const char *t = getenv("TMPDIR");

	return t != NULL && t[0] == '/' ? t : "/tmp";
}

#endif
