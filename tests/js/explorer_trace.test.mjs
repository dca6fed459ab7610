// SPDX-License-Identifier: Apache-2.0
/*
 * explorer_trace.test.mjs - the explorer's Trace / span fields in
 * chromium (playwright-core), on the agent's data of
 * tests/integration/test_agent_trace.sh: typing a request's trace and
 * span ID into the query bar and running the query narrows the flame
 * graph to that request (its hot function, never the other endpoint's,
 * as many samples as the API's trace profile); "Its window" sets an
 * absolute range around the span's samples (shorter than a minute,
 * holding them all) and the flame chart then shows the span's samples.
 *
 * Environment: PROFD_URL, TRACE_TYPE, TRACE_QUERY, TRACE_ID, SPAN_ID,
 * TRACE_HOT, TRACE_OTHER (function names), CHROMIUM. Prints "ok ..." /
 * "FAIL ..." lines; exits 1 when anything failed.
 */
import { chromium } from 'playwright-core';

const base = process.env.PROFD_URL;
const env = (k) => process.env[k] || '';
let failures = 0;
function check(cond, m, detail) {
	console.log(cond ? `ok - ${m}` : `FAIL - ${m}${detail !== undefined ? `: ${JSON.stringify(detail)}` : ''}`);
	if (!cond) failures++;
}

async function apiTotal(path, params) {
	const u = new URL(path, base);
	for (const [k, v] of Object.entries(params)) u.searchParams.set(k, v);
	const r = await fetch(u);
	if (!r.ok) throw new Error(`${path}: ${r.status} ${await r.text()}`);
	return (await r.json()).total;
}

async function main() {
	const browser = await chromium.launch({
		executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
		args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
	});
	const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
	const errors = [];
	page.on('pageerror', (e) => errors.push(String(e)));
	try {
		const u = new URL(base);
		u.searchParams.set('type', env('TRACE_TYPE'));
		u.searchParams.set('query', env('TRACE_QUERY'));
		u.searchParams.set('range', '1h');
		u.searchParams.set('view', 'flame');
		await page.goto(u.toString());
		await page.waitForFunction(() => window.profdFlame && window.profdFlame.state === 'ready', null, { timeout: 30000 });
		await page.fill('#trace-input', env('TRACE_ID').toUpperCase());
		await page.fill('#span-input', env('SPAN_ID'));
		await page.click('#run-button');
		await page.waitForFunction((t) => window.profdFlame.state === 'ready' && window.profdFlame.request && window.profdFlame.request.trace_id === t,
			env('TRACE_ID'), { timeout: 30000 });
		const got = await page.evaluate(() => ({ total: window.profdFlame.total, names: [...new Set(window.profdFlame.nodes.map((n) => n.name))], url: location.search }));
		const want = await apiTotal(`api/v1/traces/${env('TRACE_ID')}/profile`, { type: env('TRACE_TYPE'), query: env('TRACE_QUERY'), span_id: env('SPAN_ID') });
		check(got.total === want && want > 0, `flame graph of the span: ${got.total} samples, the API's trace profile ${want}`, got.total);
		check(got.names.includes(env('TRACE_HOT')) && !got.names.includes(env('TRACE_OTHER')),
			`the span's flame graph has ${env('TRACE_HOT')}, not ${env('TRACE_OTHER')}`, got.names);
		check(got.url.includes(`trace=${env('TRACE_ID')}`) && got.url.includes(`span=${env('SPAN_ID')}`), 'the trace and span are in the page URL', got.url);

		await page.click('#trace-window');
		await page.waitForFunction(() => window.profd.state.range === 'abs' && window.profdFlame.state === 'ready', null, { timeout: 30000 });
		const w = await page.evaluate(() => ({ from: window.profd.state.from, to: window.profd.state.to, total: window.profdFlame.total }));
		check(w.to - w.from >= 1000 && w.to - w.from < 60000 && w.total === want,
			`"Its window": ${w.to - w.from} ms around the span, the flame graph keeps its ${w.total} samples`, w);
		await page.click('[data-testid="tab-flamechart"]');
		await page.waitForFunction(() => window.profd.views.flamechart && ['ready', 'empty', 'error'].includes(window.profd.views.flamechart.state), null, { timeout: 30000 });
		const fc = await page.evaluate(() => ({ state: window.profd.views.flamechart.state, samples: window.profd.views.flamechart.data && window.profd.views.flamechart.data.samples }));
		check(fc.state === 'ready' && fc.samples === want, `flame chart on the span's window: ${fc.samples} samples`, fc);
		check(errors.length === 0, 'no script errors on the page', errors);
	} finally {
		await browser.close();
	}
}

main().then(() => process.exit(failures ? 1 : 0), (e) => {
	console.log(`FAIL - ${e.stack || e}`);
	process.exit(1);
});
