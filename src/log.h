/* SPDX-License-Identifier: BSD-3-Clause */
/* Internal logging: every library message goes through tide_log() to the user's handler. */
#ifndef TIDE_SRC_LOG_H
#define TIDE_SRC_LOG_H

#include <tide/log.h>

void tide_log(enum tide_log_level level, const char *component, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#define TIDE_LOG_ERR_(comp, ...) tide_log(TIDE_LOG_ERR, comp, __VA_ARGS__)
#define TIDE_LOG_WARN_(comp, ...) tide_log(TIDE_LOG_WARNING, comp, __VA_ARGS__)
#define TIDE_LOG_INFO_(comp, ...) tide_log(TIDE_LOG_INFO, comp, __VA_ARGS__)
#define TIDE_LOG_DEBUG_(comp, ...) tide_log(TIDE_LOG_DEBUG, comp, __VA_ARGS__)

#endif
