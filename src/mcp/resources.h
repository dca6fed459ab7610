/* SPDX-License-Identifier: Apache-2.0 */
/*
 * resources.h - the MCP resources: read-only context a client may attach
 * for a model before it calls tools.
 *
 *   profd://guide          how to investigate with the tools: selectors,
 *                          time ranges, units, a workflow (static text)
 *   profd://profile-types  the profile types with data in the last 24
 *                          hours, with their units (list_profile_types)
 */
#ifndef PROF_MCP_RESOURCES_H
#define PROF_MCP_RESOURCES_H

#include "base/compat.h"
#include "base/err.h"
#include "mcp/backend.h"

#include <jansson.h>

/** mcp_resources_list() - the resources/list "resources" array. New reference. */
json_t *mcp_resources_list(void);

/**
 * mcp_resources_read() - the resources/read result for @uri (new
 * reference in *@result: contents [{uri, mimeType, text}]), read through
 * @be when it needs data. -PROF_ENOTFOUND for an unknown URI (@err, which
 * may be NULL, says so, for a -32002 error; offset -1). A failing query is
 * not an error: the text says what failed.
 */
int mcp_resources_read(const struct mcp_backend *be, const char *uri, json_t **result,
		       struct prof_err *err);

#endif
