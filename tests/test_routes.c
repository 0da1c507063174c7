/* SPDX-License-Identifier: BSD-3-Clause */
/* Route file parser (apps/tide-fwd/routes.c): good lines, each kind of bad line, files. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../apps/tide-fwd/routes.h"
#include "testutil.h"
#include "tmp_util.h"

static void test_good_lines(void **state)
{
	static const struct {
		const char *line;
		uint32_t ip;
		uint8_t depth;
		uint16_t port;
	} good[] = {
	    {"10.1.0.0/16 1", 0x0a010000, 16, 1},
	    {"10.1.0.0/16 1\n", 0x0a010000, 16, 1},
	    {"  \t10.1.0.0/16\t\t1  \r\n", 0x0a010000, 16, 1},
	    {"0.0.0.0/0 0", 0, 0, 0},
	    {"255.255.255.255/32 7", 0xffffffff, 32, 7},
	    {"192.168.1.128/25 3 # lab", 0xc0a80180, 25, 3},
	    {"192.168.1.128/25 3#lab", 0xc0a80180, 25, 3},
	    {"010.001.000.000/16 2", 0x0a010000, 16, 2},
	    {"10.0.0.0/8 00012", 0x0a000000, 8, 12},
	    {"10.0.0.0/08 15", 0x0a000000, 8, 15},
	};
	struct route r;
	char err[128];

	(void)state;
	for (unsigned i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		memset(&r, 0xff, sizeof(r));
		err[0] = '\0';
		if (routes_parse_line(good[i].line, 15, &r, err, sizeof(err)) != 1)
			fail_msg("'%s' rejected: %s", good[i].line, err);
		assert_int_equal(r.ip, good[i].ip);
		assert_int_equal(r.depth, good[i].depth);
		assert_int_equal(r.port, good[i].port);
	}
}

static void test_blank_and_comment(void **state)
{
	static const char *const lines[] = {"", "\n", "   \t \r\n", "# comment", "  # 1.2.3.4/8 1"};
	struct route r = {.ip = 123, .depth = 4, .port = 5};

	(void)state;
	for (unsigned i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
		assert_int_equal(routes_parse_line(lines[i], 15, &r, NULL, 0), 0);
	assert_int_equal(r.ip, 123);
	assert_int_equal(r.depth, 4);
	assert_int_equal(r.port, 5);
}

/* One bad line of each kind, and the words its message must contain. */
static const struct {
	const char *line;
	const char *msg;
} bad[] = {
    {"10.1.0/16 1", "bad address '10.1.0'"},
    {"10.1.0.256/32 1", "bad address '10.1.0.256'"},
    {"10.1.0.0.0/16 1", "bad address '10.1.0.0.0'"},
    {"10..0.0/16 1", "bad address '10..0.0'"},
    {"10.1.0.0001/32 1", "bad address '10.1.0.0001'"},
    {"-10.1.0.0/16 1", "bad address '-10.1.0.0'"},
    {"host/16 1", "bad address 'host'"},
    {"/16 1", "bad address ''"},
    {"10.1.0.0 1", "missing prefix length after '10.1.0.0'"},
    {"10.1.0.0 /16 1", "missing prefix length after '10.1.0.0'"},
    {"10.1.0.0/ 16 1", "missing prefix length after '/'"},
    {"10.1.0.0/", "missing prefix length after '/'"},
    {"10.1.0.0/x 1", "bad prefix length 'x'"},
    {"10.1.0.0/-1 1", "bad prefix length '-1'"},
    {"10.1.0.0/33 1", "prefix length '33' > 32"},
    {"10.1.0.0/99999999999 1", "prefix length '99999999999' > 32"},
    {"10.1.0.0/15 1", "bits set beyond /15 (did you mean 10.0.0.0/15?)"},
    {"10.1.0.0/16", "missing port"},
    {"10.1.0.0/16   # port 1", "missing port"},
    {"10.1.0.0/16 one", "bad port 'one'"},
    {"10.1.0.0/16 -1", "bad port '-1'"},
    {"10.1.0.0/16 16", "port '16' out of range (0..15)"},
    {"10.1.0.0/16 99999999999", "port '99999999999' out of range (0..15)"},
    {"10.1.0.0/16 1 2", "trailing garbage '2'"},
    {"10.1.0.0/16 1x", "bad port '1x'"},
    {"10.1.0.0/16 1 via 10.0.0.1 # x", "trailing garbage 'via 10.0.0.1 # x'"},
};

static void test_bad_lines(void **state)
{
	struct route r = {.ip = 1, .depth = 2, .port = 3};
	char err[128];

	(void)state;
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		assert_int_equal(routes_parse_line(bad[i].line, 15, &r, err, sizeof(err)), -EINVAL);
		if (!strstr(err, bad[i].msg))
			fail_msg("'%s': message '%s' lacks '%s'", bad[i].line, err, bad[i].msg);
	}
	assert_int_equal(r.ip, 1);
	assert_int_equal(r.port, 3);
	/* No message buffer is fine; a tiny one is truncated, not overrun. */
	assert_int_equal(routes_parse_line("x", 15, &r, NULL, 0), -EINVAL);
	memset(err, 'z', sizeof(err));
	assert_int_equal(routes_parse_line("x", 15, &r, err, 4), -EINVAL);
	assert_int_equal(err[3], '\0');
	assert_int_equal(err[4], 'z');
}

