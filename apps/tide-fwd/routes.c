/* SPDX-License-Identifier: BSD-3-Clause */
/* Route file parser and the demo route table; see routes.h for the format. */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "routes.h"

/* Longest stretch of offending text quoted in a message. */
#define QUOTE_MAX 40

static void __attribute__((format(printf, 3, 4)))
set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* Whitespace in the C locale, whatever locale the program runs in. */
static bool is_ws(char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n' || ch == '\v' || ch == '\f';
}

static bool is_digit(char ch)
{
	return ch >= '0' && ch <= '9';
}

static const char *skip_ws(const char *p)
{
	while (is_ws(*p))
		p++;
	return p;
}

/* End of the token at @p: up to whitespace, a comment, the end, or any char in @stop. */
static const char *token_end(const char *p, const char *stop)
{
	while (*p && !is_ws(*p) && *p != '#' && !strchr(stop, *p))
		p++;
	return p;
}

static int token_len(const char *b, const char *e)
{
	return (int)(e - b > QUOTE_MAX ? QUOTE_MAX : e - b);
}

/*
 * Decimal number filling exactly [b, e), saturated at @limit + 1 so that huge values read as
 * "too big" rather than wrapping. False if the token is empty or not all digits.
 */
static bool parse_uint(const char *b, const char *e, unsigned limit, unsigned *v)
{
	unsigned x = 0;

	if (b == e)
		return false;
	for (; b < e; b++) {
		if (!is_digit(*b))
			return false;
		x = x * 10 + (unsigned)(*b - '0');
		if (x > limit)
			x = limit + 1;
	}
	*v = x;
	return true;
}

/* Strict dotted quad: exactly four decimal fields of 1..3 digits, each 0..255. */
static bool parse_addr(const char *b, const char *e, uint32_t *ip)
{
	uint32_t a = 0;

	for (int field = 0; field < 4; field++) {
		const char *f = b;
		unsigned v;

		while (b < e && is_digit(*b))
			b++;
		if (b - f > 3 || !parse_uint(f, b, 255, &v) || v > 255)
			return false;
		a = a << 8 | v;
		if (field < 3) {
			if (b == e || *b != '.')
				return false;
			b++;
		}
	}
	if (b != e)
		return false;
	*ip = a;
	return true;
}

int routes_parse_line(const char *line, unsigned max_port, struct route *r, char *err,
		      size_t errlen)
{
	const char *p = skip_ws(line), *addr = p, *e;
	unsigned len, port;
	uint32_t ip, mask;

	if (*p == '\0' || *p == '#')
		return 0;

	e = token_end(p, "/");
	if (!parse_addr(p, e, &ip)) {
		set_err(err, errlen, "bad address '%.*s' (want a.b.c.d/LEN PORT)", token_len(p, e),
			p);
		return -EINVAL;
	}
	if (*e != '/') {
		set_err(err, errlen, "missing prefix length after '%.*s' (want a.b.c.d/LEN PORT)",
			token_len(addr, e), addr);
		return -EINVAL;
	}
	p = e + 1;
	e = token_end(p, "");
	if (p == e) {
		set_err(err, errlen, "missing prefix length after '/'");
		return -EINVAL;
	}
	if (!parse_uint(p, e, 32, &len)) {
		set_err(err, errlen, "bad prefix length '%.*s'", token_len(p, e), p);
		return -EINVAL;
	}
	if (len > 32) {
		set_err(err, errlen, "prefix length '%.*s' > 32", token_len(p, e), p);
		return -EINVAL;
	}
	mask = len ? ~0u << (32 - len) : 0;
	if (ip & ~mask) {
		uint32_t m = ip & mask;

		set_err(err, errlen,
			"address has bits set beyond /%u (did you mean %u.%u.%u.%u/%u?)", len,
			m >> 24, (m >> 16) & 0xff, (m >> 8) & 0xff, m & 0xff, len);
		return -EINVAL;
	}

	p = skip_ws(e);
	if (*p == '\0' || *p == '#') {
		set_err(err, errlen, "missing port after the prefix");
		return -EINVAL;
	}
	e = token_end(p, "");
	if (!parse_uint(p, e, ROUTES_PORT_MAX, &port)) {
		set_err(err, errlen, "bad port '%.*s'", token_len(p, e), p);
		return -EINVAL;
	}
	if (max_port > ROUTES_PORT_MAX)
		max_port = ROUTES_PORT_MAX;
	if (port > max_port) {
		set_err(err, errlen, "port '%.*s' out of range (0..%u)", token_len(p, e), p,
			max_port);
		return -EINVAL;
	}

	p = skip_ws(e);
	if (*p != '\0' && *p != '#') {
		e = p + strlen(p);
		while (is_ws(e[-1]))
			e--;
		set_err(err, errlen, "trailing garbage '%.*s'", token_len(p, e), p);
		return -EINVAL;
	}
	r->ip = ip;
	r->depth = (uint8_t)len;
	r->port = (uint16_t)port;
	return 1;
}

