// SPDX-License-Identifier: Apache-2.0
/*
 * api.js - the client of profd's JSON API (docs/api.md).
 *
 * api() turns an answer that is not 2xx into an Error carrying the
 * server's own reason ({"error": ...}); an aborted request rejects with
 * an Error whose `aborted` is true, which callers drop silently.
 *
 * Slot: one per view. slot.begin() aborts the request the view made
 * before (a superseded selection must not land on the page) and
 * returns a ticket; after each await the view asks ticket.current and
 * stops when a newer request took the slot, so an old answer can never
 * replace a newer one, whatever order they arrive in.
 */

/* @params: values, or arrays of values for a repeated parameter; empty ones are left out. */
export function apiUrl(path, params, base = globalThis.location ? globalThis.location.href : 'http://localhost/') {
	const url = new URL(path, base);
	for (const [k, v] of Object.entries(params || {})) {
		for (const x of Array.isArray(v) ? v : [v]) {
			if (x !== undefined && x !== null && x !== '') url.searchParams.append(k, x);
		}
	}
	return url;
}

function abortedError() {
	const e = new Error('superseded');
	e.aborted = true;
	return e;
}

/* The reason of a failed answer, in words: "The server answered 400: ...". */
export function errorWords(status, text) {
	let reason = String(text || '').trim();
	try {
		const j = JSON.parse(text);
		reason = j.error || j.message || reason;
	} catch (e) {
		/* not JSON: keep the text */
	}
	if (status === 401 || status === 403) reason = `${reason} (this dataset needs a token the page does not have)`;
	return `The server answered ${status}${reason ? ': ' + reason : ''}`;
}

/* GET @path with @params; resolves to the parsed JSON (or text with @asText). */
export async function api(path, params, signal, asText) {
	const url = apiUrl(path, params);
	let res;
	try {
		res = await fetch(url, { headers: { Accept: asText ? '*/*' : 'application/json' }, signal });
	} catch (e) {
		if (signal && signal.aborted) throw abortedError();
		throw new Error(`Cannot reach the profd server at ${globalThis.location ? location.host : 'this address'}. Is it running?`);
	}
	let text;
	try {
		text = await res.text();
	} catch (e) {
		if (signal && signal.aborted) throw abortedError();
		throw e;
	}
	if (signal && signal.aborted) throw abortedError();
	if (!res.ok) throw new Error(errorWords(res.status, text));
	if (asText) return text;
	try {
		return JSON.parse(text);
	} catch (e) {
		throw new Error('The server answered with something that is not JSON.');
	}
}

export class Slot {
	constructor() {
		this.seq = 0;
		this.ctrl = null;
	}

	/* Aborts the previous request of this slot; returns {signal, current, get(path, params)}. */
	begin() {
		if (this.ctrl) this.ctrl.abort();
		const ctrl = typeof AbortController === 'function' ? new AbortController() : null;
		this.ctrl = ctrl;
		const seq = ++this.seq;
		const slot = this;
		return {
			signal: ctrl ? ctrl.signal : undefined,
			get current() {
				return slot.seq === seq;
			},
			get(path, params, asText) {
				return api(path, params, ctrl ? ctrl.signal : undefined, asText);
			},
		};
	}

	/* Drops whatever is in flight (the view is reset). */
	cancel() {
		if (this.ctrl) this.ctrl.abort();
		this.ctrl = null;
		this.seq++;
	}
}
