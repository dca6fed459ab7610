// SPDX-License-Identifier: Apache-2.0
/*
 * timesplit.js - the compare view's default sides: split where the data
 * is, not the range in two halves (a half with no samples would paint
 * the whole diff red or green). Pure.
 */

/*
 * @ts: step starts (ms), @values: the selection's value per step,
 * @stepMs, [@from, @to]: the range. Returns {aFrom, aTo, bFrom, bTo}
 * (ms, inclusive): A from the first step with data to the step where
 * half of the value is reached, B from there to the last step with
 * data, each side holding at least one step with data; or null when
 * fewer than two steps have data (the caller falls back to halves).
 */
export function splitByMass(ts, values, stepMs, from, to) {
	const idx = [];
	let total = 0;
	for (let i = 0; i < ts.length; i++) {
		if (values[i] > 0) {
			idx.push(i);
			total += values[i];
		}
	}
	if (idx.length < 2) return null;
	const first = idx[0];
	const last = idx[idx.length - 1];
	/* k: the first step after the value reached half; at most the last step with data */
	let cum = 0;
	let k = last;
	for (let i = first; i <= last; i++) {
		cum += values[i] > 0 ? values[i] : 0;
		if (cum >= total / 2) {
			k = i + 1;
			break;
		}
	}
	if (k > last) k = last;
	if (k <= first) k = first + 1;
	const aFrom = Math.max(from, ts[first]);
	const bTo = Math.min(to, ts[last] + stepMs - 1);
	const split = Math.max(aFrom + 1, ts[k]);
	return { aFrom, aTo: split - 1, bFrom: split, bTo: Math.max(bTo, split) };
}

/* The range in two halves: [from, mid - 1] and [mid, to]. */
export function halves(from, to) {
	const mid = Math.round((from + to) / 2);
	return { aFrom: from, aTo: mid - 1, bFrom: mid, bTo: to };
}
