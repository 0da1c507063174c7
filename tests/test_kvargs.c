/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The one number syntax of spec strings and tide-fwd's options (src/kvargs.h), checked
 * against a reference that is trivially right: a value is accepted only when it prints back
 * as the same decimal string. And the spec-string getters built on it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "kvargs.h"
#include "testutil.h"

static void test_table(void **state)
{
	static const struct {
		const char *s;
		uint64_t min, max;
		int rc;
		uint64_t v;
	} t[] = {
	    {"0", 0, 10, 0, 0},
	    {"7", 0, 10, 0, 7},
	    {"10", 0, 10, 0, 10},
	    {"11", 0, 10, -ERANGE, 0},
	    {"0", 1, 10, -ERANGE, 0},
	    {"010", 0, 100, -EINVAL, 0}, /* octal to strtoul(.., 0) */
	    {"00", 0, 100, -EINVAL, 0},
	    {"0x2", 0, 100, -EINVAL, 0},
	    {"+2", 0, 100, -EINVAL, 0},
	    {"-2", 0, 100, -EINVAL, 0},
	    {"-0", 0, 100, -EINVAL, 0},
	    {" 2", 0, 100, -EINVAL, 0},
	    {"2 ", 0, 100, -EINVAL, 0},
	    {"\t2", 0, 100, -EINVAL, 0},
	    {"", 0, 100, -EINVAL, 0},
	    {"2k", 0, 100, -EINVAL, 0},
	    {"1e3", 0, 10000, -EINVAL, 0},
	    {"1.0", 0, 100, -EINVAL, 0},
	    {"18446744073709551615", 0, UINT64_MAX, 0, UINT64_MAX},
	    {"18446744073709551616", 0, UINT64_MAX, -ERANGE, 0},
	    {"99999999999999999999999", 0, UINT64_MAX, -ERANGE, 0},
	    {"4294967296", 0, UINT32_MAX, -ERANGE, 0},
	};

	(void)state;
	for (unsigned i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		uint64_t v = 12345;
		int rc = tide_parse_u64(t[i].s, t[i].min, t[i].max, &v);

		if (rc != t[i].rc)
			fail_msg("'%s' in %" PRIu64 "..%" PRIu64 ": rc %d, want %d", t[i].s, t[i].min,
				 t[i].max, rc, t[i].rc);
		assert_int_equal(v, rc == 0 ? t[i].v : 12345); /* untouched on error */
	}
	assert_int_equal(tide_parse_u64(NULL, 0, 1, &(uint64_t){0}), -EINVAL);
}

/* Random strings over a small alphabet: accepted exactly when they round-trip. */
static void test_reference(void **state)
{
	static const char alpha[] = "0123456789 +-x";
	uint64_t seed = 0x5eed;

	(void)state;
	for (unsigned i = 0; i < 200000; i++) {
		char s[24], back[32];
		unsigned len = (unsigned)(test_rand(&seed) % 22) + 1;
		uint64_t v = 0;
		bool want;
		int rc;

		for (unsigned k = 0; k < len; k++) {
			unsigned r = (unsigned)(test_rand(&seed) % 44); /* mostly digits */

			s[k] = r < 40 ? alpha[r % 10] : alpha[10 + r - 40];
		}
		s[len] = '\0';
		rc = tide_parse_u64(s, 0, UINT64_MAX, &v);
		if (rc == 0) {
			snprintf(back, sizeof(back), "%" PRIu64, v);
			if (strcmp(back, s) != 0)
				fail_msg("'%s' accepted as %s", s, back);
		} else {
			/* Refused: it must not be a canonical decimal that fits. */
			want = strspn(s, "0123456789") == len && (s[0] != '0' || len == 1) &&
			       (len < 20 || (len == 20 && strcmp(s, "18446744073709551615") <= 0));
			if (want)
				fail_msg("'%s' refused (%d)", s, rc);
		}
	}
}

static void test_getters(void **state)
{
	struct tide_kvargs kv;
	uint64_t v;

	(void)state;
	assert_int_equal(tide_kvargs_parse("x:a=010,b=12,c=0x1,d= 3", &kv), 0);
	assert_int_equal(tide_kvargs_uint(&kv, "a", 1, 0, 100, &v), -EINVAL);
	assert_int_equal(tide_kvargs_uint(&kv, "b", 1, 0, 100, &v), 0);
	assert_int_equal(v, 12);
	assert_int_equal(tide_kvargs_uint(&kv, "b", 1, 13, 100, &v), -EINVAL);
	assert_int_equal(tide_kvargs_uint(&kv, "c", 1, 0, 100, &v), -EINVAL);
	assert_int_equal(tide_kvargs_uint(&kv, "d", 1, 0, 100, &v), -EINVAL);
	assert_int_equal(tide_kvargs_uint(&kv, "none", 42, 0, 100, &v), 0);
	assert_int_equal(v, 42);
	tide_kvargs_free(&kv);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_table),
	    cmocka_unit_test(test_reference),
	    cmocka_unit_test(test_getters),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
