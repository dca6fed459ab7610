// SPDX-License-Identifier: Apache-2.0
/*
 * fuzz_scrape_config.c - libFuzzer target for the scrape configuration
 * (YAML) and the file_sd target files (JSON and YAML) that other tools
 * write (src/scrape/config.c), and for relabeling (src/scrape/relabel.c)
 * over what they yield. The first byte picks the parser: 0 scrape config,
 * 1 the same embedded in a server config, 2 a .json target file, 3 a
 * .yaml one. Any bytes give an error with a code and a reason, or a
 * configuration whose invariants hold: every job has a name, profiles,
 * a compiled regex per rule, a timeout within its interval; every target
 * is host:port; label sets are sorted and unique and within the limits.
 * Build and run: scripts/fuzz.sh.
 */
#include "base/compat.h"
#include "scrape/config.h"
#include "scrape/relabel.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_labels(const struct scrape_labels *ls)
{
	PROF_ASSERT(ls->l.n <= SCRAPE_MAX_LABELS + 16);
	for (size_t i = 0; i < ls->l.n; i++) {
		PROF_ASSERT(scrape_label_name_ok(ls->l.v[i].name));
		if (i)
			PROF_ASSERT(strcmp(ls->l.v[i - 1].name, ls->l.v[i].name) < 0);
	}
}

static void check_groups(const struct scrape_group *g, size_t n, const struct scrape_relabel *rules,
			 size_t nrules)
{
	size_t total = 0;

	for (size_t i = 0; i < n; i++) {
		check_labels(&g[i].labels);
		total += g[i].ntargets;
		for (size_t t = 0; t < g[i].ntargets; t++) {
			struct scrape_labels ls;

			PROF_ASSERT(scrape_target_ok(g[i].targets[t]));
			if (t > 2)
				continue; /* relabel a few per group: enough to reach every rule */
			scrape_labels_copy(&ls, &g[i].labels);
			scrape_labels_set(&ls, "__address__", g[i].targets[t]);
			(void)scrape_relabel_apply(rules, nrules, &ls);
			for (size_t k = 0; k < ls.l.n; k++) {
				PROF_ASSERT(scrape_label_name_ok(ls.l.v[k].name));
				PROF_ASSERT(strlen(ls.l.v[k].value) <= 64 * 1024);
			}
			scrape_labels_release(&ls);
		}
	}
	PROF_ASSERT(total <= SCRAPE_MAX_TARGETS);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct prof_err err;
	unsigned mode;

	if (!size)
		return 0;
	mode = data[0] & 3;
	data++;
	size--;
	prof_err_init(&err);
	if (mode <= 1) {
		struct scrape_config c;
		int rc = scrape_config_parse((const char *)data, size, "fuzz.yaml",
					     mode ? SCRAPE_CONF_EMBEDDED : 0, &c, &err);

		if (rc) {
			PROF_ASSERT(rc < 0 && err.msg[0] != '\0');
		} else {
			for (size_t j = 0; j < c.njobs; j++) {
				const struct scrape_job_conf *job = &c.jobs[j];

				PROF_ASSERT(job->name && *job->name);
				PROF_ASSERT(job->nprofiles >= 1);
				PROF_ASSERT(job->timeout_ns <= job->interval_ns);
				for (size_t k = 0; k < job->nprofiles; k++)
					PROF_ASSERT(job->profiles[k].kind != SCRAPE_KIND_CPU ||
						    job->profiles[k].seconds >= 1);
				for (size_t k = 0; k < job->nrelabel; k++)
					PROF_ASSERT(job->relabel[k].re != NULL);
				check_groups(job->groups, job->ngroups, job->relabel,
					     job->nrelabel);
			}
			for (size_t w = 0; w < c.nwatches; w++)
				PROF_ASSERT(c.watches[w].nfiles >= 1);
		}
		scrape_config_release(&c);
	} else {
		struct scrape_group *g;
		size_t n;
		int rc = scrape_sd_parse((const char *)data, size,
					 mode == 2 ? "fuzz.json" : "fuzz.yaml", &g, &n, &err);

		if (rc) {
			PROF_ASSERT(rc < 0 && err.msg[0] != '\0' && g == NULL);
		} else {
			check_groups(g, n, NULL, 0);
			scrape_groups_free(g, n);
		}
	}
	return 0;
}
