// SPDX-License-Identifier: Apache-2.0
/* otelctx.c - per-thread OpenTelemetry thread-context records (otelctx.h). */
#include "otelctx.h"

#include <string.h>

/* The symbol readers look for: a pointer to the thread's current record. */
__attribute__((visibility("default"), used)) __thread struct otelctx_record *otel_thread_ctx_v1;

static __thread struct otelctx_record own;

/* Stores in program order as seen from this thread (readers stop it to read). */
#define OTELCTX_FENCE() __atomic_signal_fence(__ATOMIC_SEQ_CST)

void otelctx_thread_init(void)
{
	memset(&own, 0, sizeof(own));
	OTELCTX_FENCE();
	otel_thread_ctx_v1 = &own;
}

void otelctx_enter(const uint8_t trace_id[16], const uint8_t span_id[8])
{
	own.valid = 0;
	OTELCTX_FENCE();
	memcpy(own.trace_id, trace_id, sizeof(own.trace_id));
	memcpy(own.span_id, span_id, sizeof(own.span_id));
	OTELCTX_FENCE();
	own.valid = 1;
}

void otelctx_leave(void)
{
	own.valid = 0;
	OTELCTX_FENCE();
}
