/* SPDX-License-Identifier: BSD-3-Clause */
/* The driver table: every driver built into this library, listed explicitly. */
#include <string.h>

#include "driver.h"
#include "driver_list.h"

#define X(n) extern const struct tide_driver tide_driver_##n;
TIDE_DRIVER_LIST
#undef X

static const struct tide_driver *const drivers[] = {
#define X(n) &tide_driver_##n,
	TIDE_DRIVER_LIST
#undef X
	NULL,
};

const struct tide_driver *tide_driver_find(const char *name)
{
	for (unsigned i = 0; drivers[i]; i++)
		if (strcmp(drivers[i]->name, name) == 0)
			return drivers[i];
	return NULL;
}

const struct tide_driver *tide_driver_at(unsigned i)
{
	return i < sizeof(drivers) / sizeof(drivers[0]) ? drivers[i] : NULL;
}

const char *tide_driver_names(void)
{
	static char names[256];

	if (names[0] == '\0')
		for (unsigned i = 0; drivers[i]; i++) {
			strncat(names, i ? ", " : "", sizeof(names) - strlen(names) - 1);
			strncat(names, drivers[i]->name, sizeof(names) - strlen(names) - 1);
		}
	return names;
}