/* Routes gathered so far while reading one file. */
struct route_vec {
	struct route *v;
	unsigned n, cap;
};

/* Order by prefix, then by line: the entries of one prefix end up side by side, first line
 * first. */
static int route_cmp(const void *a, const void *b)
{
	const struct route *x = a, *y = b;

	if (x->ip != y->ip)
		return x->ip < y->ip ? -1 : 1;
	if (x->depth != y->depth)
		return x->depth < y->depth ? -1 : 1;
	return x->line < y->line ? -1 : x->line > y->line;
}

static void format_prefix(char *buf, size_t len, const struct route *r)
{
	snprintf(buf, len, "%u.%u.%u.%u/%u", r->ip >> 24, (r->ip >> 16) & 0xff,
		 (r->ip >> 8) & 0xff, r->ip & 0xff, r->depth);
}

/*
 * A prefix named on two lines with different ports is ambiguous: -EINVAL, naming the second
 * of the earliest such pair. The same prefix and port again is harmless: counted and the first
 * repeat quoted in @warn. Sorting a copy keeps this O(n log n) for big tables.
 */
static int check_repeats(const struct route_vec *rv, const char *name, char *err, size_t errlen,
			 char *warn, size_t warnlen)
{
	const struct route *conflict = NULL, *conflict_first = NULL;
	const struct route *repeat = NULL, *repeat_first = NULL;
	unsigned repeats = 0;
	struct route *s;
	char pfx[24];

	if (rv->n < 2)
		return 0;
	s = malloc(rv->n * sizeof(*s));
	if (s == NULL) {
		set_err(err, errlen, "%s: out of memory", name);
		return -ENOMEM;
	}
	memcpy(s, rv->v, rv->n * sizeof(*s));
	qsort(s, rv->n, sizeof(*s), route_cmp);
	for (unsigned i = 1, first = 0; i < rv->n; i++) {
		if (s[i].ip != s[first].ip || s[i].depth != s[first].depth) {
			first = i;
			continue;
		}
		if (s[i].port != s[first].port) {
			if (conflict == NULL || s[i].line < conflict->line) {
				conflict = &s[i];
				conflict_first = &s[first];
			}
		} else {
			repeats++;
			if (repeat == NULL || s[i].line < repeat->line) {
				repeat = &s[i];
				repeat_first = &s[first];
			}
		}
	}
	if (conflict != NULL) {
		format_prefix(pfx, sizeof(pfx), conflict);
		set_err(err, errlen, "%s:%u: %s again with port %u (line %u gives port %u)", name,
			conflict->line, pfx, conflict->port, conflict_first->line,
			conflict_first->port);
	} else if (repeat != NULL) {
		format_prefix(pfx, sizeof(pfx), repeat);
		set_err(warn, warnlen, "%s:%u: %s repeats line %u (same port %u); %u repeated %s",
			name, repeat->line, pfx, repeat_first->line, repeat->port, repeats,
			repeats == 1 ? "line" : "lines in all");
	}
	free(s);
	return conflict != NULL ? -EINVAL : 0;
}

/* Parse line @lineno of @name into @rv. 0, -EINVAL with a located message, or -ENOMEM. */
static int vec_add_line(struct route_vec *rv, const char *line, const char *name, unsigned lineno,
			unsigned max_port, char *err, size_t errlen)
{
	char msg[160];
	struct route r;
	int ret = routes_parse_line(line, max_port, &r, msg, sizeof(msg));

	if (ret < 0) {
		set_err(err, errlen, "%s:%u: %s", name, lineno, msg);
		return ret;
	}
	if (ret == 0)
		return 0;
	r.line = lineno;
	if (rv->n == rv->cap) {
		unsigned cap = rv->cap ? rv->cap * 2 : 64;
		struct route *v = realloc(rv->v, cap * sizeof(*v));

		if (!v) {
			set_err(err, errlen, "%s:%u: out of memory", name, lineno);
			return -ENOMEM;
		}
		rv->v = v;
		rv->cap = cap;
	}
	rv->v[rv->n++] = r;
	return 0;
}

