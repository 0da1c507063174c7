/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The one spelling of a forced inline in the library's internals. For the helpers of a burst
 * loop that must melt into it (descriptor translation, the engine's per-slot steps, copies):
 * GCC's heuristics otherwise leave some of them out of line in one driver and not in another,
 * and the instruction counts of the bursts move with the compiler's mood. Everything else
 * uses plain `static inline`.
 */
#ifndef TIDE_SRC_INLINE_H
#define TIDE_SRC_INLINE_H

#define TIDE_ALWAYS_INLINE static inline __attribute__((always_inline))

#endif /* TIDE_SRC_INLINE_H */
