/* SPDX-License-Identifier: BSD-3-Clause */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "log.h"

static void default_handler(enum tide_log_level level, const char *component, const char *msg,
			    void *user)
{
	(void)user;
	fprintf(stderr, "tide: %s %s: %s\n", tide_log_level_name(level), component, msg);
}

static tide_log_fn handler = default_handler;
static void *handler_user;
static int current_level = -1; /* -1: not yet read from the environment */

/* The level TIDE_LOG_LEVEL names; *@bad when it is set to something else (notice then). */
static int level_from_env(bool *bad)
{
	static const char *const names[] = {"err", "warning", "notice", "info", "debug"};
	const char *v = getenv("TIDE_LOG_LEVEL");

	*bad = false;
	if (v == NULL || *v == '\0')
		return TIDE_LOG_NOTICE;
	if (v[0] >= '3' && v[0] <= '7' && v[1] == '\0')
		return v[0] - '0';
	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcasecmp(v, names[i]) == 0)
			return TIDE_LOG_ERR + (int)i;
	*bad = true;
	return TIDE_LOG_NOTICE;
}

const char *tide_log_level_name(enum tide_log_level level)
{
	switch (level) {
	case TIDE_LOG_ERR: return "ERR";
	case TIDE_LOG_WARNING: return "WARNING";
	case TIDE_LOG_NOTICE: return "NOTICE";
	case TIDE_LOG_INFO: return "INFO";
	case TIDE_LOG_DEBUG: return "DEBUG";
	}
	return "?";
}

void tide_log_set_handler(tide_log_fn fn, void *user)
{
	handler = fn ? fn : default_handler;
	handler_user = fn ? user : NULL;
}

void tide_log_set_level(enum tide_log_level level)
{
	__atomic_store_n(&current_level, (int)level, __ATOMIC_RELAXED);
}

enum tide_log_level tide_log_get_level(void)
{
	int l = __atomic_load_n(&current_level, __ATOMIC_RELAXED);

	if (l < 0) {
		int unset = -1;
		bool bad;

		l = level_from_env(&bad);
		/* Only the thread that sets it says that the value was not understood. */
		if (__atomic_compare_exchange_n(&current_level, &unset, l, false, __ATOMIC_RELAXED,
						__ATOMIC_RELAXED)) {
			if (bad)
				tide_log(TIDE_LOG_WARNING, "log",
					 "TIDE_LOG_LEVEL=%s is not a level (err, warning, notice, "
					 "info, debug or 3..7): notice",
					 getenv("TIDE_LOG_LEVEL"));
		} else {
			l = unset;
		}
	}
	return (enum tide_log_level)l;
}

int env_flag(const char *name, bool *val)
{
	const char *v = getenv(name);

	if (v == NULL || *v == '\0')
		return 0;
	if ((v[0] == '0' || v[0] == '1') && v[1] == '\0') {
		*val = v[0] == '1';
		return 1;
	}
	tide_log(TIDE_LOG_WARNING, "env", "%s=%s is not 0 or 1: ignored", name, v);
	return -1;
}

void tide_log(enum tide_log_level level, const char *component, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if ((int)level > (int)tide_log_get_level())
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	handler(level, component, msg, handler_user);
}
