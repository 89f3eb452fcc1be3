// The dashboard: polls GET /stats once a second (the first call fetches the
// server's last five minutes, later ones only newer points) and redraws the
// charts, the current-value tiles, the model card and the SLO targets.
//
// Polling a small JSON endpoint rather than holding an SSE stream: it
// reconnects by itself, passes any proxy, carries the API key as an
// ordinary header (EventSource cannot send one), and costs one request a
// second per open dashboard.
'use strict';

(() => {
  const kSpanMs = 5 * 60 * 1000;
  const kPollMs = 1000;
  let points = [];
  let lastT = 0;
  let charts = null;
  let timer = null;

  // Axis and legend text stays short: seconds from 1 s up.
  const fmtMs = (v) => (v >= 1000 ? (v / 1000).toFixed(v >= 10000 ? 0 : 1) + ' s' : Swiftlet.ms(v));
  const fmtRate = (v) => (v >= 100 ? Math.round(v) : v >= 10 ? v.toFixed(1) : v.toFixed(2)).toString();
  const fmtCount = (v) => (Number.isInteger(v) ? String(v) : v.toFixed(1));
  const fmtPct = (v) => (v >= 10 ? Math.round(v) : v >= 1 || v === 0 ? v.toFixed(1) : v.toFixed(2)) + '%';

  function makeCharts() {
    const box = document.getElementById('charts');
    const c = (o) => new TimeChart(box, Object.assign({ spanMs: kSpanMs }, o));
    return {
      ttft: c({ id: 'ttft', title: 'Time to first token', format: fmtMs, series: [
        { key: 'ttft_p50_ms', label: 'p50', color: '#2563eb' },
        { key: 'ttft_p95_ms', label: 'p95', color: '#d97706' }] }),
      tpot: c({ id: 'tpot', title: 'Time per output token', format: fmtMs, series: [
        { key: 'tpot_p50_ms', label: 'p50', color: '#2563eb' },
        { key: 'tpot_p95_ms', label: 'p95', color: '#d97706' }] }),
      requests: c({ id: 'requests', title: 'Requests per second', format: fmtRate, series: [
        { key: 'requests_per_s', label: 'finished', color: '#15803d' },
        { key: 'refusals_per_s', label: 'refused', color: '#b91c1c' }] }),
      queue: c({ id: 'queue', title: 'Queue', format: fmtCount, series: [
        { key: 'queue_depth', label: 'waiting', color: '#7c3aed' },
        { key: 'running', label: 'running', color: '#0891b2' }] }),
      kv: c({ id: 'kv', title: 'KV cache in use', format: fmtPct, series: [
        { key: 'kv_used_percent', label: 'used', color: '#db2777' }] }),
      tokens: c({ id: 'tokens', title: 'Tokens per second', format: fmtRate, series: [
        { key: 'tokens_per_s', label: 'generated', color: '#0d9488' },
        { key: 'prompt_tokens_per_s', label: 'prompt', color: '#94a3b8' }] }),
    };
  }

  function card(id, rows) {
    const dl = document.getElementById(id);
    dl.replaceChildren();
    for (const [k, v] of rows) {
      if (v === null || v === undefined || v === '') continue;
      dl.append(Swiftlet.el('dt', {}, k), Swiftlet.el('dd', {}, String(v)));
    }
  }

  function params(n) {
    if (!n) return null;
    if (n >= 1e9) return (n / 1e9).toFixed(2) + ' B';
    if (n >= 1e6) return (n / 1e6).toFixed(1) + ' M';
    return n.toLocaleString('en');
  }

  function target(slo) { return slo ? slo : null; }

  function drawStatic(s) {
    const m = s.model || {};
    card('model-card', [
      ['id', m.id], ['architecture', m.architecture], ['quantization', m.quantization],
      ['parameters', params(m.parameters)], ['weights', Swiftlet.bytes(m.weight_bytes)],
      ['context', m.context ? `${m.context} (trained ${m.context_train})` : null],
      ['layers', m.layers], ['hidden', m.embedding], ['heads', m.heads ? `${m.heads} (KV ${m.kv_heads})` : null],
      ['FFN', m.ffn], ['vocabulary', m.vocab],
    ]);
    const mem = s.memory || {};
    card('engine', [
      ['threads', s.engine && s.engine.threads], ['max running', s.engine && s.engine.max_running],
      ['max queue', s.engine && s.engine.max_queue],
      ['KV cache', mem.kv_blocks_total ? `${mem.kv_blocks_total} blocks × ${mem.kv_block_tokens} tokens, ${mem.kv_type}` : null],
      ['KV memory', Swiftlet.bytes(mem.kv_cache_bytes)], ['resident', Swiftlet.bytes(mem.resident_bytes)],
      ['state', s.draining ? 'draining' : 'serving'],
    ]);
    const rows = [];
    for (const cls of ['interactive', 'batch', 'embedding']) {
      const t = (s.slo || {})[cls];
      if (!t) continue;
      const parts = [];
      if (t.ttft_ms) parts.push('TTFT ≤ ' + Swiftlet.ms(t.ttft_ms));
      if (t.tpot_ms) parts.push('TPOT ≤ ' + Swiftlet.ms(t.tpot_ms));
      rows.push([cls, parts.join(', ') || 'none']);
    }
    card('slo', rows);
    const interactive = (s.slo || {}).interactive || {};
    charts.ttft.setTarget(target(interactive.ttft_ms));
    charts.tpot.setTarget(target(interactive.tpot_ms));
    document.getElementById('window').textContent = Math.round((s.window_ms || 10000) / 1000) + ' s';
  }

  function drawTiles(s) {
    const last = points.length ? points[points.length - 1] : {};
    const t = ((s.slo || {}).interactive) || {};
    const tiles = [
      ['TTFT p95', fmtMs(last.ttft_p95_ms), t.ttft_ms && last.ttft_p95_ms > t.ttft_ms],
      ['TPOT p95', fmtMs(last.tpot_p95_ms), t.tpot_ms && last.tpot_p95_ms > t.tpot_ms],
      ['requests/s', last.requests_per_s === undefined ? '–' : fmtRate(last.requests_per_s), false],
      ['refusals/s', last.refusals_per_s === undefined ? '–' : fmtRate(last.refusals_per_s), last.refusals_per_s > 0],
      ['waiting', last.queue_depth === undefined ? '–' : String(last.queue_depth), false],
      ['KV in use', last.kv_used_percent === undefined ? '–' : fmtPct(last.kv_used_percent), last.kv_used_percent > 90],
      ['tokens/s', last.tokens_per_s === undefined ? '–' : fmtRate(last.tokens_per_s), false],
    ];
    const box = document.getElementById('tiles');
    box.replaceChildren();
    for (const [label, value, over] of tiles) {
      box.append(Swiftlet.el('div', { class: 'tile' }, Swiftlet.el('div', { class: 'label' }, label),
                             Swiftlet.el('div', { class: over ? 'value over' : 'value' }, value)));
    }
  }

  function setStatus(text, error) {
    const s = document.getElementById('status');
    s.textContent = text;
    s.className = error ? 'status error' : 'status';
  }

  async function poll() {
    timer = null;
    try {
      const path = lastT ? `/stats?since=${lastT}` : '/stats';
      const s = await (await Swiftlet.api(path, { cache: 'no-store' })).json();
      if (!charts) charts = makeCharts();
      for (const p of s.points) {
        if (p.t > lastT) { points.push(p); lastT = p.t; }
      }
      const now = s.now_ms;
      points = points.filter((p) => p.t >= now - kSpanMs);
      drawStatic(s);
      for (const c of Object.values(charts)) c.update(points, now);
      drawTiles(s);
      document.body.dataset.updates = String(Number(document.body.dataset.updates || 0) + 1);
      setStatus('updated ' + new Date(now).toLocaleTimeString('en-GB') + ' · ' + points.length + ' points');
    } catch (e) {
      const hint = e.status === 401 || e.status === 403 ? ' — paste an admin API key above' : '';
      setStatus('stats: ' + e.message + hint, true);
    }
    timer = setTimeout(poll, kPollMs);
  }

  Swiftlet.onKey(() => {
    if (timer !== null) { clearTimeout(timer); poll(); }
  });
  poll();
})();