/* The port range follows max_port, and no port can exceed 16 bits. */
static void test_port_range(void **state)
{
	struct route r;

	(void)state;
	assert_int_equal(routes_parse_line("1.0.0.0/8 0", 0, &r, NULL, 0), 1);
	assert_int_equal(routes_parse_line("1.0.0.0/8 1", 0, &r, NULL, 0), -EINVAL);
	assert_int_equal(routes_parse_line("1.0.0.0/8 65535", ~0u, &r, NULL, 0), 1);
	assert_int_equal(r.port, 65535);
	assert_int_equal(routes_parse_line("1.0.0.0/8 65536", ~0u, &r, NULL, 0), -EINVAL);
}

/* Every bad line, placed at line 4 of a text, is reported as NAME:4. */
static void test_parse_text(void **state)
{
	const char *head = "# routes\n\n10.0.0.0/16 0\n";
	struct route *v = (struct route *)1;
	unsigned n = 77;
	char text[256], err[256], want[160];

	(void)state;
	assert_int_equal(routes_parse("", "t.routes", 15, &v, &n, err, sizeof(err), NULL, 0), 0);
	assert_null(v);
	assert_int_equal(n, 0);

	snprintf(text, sizeof(text), "%s  10.1.0.0/16 1\n\n10.2.2.0/24\t2 # two\n1.2.3.4/32 15",
		 head);
	assert_int_equal(routes_parse(text, "t.routes", 15, &v, &n, err, sizeof(err), NULL, 0), 0);
	assert_int_equal(n, 4);
	assert_int_equal(v[0].ip, 0x0a000000);
	assert_int_equal(v[1].ip, 0x0a010000);
	assert_int_equal(v[2].ip, 0x0a020200);
	assert_int_equal(v[2].depth, 24);
	assert_int_equal(v[2].port, 2);
	assert_int_equal(v[3].ip, 0x01020304);
	assert_int_equal(v[3].port, 15);
	free(v);

	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		v = (struct route *)1;
		n = 77;
		snprintf(text, sizeof(text), "%s%s\n10.9.0.0/16 1\n", head, bad[i].line);
		assert_int_equal(routes_parse(text, "t.routes", 15, &v, &n, err, sizeof(err), NULL, 0),
				 -EINVAL);
		snprintf(want, sizeof(want), "t.routes:4: ");
		if (strncmp(err, want, strlen(want)) || !strstr(err, bad[i].msg))
			fail_msg("'%s': message '%s'", bad[i].line, err);
		assert_ptr_equal(v, (struct route *)1);
		assert_int_equal(n, 77);
	}
}

/* A new temporary file at @path (a mkstemp template), open for writing. */
static FILE *temp_file(char *path)
{
	int fd = mkstemp(path);
	FILE *f;

	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	assert_non_null(f);
	return f;
}

static void test_load_file(void **state)
{
	char path[256];
	struct route *v = NULL;
	unsigned n = 0;
	char err[256];
	FILE *f;

	(void)state;
	snprintf(path, sizeof(path), "%s/tide-routes-XXXXXX", test_tmp());
	f = temp_file(path);
	fputs("# test table\n10.0.0.0/16 0\n10.1.0.0/16 1\r\n\n192.168.0.0/24 2", f);
	for (unsigned i = 0; i < 1000; i++)
		fprintf(f, "\n172.%u.%u.0/24 %u", 16 + i / 256, i % 256, i % 3);
	fclose(f);

	assert_int_equal(routes_load(path, 2, &v, &n, err, sizeof(err), NULL, 0), 0);
	assert_int_equal(n, 1003);
	assert_int_equal(v[1].ip, 0x0a010000);
	assert_int_equal(v[1].port, 1);
	assert_int_equal(v[2].ip, 0xc0a80000);
	assert_int_equal(v[1002].ip, 0xac13e700); /* 172.19.231.0 */
	assert_int_equal(v[1002].port, 999 % 3);
	free(v);

	/* Port 2 is out of range with max_port 1: first reported at line 5. */
	v = NULL;
	assert_int_equal(routes_load(path, 1, &v, &n, err, sizeof(err), NULL, 0), -EINVAL);
	assert_null(v);
	assert_non_null(strstr(err, ":5: port '2' out of range (0..1)"));
	assert_int_equal(strncmp(err, path, strlen(path)), 0);

	unlink(path);
	assert_int_equal(routes_load(path, 1, &v, &n, err, sizeof(err), NULL, 0), -ENOENT);
	assert_int_equal(strncmp(err, path, strlen(path)), 0);
	assert_null(v);
}

