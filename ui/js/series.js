// SPDX-License-Identifier: Apache-2.0
/*
 * series.js - a /api/v1/series answer as the chart draws it: one group
 * per series (and "other"), the values drawn (rates for cumulative
 * types, the per-step means for gauges) and the legend's figure. Pure.
 */
import { SERIES_COLORS } from './color.js';
import { labelWords } from './format.js';

/*
 * A gauge's figure for the range: the mean of the steps that hold a
 * snapshot (the API's per-step means; a step without one is 0 there,
 * and the API's own `mean` counts those too). It is the flame graph's
 * figure for a gauge: the mean of the snapshots.
 */
export function gaugeMean(values) {
	let sum = 0;
	let n = 0;
	for (const v of values || []) {
		if (v > 0) {
			sum += v;
			n++;
		}
	}
	return n ? sum / n : 0;
}

/* The groups of a series answer: label, colour, the values drawn, the legend's figure. */
export function seriesGroups(data) {
	const rate = !!data.cumulative;
	const out = [];
	(data.series || []).forEach((s, i) => {
		const label = data.group_by && data.group_by.length ? labelWords(s.labels) : 'total';
		out.push({ label, labels: s.labels, color: SERIES_COLORS[i % (SERIES_COLORS.length - 1)], values: rate && s.rates ? s.rates : s.values, total: s.total !== undefined ? s.total : gaugeMean(s.values), mean: s.mean !== undefined });
	});
	if (data.other && data.other.groups) {
		const tot = data.other.values.reduce((a, b) => a + b, 0);
		const vals = rate && data.other.rates ? data.other.rates : data.other.values;
		out.push({ label: `other (${data.other.groups} groups)`, other: true, color: SERIES_COLORS[SERIES_COLORS.length - 1], values: vals, total: data.cumulative ? tot : gaugeMean(data.other.values), mean: !data.cumulative });
	}
	return out;
}