static int vec_finish(struct route_vec *rv, int ret, const char *name, struct route **out,
		      unsigned *n, char *err, size_t errlen, char *warn, size_t warnlen)
{
	set_err(warn, warnlen, "%s", "");
	if (ret == 0)
		ret = check_repeats(rv, name, err, errlen, warn, warnlen);
	if (ret < 0) {
		free(rv->v);
		return ret;
	}
	if (rv->n == 0) {
		free(rv->v);
		rv->v = NULL;
	}
	*out = rv->v;
	*n = rv->n;
	return 0;
}

int routes_parse(const char *text, const char *name, unsigned max_port, struct route **out,
		 unsigned *n, char *err, size_t errlen, char *warn, size_t warnlen)
{
	struct route_vec rv = {0};
	char *line = NULL;
	size_t cap = 0;
	unsigned lineno = 0;
	int ret = 0;

	while (*text && ret == 0) {
		const char *nl = strchr(text, '\n');
		size_t len = nl ? (size_t)(nl - text) : strlen(text);

		/* Lines are copied so that routes_parse_line sees one NUL-terminated line. */
		if (len + 1 > cap) {
			char *l = realloc(line, len + 1);

			if (!l) {
				ret = -ENOMEM;
				set_err(err, errlen, "%s:%u: out of memory", name, lineno + 1);
				break;
			}
			line = l;
			cap = len + 1;
		}
		memcpy(line, text, len);
		line[len] = '\0';
		ret = vec_add_line(&rv, line, name, ++lineno, max_port, err, errlen);
		text += len + (nl != NULL);
	}
	free(line);
	return vec_finish(&rv, ret, name, out, n, err, errlen, warn, warnlen);
}

int routes_load(const char *path, unsigned max_port, struct route **out, unsigned *n, char *err,
		size_t errlen, char *warn, size_t warnlen)
{
	struct route_vec rv = {0};
	char line[ROUTES_LINE_MAX + 1];
	unsigned lineno = 0;
	int ret = 0, c = 0;
	FILE *f = fopen(path, "r");

	if (!f) {
		ret = -errno;
		set_err(err, errlen, "%s: %s", path, strerror(-ret));
		return ret;
	}
	/* Read line by line with a bound: a file without newlines (/dev/zero, a binary) is an
	 * error on its first line, not an unbounded allocation. */
	errno = 0;
	while (ret == 0 && c != EOF) {
		size_t len = 0;

		while ((c = getc(f)) != EOF && c != '\n') {
			if (c == '\0') {
				ret = -EINVAL;
				set_err(err, errlen, "%s:%u: not a text file (NUL byte)", path,
					lineno + 1);
				break;
			}
			if (len == ROUTES_LINE_MAX) {
				ret = -EINVAL;
				set_err(err, errlen, "%s:%u: line longer than %u characters", path,
					lineno + 1, ROUTES_LINE_MAX);
				break;
			}
			line[len++] = (char)c;
		}
		if (ret < 0 || (c == EOF && len == 0))
			break;
		line[len] = '\0';
		ret = vec_add_line(&rv, line, path, ++lineno, max_port, err, errlen);
	}
	if (ret == 0 && ferror(f)) {
		ret = errno ? -errno : -EIO;
		set_err(err, errlen, "%s: %s", path, strerror(-ret));
	}
	fclose(f);
	return vec_finish(&rv, ret, path, out, n, err, errlen, warn, warnlen);
}

int routes_default(unsigned nports, struct route **out, unsigned *n)
{
	struct route *v;

	if (nports == 0 || nports > 256)
		return -EINVAL;
	v = calloc(nports, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (unsigned p = 0; p < nports; p++)
		v[p] = (struct route){.ip = 10u << 24 | p << 16, .depth = 16, .port = (uint16_t)p};
	*out = v;
	*n = nports;
	return 0;
}
