/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Spec strings: "driver:key=value,key=value". Values cannot contain ','. Every lookup marks
 * its key used; a key nobody used is an error ("unknown key"), so typos never pass silently.
 * Value errors are logged as "<driver>: <key>=<value>: <why>".
 */
#ifndef TIDE_SRC_KVARGS_H
#define TIDE_SRC_KVARGS_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#define TIDE_KV_MAX 32

struct tide_kv {
	char *key;
	char *val;
	bool used;
};

struct tide_kvargs {
	char driver[32];
	char *buf; /* owned copy of the spec */
	unsigned n;
	struct tide_kv kv[TIDE_KV_MAX];
};

/* Split a spec. Returns 0 or -EINVAL (logged: missing driver, empty key, too many keys,
 * repeated key). */
int tide_kvargs_parse(const char *spec, struct tide_kvargs *kv);
void tide_kvargs_free(struct tide_kvargs *kv);

/* The value of @key, or NULL; marks it used. */
const char *tide_kvargs_get(struct tide_kvargs *kv, const char *key);

/*
 * The one number syntax of tide's spec strings and of tide-fwd's options: plain decimal
 * digits, nothing else. No sign, no space, no "0x" or octal: a leading zero is refused
 * ("010" would be 8 to strtoul and 10 to a reader), except "0" itself. Returns 0 and the
 * value in *@out; -EINVAL when @s is not such a number, -ERANGE when it is one outside
 * [@min, @max] (or above UINT64_MAX). *@out is untouched on error.
 *
 * Inline in this header so that tide-fwd, which links only the public library, parses its
 * options with exactly this code.
 */
static inline int tide_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;
	bool big = false;

	if (s == NULL || *s == '\0' || (s[0] == '0' && s[1] != '\0'))
		return -EINVAL;
	for (const char *c = s; *c; c++) {
		unsigned d = (unsigned)(*c - '0');

		if (d > 9)
			return -EINVAL;
		if (v > (UINT64_MAX - d) / 10)
			big = true;
		else
			v = v * 10 + d;
	}
	if (big || v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

/* Typed getters: absent key -> *out = def and 0; bad value -> -EINVAL (logged). */
int tide_kvargs_uint(struct tide_kvargs *kv, const char *key, uint64_t def, uint64_t min,
		     uint64_t max, uint64_t *out);
int tide_kvargs_bool(struct tide_kvargs *kv, const char *key, bool def, bool *out);
/* @choices is NULL-terminated; *out is the index. */
int tide_kvargs_choice(struct tide_kvargs *kv, const char *key, const char *const *choices,
		       unsigned def, unsigned *out);

/*
 * A benchmark-only boolean key (TIDE_BENCH_VARIANTS, meson option bench_variants). In a build
 * with the option: tide_kvargs_bool() with default false. Without it: *@out = false, and the
 * key given at all is -EINVAL, logged as "<driver>: <key>: a benchmark key, only in builds
 * with -Dbench_variants=true".
 */
int tide_kvargs_bench(struct tide_kvargs *kv, const char *key, bool *out);

/* -EINVAL (logged, naming the key and listing @known) if any key was never looked up. */
int tide_kvargs_check_unused(const struct tide_kvargs *kv, const char *known);

#endif
