/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Spec strings: "driver:key=value,key=value". Values cannot contain ','. Every lookup marks
 * its key used; a key nobody used is an error ("unknown key"), so typos never pass silently.
 * Value errors are logged as "<driver>: <key>=<value>: <why>".
 */
#ifndef TIDE_SRC_KVARGS_H
#define TIDE_SRC_KVARGS_H

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

/* Typed getters: absent key -> *out = def and 0; bad value -> -EINVAL (logged). */
int tide_kvargs_uint(struct tide_kvargs *kv, const char *key, uint64_t def, uint64_t min,
		     uint64_t max, uint64_t *out);
int tide_kvargs_bool(struct tide_kvargs *kv, const char *key, bool def, bool *out);
/* @choices is NULL-terminated; *out is the index. */
int tide_kvargs_choice(struct tide_kvargs *kv, const char *key, const char *const *choices,
		       unsigned def, unsigned *out);

/* -EINVAL (logged, naming the key and listing @known) if any key was never looked up. */
int tide_kvargs_check_unused(const struct tide_kvargs *kv, const char *known);

#endif