static void test_default(void **state)
{
	struct route *v;
	unsigned n;

	(void)state;
	assert_int_equal(routes_default(0, &v, &n), -EINVAL);
	assert_int_equal(routes_default(257, &v, &n), -EINVAL);
	assert_int_equal(routes_default(3, &v, &n), 0);
	assert_int_equal(n, 3);
	for (unsigned p = 0; p < 3; p++) {
		assert_int_equal(v[p].ip, 0x0a000000 | p << 16);
		assert_int_equal(v[p].depth, 16);
		assert_int_equal(v[p].port, p);
	}
	free(v);
	assert_int_equal(routes_default(256, &v, &n), 0);
	assert_int_equal(v[255].ip, 0x0aff0000);
	for (unsigned p = 0; p < n; p++)
		assert_int_not_equal(v[p].depth, 0); /* no default route */
	free(v);
}

/* Files that are not route tables: refused on the line that shows it, not read forever. */
static void test_load_not_text(void **state)
{
	char path[256];
	struct route *v = NULL;
	unsigned n = 0;
	char err[256];
	FILE *f;

	(void)state;
	snprintf(path, sizeof(path), "%s/tide-routes-XXXXXX", test_tmp());
	assert_int_equal(routes_load("/dev/zero", 1, &v, &n, err, sizeof(err), NULL, 0), -EINVAL);
	assert_non_null(strstr(err, "/dev/zero:1: not a text file (NUL byte)"));
	assert_null(v);

	f = temp_file(path);
	fputs("10.0.0.0/16 0\n", f);
	for (unsigned i = 0; i < ROUTES_LINE_MAX + 1; i++) /* one character too many */
		fputc(i ? 'x' : '#', f);
	fputs("\n", f);
	fclose(f);
	assert_int_equal(routes_load(path, 1, &v, &n, err, sizeof(err), NULL, 0), -EINVAL);
	assert_non_null(strstr(err, ":2: line longer than"));
	assert_null(v);

	/* Exactly the limit is a line like any other. */
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("10.0.0.0/16 0\n", f);
	for (unsigned i = 0; i < ROUTES_LINE_MAX; i++)
		fputc(i ? ' ' : '#', f);
	fputs("\n10.1.0.0/16 1\n10.2.0.0/16 1", f);
	fputc('\0', f);
	fputc('\n', f);
	fclose(f);
	assert_int_equal(routes_load(path, 1, &v, &n, err, sizeof(err), NULL, 0), -EINVAL);
	assert_non_null(strstr(err, ":4: not a text file (NUL byte)"));
	assert_int_equal(truncate(path, (off_t)(strlen("10.0.0.0/16 0\n") + ROUTES_LINE_MAX + 1 +
					       strlen("10.1.0.0/16 1\n"))),
			 0);
	assert_int_equal(routes_load(path, 1, &v, &n, err, sizeof(err), NULL, 0), 0);
	assert_int_equal(n, 2);
	free(v);
	unlink(path);
}

/* One prefix on two lines: different ports are refused at the second line (the earliest such
 * line when there are several); the same port again is kept, with a warning. */
static void test_repeated_prefix(void **state)
{
	struct route *v = (struct route *)1;
	unsigned n = 77;
	char err[256], warn[256];
	const char *conflict = "10.0.0.0/16 0\n"
			       "10.1.0.0/16 1\n"
			       "10.2.0.0/16 2\n"
			       "10.0.0.0/8 1\n"  /* another length: another prefix */
			       "10.2.0.0/16 2\n" /* exact repeat of line 3 */
			       "10.1.0.0/16 0\n" /* line 2 said port 1 */
			       "10.0.0.0/16 2\n";

	(void)state;
	assert_int_equal(routes_parse(conflict, "t.routes", 15, &v, &n, err, sizeof(err), warn,
				      sizeof(warn)),
			 -EINVAL);
	assert_string_equal(err, "t.routes:6: 10.1.0.0/16 again with port 0 (line 2 gives port 1)");
	assert_ptr_equal(v, (struct route *)1);
	assert_int_equal(n, 77);

	/* Exact repeats only: accepted, every line kept, the first repeat named. */
	assert_int_equal(routes_parse("10.2.0.0/16 2\n10.1.0.0/16 1\n# x\n10.2.0.0/16 2\n"
				      "10.1.0.0/16 1\n10.2.0.0/16 2\n",
				      "t.routes", 15, &v, &n, err, sizeof(err), warn, sizeof(warn)),
			 0);
	assert_int_equal(n, 5);
	assert_int_equal(v[3].line, 5);
	free(v);
	assert_string_equal(warn, "t.routes:4: 10.2.0.0/16 repeats line 1 (same port 2); "
				  "3 repeated lines in all");

	/* No repeats: no warning left over from an earlier call. */
	assert_int_equal(routes_parse("10.2.0.0/16 2\n10.2.0.0/24 2\n", "t.routes", 15, &v, &n,
				      err, sizeof(err), warn, sizeof(warn)),
			 0);
	assert_string_equal(warn, "");
	free(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_good_lines), cmocka_unit_test(test_blank_and_comment),
	    cmocka_unit_test(test_bad_lines),  cmocka_unit_test(test_port_range),
	    cmocka_unit_test(test_parse_text), cmocka_unit_test(test_load_file),
	    cmocka_unit_test(test_default),	   cmocka_unit_test(test_load_not_text),
	    cmocka_unit_test(test_repeated_prefix),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
