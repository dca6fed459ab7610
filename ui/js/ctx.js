// SPDX-License-Identifier: Apache-2.0
/*
 * ctx.js - what the views share besides the state: the actions main.js
 * provides (set by main.js at start, so that views call each other
 * without importing each other) and the models published for tests.
 *
 * window.profd = pub: {state, views: {flame, table, sandwich, flamechart,
 * compare, health, chart, overview}, timings}; each view model has a
 * `state` ('idle', 'loading', 'ready', 'empty', 'error') and its data.
 * window.profdFlame: the main flame graph's model (flamegraph.js).
 */
import { state } from './state.js';

export const timings = { flameRenderMs: [], hoverMs: [] };
export const pub = { state, views: {}, timings };

/* Filled by main.js: setView(v), rerunView(), rerunAll(), run(), writeUrl(push), selectFunction(name, open), setAbsRange(a, b). */
export const actions = {};
