// SPDX-License-Identifier: Apache-2.0
// state.test.mjs - ui/js/state.js: the URL round trip and the API parameters.
import test from 'node:test';
import assert from 'node:assert/strict';
import { blankState, filterParams, rangeMs, searchFromState, selection, stateFromSearch, timeParams } from '../../../ui/js/state.js';

test('a state survives the URL both ways', () => {
	const s = blankState();
	Object.assign(s, {
		dataset: 'prod', type: 'process_cpu:cpu:nanoseconds:cpu:nanoseconds', query: '{service.name="shop"}', range: 'abs', from: 1000, to: 5000,
		groupBy: 'service.name', view: 'table', search: 'json', focusPath: ['main', 'serve'], fn: 'computePrice', sf: ['a', 'b'], ff: ['^c$'],
		hide: ['go', 'libc'], invert: true, icicle: false, color: 'package', sort: 'total', tableSearch: 'x', lanes: 'thread.name', fcTop: 0,
	});
	Object.assign(s.cmp, { aType: 't', bType: 't', aQuery: '{a="1"}', bQuery: '', aFrom: 1, aTo: 2, bFrom: 3, bTo: 4, mode: 'absolute' });
	const back = stateFromSearch(searchFromState(s), blankState());
	for (const k of Object.keys(s)) if (k !== 'types') assert.deepEqual(back[k], s[k], k);
});

test('defaults and bad values fall back', () => {
	const s = stateFromSearch('?view=nope&hide=go,bogus&color=pink&sort=x&from=5&to=2&fctop=7', blankState());
	assert.equal(s.view, 'flame');
	assert.deepEqual(s.hide, ['go']);
	assert.equal(s.color, 'hot');
	assert.equal(s.sort, 'self');
	assert.equal(s.range, '1h', 'to before from is no absolute range');
	assert.equal(s.fcTop, 20);
	assert.equal(searchFromState(blankState()), 'range=1h&view=flame');
	assert.equal(stateFromSearch('', blankState()).view, 'overview', 'a bare visit lands on the overview');
	assert.equal(stateFromSearch('?type=T&search=x', blankState()).view, 'flame', 'a link without a view opens the flame graph');
});

test('the selection as API parameters', () => {
	const s = blankState();
	s.type = 'T';
	s.sf = ['x', 'y'];
	s.hide = ['go'];
	assert.deepEqual(timeParams(s), { from: 'now-1h', to: 'now' });
	assert.deepEqual(filterParams(s), { stack_filter: ['x', 'y'], frame_filter: [], hide: 'go' });
	assert.deepEqual(selection({ limit: 3 }, s), { dataset: '', type: 'T', query: '', from: 'now-1h', to: 'now', stack_filter: ['x', 'y'], frame_filter: [], hide: 'go', limit: 3 });
	s.range = 'abs';
	s.from = 10;
	s.to = 20;
	assert.deepEqual(timeParams(s), { from: '10', to: '20' });
	assert.deepEqual(rangeMs(s), [10, 20]);
	s.range = '5m';
	assert.deepEqual(rangeMs(s, 1e6), [1e6 - 300e3, 1e6]);
});
