/* SPDX-License-Identifier: BSD-3-Clause */
#include <stdarg.h>
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

static int level_from_env(void)
{
	static const char *const names[] = {"err", "warning", "notice", "info", "debug"};
	const char *v = getenv("TIDE_LOG_LEVEL");

	if (v == NULL || *v == '\0')
		return TIDE_LOG_NOTICE;
	if (v[0] >= '3' && v[0] <= '7' && v[1] == '\0')
		return v[0] - '0';
	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcasecmp(v, names[i]) == 0)
			return TIDE_LOG_ERR + (int)i;
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
		l = level_from_env();
		__atomic_store_n(&current_level, l, __ATOMIC_RELAXED);
	}
	return (enum tide_log_level)l;
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
