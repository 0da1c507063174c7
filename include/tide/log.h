/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tide/log.h - the library's only way of saying anything.
 *
 * The library never prints, exits or aborts on its own: every message goes through one
 * handler. The default handler writes "tide: LEVEL component: message" to stderr for
 * messages at or above the current level. The level starts at TIDE_LOG_NOTICE, or at the
 * value of the TIDE_LOG_LEVEL environment variable (a number 3..7 or a name such as "debug";
 * another value: a warning, and notice).
 */
#ifndef TIDE_LOG_H
#define TIDE_LOG_H

#include <tide/common.h>

#ifdef __cplusplus
extern "C" {
#endif

enum tide_log_level {
	TIDE_LOG_ERR = 3,
	TIDE_LOG_WARNING = 4,
	TIDE_LOG_NOTICE = 5,
	TIDE_LOG_INFO = 6,
	TIDE_LOG_DEBUG = 7,
};

/*
 * A log handler. @component names the part of tide that speaks ("pool", "simnic", ...),
 * @msg is one line without a trailing newline. Called from whichever thread logs; it must
 * be thread-safe. Only messages at or above the current level reach it.
 */
typedef void (*tide_log_fn)(enum tide_log_level level, const char *component, const char *msg,
			    void *user);

/* Replace the handler; NULL restores the default. Not thread-safe against logging threads. */
TIDE_EXPORT void tide_log_set_handler(tide_log_fn fn, void *user);

/* Messages less severe than @level are dropped before formatting. */
TIDE_EXPORT void tide_log_set_level(enum tide_log_level level);
TIDE_EXPORT enum tide_log_level tide_log_get_level(void);

/* Name of a level ("ERR", "WARNING", ...). */
TIDE_EXPORT const char *tide_log_level_name(enum tide_log_level level);

#ifdef __cplusplus
}
#endif

#endif /* TIDE_LOG_H */
