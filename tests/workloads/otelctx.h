/* SPDX-License-Identifier: Apache-2.0 */
/*
 * otelctx.h - a small publisher of the OpenTelemetry thread context
 * (OTEP 4947), as an instrumented program's tracer would be: each thread
 * owns one record and points the TLS variable otel_thread_ctx_v1 at it;
 * entering a span writes the span's trace and span IDs (big-endian) and
 * sets the valid flag last, leaving one clears the flag. An out-of-process
 * reader (the profd agent in BPF) reads the pointer from the thread's TLS
 * and takes the IDs only while valid is 1. For the agent's tests
 * (tests/integration/test_agent_trace.sh), which links otelctx.c into the
 * executable and also builds it as a shared library libotelctx.so in each
 * x86-64 TLS dialect (TLSDESC, general dynamic); no attributes are
 * published.
 */
#ifndef OTELCTX_H
#define OTELCTX_H

#include <stdint.h>

/* The record's head as the OTEP lays it out; attribute bytes would follow. */
struct otelctx_record {
	uint8_t trace_id[16];
	uint8_t span_id[8];
	uint8_t valid; /* 1: the IDs are usable; written last */
	uint8_t reserved;
	uint16_t attrs_data_size; /* bytes of attributes after the head (0 here) */
};

/** otelctx_thread_init() - give the calling thread its record and publish its address. */
void otelctx_thread_init(void);
/** otelctx_enter() - the calling thread now runs span @span_id of trace @trace_id. */
void otelctx_enter(const uint8_t trace_id[16], const uint8_t span_id[8]);
/** otelctx_leave() - the calling thread runs no span. */
void otelctx_leave(void);

#endif
