/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * routes.h - the route table of tide-fwd's l3fwd engine: a route file parser and the default
 * table.
 *
 * Route file format, one route a line:
 *
 *	# comment
 *	10.1.0.0/16   1
 *	0.0.0.0/0     0	# default route; text after '#' is a comment
 *
 * PREFIX is a dotted quad (four decimal numbers 0..255) whose bits beyond LEN must be zero;
 * LEN is 0..32, written right after the '/'; PORT is a decimal port number 0..max_port. Blank
 * lines, comment lines, and any whitespace (spaces, tabs, a trailing CR) before, between and
 * after the two fields are allowed.
 * A prefix listed twice with different ports is an error (which one was meant cannot be
 * told), reported at the later line; listed twice with the same port, it is accepted with a
 * warning.
 *
 * Messages name the problem and quote the offending text; file-level calls prefix them with
 * "FILE:LINE: ". Nothing is printed.
 */
#ifndef TIDE_FWD_ROUTES_H
#define TIDE_FWD_ROUTES_H

#include <stddef.h>
#include <stdint.h>

struct route {
	uint32_t ip;   /* host byte order, bits beyond depth are zero */
	uint8_t depth; /* 0..32 */
	uint16_t port;
	uint32_t line; /* line of the route file, 1-based; 0 in the default table */
};

/* Ports above this cannot be named (the LPM's next-hop range is narrower still). */
#define ROUTES_PORT_MAX 0xffffu

/*
 * Parse one line (a terminating newline is allowed). @max_port is the largest acceptable port
 * (inclusive: pass nports - 1; values above ROUTES_PORT_MAX mean ROUTES_PORT_MAX).
 * Returns 1 and the route in *@r; 0 for a blank or comment line (*@r untouched); -EINVAL for a
 * malformed line, with a message (without location) in @err, which may be NULL when @errlen
 * is 0.
 */
int routes_parse_line(const char *line, unsigned max_port, struct route *r, char *err,
		      size_t errlen);

/*
 * Parse a whole route file held in memory, NUL-terminated; @name is used in messages only.
 * On success returns 0, a malloc'd array in *@out (release with free(); NULL when *@n is 0) and
 * the number of routes in *@n, in file order; @warn (may be NULL when @warnlen is 0) is then
 * empty, or "NAME:LINE: ..." naming the first line that repeats a route exactly (kept: adding
 * it again changes nothing). Returns -EINVAL with "NAME:LINE: what is wrong" in @err at the
 * first malformed line, or at the second of two lines that give one prefix different ports;
 * or -ENOMEM; then *@out and *@n are untouched.
 */
int routes_parse(const char *text, const char *name, unsigned max_port, struct route **out,
		 unsigned *n, char *err, size_t errlen, char *warn, size_t warnlen);

#define ROUTES_LINE_MAX 1024 /* characters per line of a route file */

/*
 * Read and parse the route file at @path, as routes_parse. Also returns -errno if the file
 * cannot be opened or read, with "PATH: reason" in @err, and -EINVAL for a line longer than
 * ROUTES_LINE_MAX or holding a NUL byte ("PATH:LINE: reason").
 */
int routes_load(const char *path, unsigned max_port, struct route **out, unsigned *n, char *err,
		size_t errlen, char *warn, size_t warnlen);

/*
 * The demo table for @nports ports (1..256): 10.p.0.0/16 -> port p for each port p, and
 * nothing else. In particular there is NO default route: packets to any other address have
 * no route and are counted as unroutable rather than sent somewhere arbitrary.
 * Returns 0 with the array in *@out (release with free()) and *@n = @nports; -EINVAL for
 * @nports out of range; -ENOMEM.
 */
int routes_default(unsigned nports, struct route **out, unsigned *n);

#endif
