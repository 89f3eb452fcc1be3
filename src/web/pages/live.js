// The live translation demo: comments (a simulated feed from the shipped
// sample comments, or typed ones) go to the server, and each target
// language fills its own column with the translation and its latency, or
// with the server's drop notice when the budget passed ("late") or the
// stream's queue overflowed.
//
// Transport: the live-stream WebSocket (GET /v1/translate/stream) by
// default. A browser cannot put an Authorization header on a WebSocket, so
// with an API key pasted the demo sends each comment as one POST
// /v1/translate instead, where a translation past its budget comes back
// marked late and is shown as a drop the same way.
'use strict';

(() => {
  const $ = (id) => document.getElementById(id);
  const kKeepItems = 40;           // Per column: the DOM stays bounded.
  const kDefaultLanguages = ['ja', 'zh-Hant', 'ko'];
  let languages = [];              // [{code, native, english}]
  let comments = [];               // Sample feed.
  let socket = null;
  let feedTimer = null;
  let nextId = 1;
  let feedIndex = 0;
  let columns = new Map();         // code -> {list, delivered, dropped, latencies}
  let generation = 0;              // Bumped per stream: stale answers are ignored.

  function selected() {
    return [...document.querySelectorAll('#langs input:checked')].map((i) => i.value);
  }

  function setStatus(text, error) {
    $('status').textContent = text;
    $('status').className = error ? 'status error' : 'status';
  }

  function transport() {
    if (Swiftlet.key() && $('transport').value === 'ws') {
      $('transport').value = 'http';
      setStatus('a browser cannot send the API key on a WebSocket: using POST /v1/translate');
    }
    return $('transport').value;
  }

  function buildColumns() {
    const box = $('columns');
    box.replaceChildren();
    columns = new Map();
    const source = Swiftlet.el('div', { class: 'column', 'data-language': 'source' },
                               Swiftlet.el('h3', {}, 'Comments'),
                               Swiftlet.el('div', { class: 'summary' }, 'as sent'));
    const sourceList = Swiftlet.el('ol');
    source.append(sourceList);
    box.append(source);
    columns.set('source', { list: sourceList });
    for (const code of selected()) {
      const lang = languages.find((l) => l.code === code) || { native: code, english: code };
      const summary = Swiftlet.el('div', { class: 'summary' }, '');
      const list = Swiftlet.el('ol');
      const col = Swiftlet.el('div', { class: 'column', 'data-language': code, 'data-delivered': '0',
                                       'data-dropped': '0' },
                              Swiftlet.el('h3', {}, `${lang.native} · ${code}`), summary, list);
      box.append(col);
      columns.set(code, { col, list, summary, delivered: 0, dropped: 0, latencies: [] });
      summarize(code);
    }
  }

  function summarize(code) {
    const c = columns.get(code);
    const sorted = [...c.latencies].sort((a, b) => a - b);
    const p50 = sorted.length ? sorted[Math.floor((sorted.length - 1) / 2)] : null;
    c.summary.textContent = `${c.delivered} delivered · ${c.dropped} dropped · p50 ${Swiftlet.ms(p50)}`;
    c.col.dataset.delivered = String(c.delivered);
    c.col.dataset.dropped = String(c.dropped);
  }

  function push(list, item) {
    list.prepend(item);
    while (list.children.length > kKeepItems) list.lastChild.remove();
  }

  function budget() { return Math.max(50, parseInt($('budget').value, 10) || 800); }

  // One answer for one language: {id, language, text, latency_ms} or {id, language, dropped}.
  function show(r) {
    const c = columns.get(r.language);
    if (!c) return;
    const item = Swiftlet.el('li', { class: 'item' + (r.dropped ? ' dropped' : ''), 'data-id': r.id });
    let badge;
    if (r.dropped) {
      c.dropped += 1;
      badge = Swiftlet.el('span', { class: 'badge drop' }, r.dropped === 'late' ? 'late' : r.dropped);
      item.append(Swiftlet.el('div', { class: 'meta' }, badge, '#' + r.id),
                  Swiftlet.el('div', { class: 'text' }, r.dropped === 'late'
                    ? `dropped: not done within ${budget()} ms` : 'dropped: the stream queue was full'));
    } else {
      c.delivered += 1;
      c.latencies.push(r.latency_ms);
      if (c.latencies.length > 200) c.latencies.shift();
      badge = Swiftlet.el('span', { class: 'badge ' + (r.latency_ms <= budget() / 2 ? 'fast' : 'near') },
                          Swiftlet.ms(r.latency_ms));
      item.append(Swiftlet.el('div', { class: 'meta' }, badge, '#' + r.id),
                  Swiftlet.el('div', { class: 'text' }, r.text));
    }
    push(c.list, item);
    summarize(r.language);
  }

  function connect() {
    if (socket) { socket.onclose = null; socket.close(); socket = null; }
    document.body.dataset.stream = 'connecting';
    ++generation;
    buildColumns();
    if (transport() !== 'ws') return;
    const langs = selected();
    if (langs.length === 0) { setStatus('pick at least one language', true); return; }
    const query = new URLSearchParams({ languages: langs.join(','), budget_ms: String(budget()),
                                        max_tokens: String(parseInt($('max_tokens').value, 10) || 24) });
    const url = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/v1/translate/stream?${query}`;
    const ws = new WebSocket(url);
    socket = ws;
    ws.onopen = () => { setStatus('stream open: ' + langs.join(', ')); document.body.dataset.stream = 'open'; };
    ws.onmessage = (e) => {
      const r = JSON.parse(e.data);
      if (r.error) { setStatus('server: ' + r.error, true); return; }
      show(r);
    };
    ws.onclose = (e) => {
      document.body.dataset.stream = 'closed';
      if (socket === ws) { socket = null; setStatus(`stream closed (${e.code}${e.reason ? ': ' + e.reason : ''})`, e.code !== 1000); }
    };
  }

  async function sendHttp(id, text, gen) {
    const langs = selected();
    try {
      const r = await (await Swiftlet.api('/v1/translate', {
        method: 'POST', headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ texts: [text], target_languages: langs, budget_ms: budget(),
                               max_tokens: parseInt($('max_tokens').value, 10) || 24 }) })).json();
      if (gen !== generation) return;
      for (const t of r.translations || []) {
        show(t.late ? { id, language: t.language, dropped: 'late' }
                    : { id, language: t.language, text: t.text, latency_ms: t.latency_ms });
      }
    } catch (e) {
      if (gen !== generation) return;
      setStatus('translate: ' + e.message, true);
      if (e.status === 429) for (const l of langs) show({ id, language: l, dropped: 'refused' });
    }
  }

  function sendComment(text) {
    if (!text) return;
    const id = String(nextId++);
    push(columns.get('source').list,
         Swiftlet.el('li', { class: 'item' }, Swiftlet.el('div', { class: 'meta' }, '#' + id),
                     Swiftlet.el('div', { class: 'text' }, text)));
    if (transport() === 'ws') {
      if (!socket || socket.readyState !== WebSocket.OPEN) { setStatus('the stream is not open', true); return; }
      socket.send(JSON.stringify({ id, text }));
    } else {
      sendHttp(id, text, generation);
    }
  }

  function feedOnce() {
    if (comments.length) sendComment(comments[feedIndex++ % comments.length]);
    const rate = Math.min(20, Math.max(0.1, parseFloat($('rate').value) || 1));
    // Poisson arrivals, like a real chat.
    feedTimer = setTimeout(feedOnce, (-Math.log(1 - Math.random()) / rate) * 1000);
  }

  function toggleFeed() {
    if (feedTimer !== null) {
      clearTimeout(feedTimer);
      feedTimer = null;
      $('feed').textContent = 'Start feed';
    } else {
      $('feed').textContent = 'Stop feed';
      feedOnce();
    }
  }

  async function init() {
    const [langs, sample] = await Promise.all([
      fetch('/ui/languages.json').then((r) => r.json()),
      fetch('/ui/comments.json').then((r) => r.json()),
    ]);
    languages = langs.languages;
    comments = sample.comments;
    const box = $('langs');
    for (const l of languages) {
      const input = Swiftlet.el('input', { type: 'checkbox', value: l.code });
      input.checked = kDefaultLanguages.includes(l.code);
      input.addEventListener('change', connect);
      box.append(Swiftlet.el('label', { title: l.english }, input, ` ${l.native}`));
    }
    for (const id of ['budget', 'max_tokens', 'transport']) $(id).addEventListener('change', connect);
    $('feed').addEventListener('click', toggleFeed);
    $('typed').addEventListener('submit', (e) => {
      e.preventDefault();
      sendComment($('comment').value.trim());
      $('comment').value = '';
    });
    Swiftlet.onKey(connect);
    connect();
  }

  init().catch((e) => setStatus('could not load the demo: ' + e.message, true));
})();
