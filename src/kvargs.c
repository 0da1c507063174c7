/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kvargs.h"
#include "log.h"

int tide_kvargs_parse(const char *spec, struct tide_kvargs *kv)
{
	const char *colon = strchr(spec, ':');
	size_t dlen = colon ? (size_t)(colon - spec) : strlen(spec);
	char *save = NULL, *tok;

	memset(kv, 0, sizeof(*kv));
	if (dlen == 0 || dlen >= sizeof(kv->driver)) {
		TIDE_LOG_ERR_("port", "spec '%s': expected 'driver:key=value,...'", spec);
		return -EINVAL;
	}
	memcpy(kv->driver, spec, dlen);
	kv->driver[dlen] = '\0';
	kv->buf = strdup(colon ? colon + 1 : "");
	if (kv->buf == NULL)
		return -ENOMEM;
	for (tok = strtok_r(kv->buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');

		if (kv->n == TIDE_KV_MAX) {
			TIDE_LOG_ERR_(kv->driver, "too many keys in spec (max %d)", TIDE_KV_MAX);
			goto fail;
		}
		if (eq == tok || (eq == NULL && *tok == '\0')) {
			TIDE_LOG_ERR_(kv->driver, "empty key in spec '%s'", spec);
			goto fail;
		}
		if (eq)
			*eq = '\0';
		for (unsigned i = 0; i < kv->n; i++)
			if (strcmp(kv->kv[i].key, tok) == 0) {
				TIDE_LOG_ERR_(kv->driver, "key '%s' given twice", tok);
				goto fail;
			}
		/* "key" alone means "key=yes" (a flag). */
		kv->kv[kv->n].key = tok;
		kv->kv[kv->n].val = eq ? eq + 1 : (char *)"yes";
		kv->n++;
	}
	return 0;
fail:
	tide_kvargs_free(kv);
	return -EINVAL;
}

void tide_kvargs_free(struct tide_kvargs *kv)
{
	free(kv->buf);
	kv->buf = NULL;
	kv->n = 0;
}

const char *tide_kvargs_get(struct tide_kvargs *kv, const char *key)
{
	for (unsigned i = 0; i < kv->n; i++)
		if (strcmp(kv->kv[i].key, key) == 0) {
			kv->kv[i].used = true;
			return kv->kv[i].val;
		}
	return NULL;
}

int tide_kvargs_uint(struct tide_kvargs *kv, const char *key, uint64_t def, uint64_t min,
		     uint64_t max, uint64_t *out)
{
	const char *v = tide_kvargs_get(kv, key);
	int rc;

	if (v == NULL) {
		*out = def;
		return 0;
	}
	rc = tide_parse_u64(v, min, max, out);
	if (rc == -EINVAL)
		TIDE_LOG_ERR_(kv->driver, "%s=%s: not a decimal number (digits only: no sign, "
			      "space, 0x or leading zero)", key, v);
	else if (rc < 0)
		TIDE_LOG_ERR_(kv->driver, "%s=%s: must be in %llu..%llu", key, v,
			      (unsigned long long)min, (unsigned long long)max);
	return rc < 0 ? -EINVAL : 0;
}

int tide_kvargs_bool(struct tide_kvargs *kv, const char *key, bool def, bool *out)
{
	static const char *const yesno[] = {"no", "yes", "0", "1", "off", "on", "false", "true",
					    NULL};
	unsigned idx;
	int rc = tide_kvargs_choice(kv, key, yesno, def ? 1 : 0, &idx);

	if (rc == 0)
		*out = idx & 1;
	return rc;
}

int tide_kvargs_bench(struct tide_kvargs *kv, const char *key, bool *out)
{
	if (TIDE_BENCH_VARIANTS)
		return tide_kvargs_bool(kv, key, false, out);
	*out = false;
	if (tide_kvargs_get(kv, key) == NULL)
		return 0;
	TIDE_LOG_ERR_(kv->driver, "%s: a benchmark key, only in builds with -Dbench_variants=true",
		      key);
	return -EINVAL;
}

int tide_kvargs_choice(struct tide_kvargs *kv, const char *key, const char *const *choices,
		       unsigned def, unsigned *out)
{
	const char *v = tide_kvargs_get(kv, key);
	char list[256] = "";

	if (v == NULL) {
		*out = def;
		return 0;
	}
	for (unsigned i = 0; choices[i]; i++) {
		if (strcmp(v, choices[i]) == 0) {
			*out = i;
			return 0;
		}
		strncat(list, i ? "|" : "", sizeof(list) - strlen(list) - 1);
		strncat(list, choices[i], sizeof(list) - strlen(list) - 1);
	}
	TIDE_LOG_ERR_(kv->driver, "%s=%s: must be one of %s", key, v, list);
	return -EINVAL;
}

int tide_kvargs_check_unused(const struct tide_kvargs *kv, const char *known)
{
	for (unsigned i = 0; i < kv->n; i++)
		if (!kv->kv[i].used) {
			TIDE_LOG_ERR_(kv->driver, "unknown key '%s' (known: %s)", kv->kv[i].key,
				      known);
			return -EINVAL;
		}
	return 0;
}
