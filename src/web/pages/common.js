// What every page shares: the API key box and fetch with the key.
//
// The key lives in sessionStorage: it survives a reload of the tab and is
// gone when the tab closes, and no page ever writes it anywhere else. It is
// sent only as "Authorization: Bearer <key>" to this same origin.
'use strict';

const Swiftlet = (() => {
  const kKeyItem = 'swiftlet.apiKey';
  const listeners = [];

  function key() {
    try { return sessionStorage.getItem(kKeyItem) || ''; } catch (e) { return memory; }
  }

  let memory = '';
  let notify = null;

  function setKey(value) {
    memory = value;
    try {
      if (value) sessionStorage.setItem(kKeyItem, value); else sessionStorage.removeItem(kKeyItem);
    } catch (e) { /* storage off: the key lasts as long as the page */ }
    // Listeners run once typing pauses, not with every half-typed key.
    clearTimeout(notify);
    notify = setTimeout(() => { for (const f of listeners) f(value); }, 300);
  }

  function headers(extra) {
    const h = Object.assign({}, extra || {});
    const k = key();
    if (k) h['Authorization'] = 'Bearer ' + k;
    return h;
  }

  // fetch() with the key; a non-2xx answer becomes an Error whose message is
  // the server's (OpenAI error shape) and whose .status is the HTTP status.
  async function api(path, options) {
    const o = Object.assign({}, options || {});
    o.headers = headers(o.headers);
    const response = await fetch(path, o);
    if (!response.ok) throw await errorOf(response);
    return response;
  }

  async function errorOf(response) {
    let message = response.status + ' ' + response.statusText;
    try {
      const body = await response.json();
      if (body && body.error && body.error.message) message = response.status + ': ' + body.error.message;
    } catch (e) { /* not JSON */ }
    const error = new Error(message);
    error.status = response.status;
    return error;
  }

  // Text for a number of ms, seconds past 10 s.
  function ms(v) {
    if (v === null || v === undefined || !isFinite(v)) return '–';
    if (v >= 10000) return (v / 1000).toFixed(1) + ' s';
    if (v >= 100) return Math.round(v) + ' ms';
    return v.toFixed(1) + ' ms';
  }

  function bytes(v) {
    if (!v) return '–';
    const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    let i = 0;
    while (v >= 1024 && i < units.length - 1) { v /= 1024; ++i; }
    return (i === 0 ? v : v.toFixed(1)) + ' ' + units[i];
  }

  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === 'class') e.className = v; else e.setAttribute(k, v);
    }
    for (const c of children) e.append(c);
    return e;
  }

  // The key box in the header: type or paste, it applies at once.
  function wireKeyBox() {
    const input = document.getElementById('api-key');
    if (!input) return;
    input.value = key();
    input.addEventListener('input', () => setKey(input.value.trim()));
  }

  document.addEventListener('DOMContentLoaded', wireKeyBox);

  return { key, setKey, onKey: (f) => listeners.push(f), headers, api, errorOf, ms, bytes, el };
})();
