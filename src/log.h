/* SPDX-License-Identifier: BSD-3-Clause */
/* Internal logging: every library message goes through tide_log() to the user's handler. */
#ifndef TIDE_SRC_LOG_H
#define TIDE_SRC_LOG_H

#include <stdbool.h>

#include <tide/log.h>

void tide_log(enum tide_log_level level, const char *component, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * A 0|1 setting from the environment (TIDE_POOL_DEBUG, TIDE_PREFETCHW): 1 with *@val set
 * when @name is "0" or "1"; 0 when it is unset or empty; -1, after a warning naming the
 * value, for anything else (*@val untouched: the caller keeps its default).
 */
int env_flag(const char *name, bool *val);

#define TIDE_LOG_ERR_(comp, ...) tide_log(TIDE_LOG_ERR, comp, __VA_ARGS__)
#define TIDE_LOG_WARN_(comp, ...) tide_log(TIDE_LOG_WARNING, comp, __VA_ARGS__)
#define TIDE_LOG_INFO_(comp, ...) tide_log(TIDE_LOG_INFO, comp, __VA_ARGS__)
#define TIDE_LOG_DEBUG_(comp, ...) tide_log(TIDE_LOG_DEBUG, comp, __VA_ARGS__)

#endif
