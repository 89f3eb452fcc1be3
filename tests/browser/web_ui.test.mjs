// The pages at / (dashboard), /playground and /live in a real browser:
// Debian's chromium, driven headless by playwright-core (pinned by
// package-lock.json beside this file; scripts/setup.sh runs npm ci).
//
// Run: SWIFTLET=<swiftlet binary> SWIFTLET_SHARED=<shared dir> \
//        [SWIFTLET_SCREENSHOTS=<dir>] node --test tests/browser/web_ui.test.mjs
//
// What it proves: each page loads with no console error; the dashboard's
// charts change once load is applied (and a screenshot is taken under
// load); the playground streams a reply token by token with its counters;
// the live translation demo fills one column per chosen language over the
// WebSocket; with --api-keys the pages stay public, /stats wants an admin
// key, and a pasted key makes the dashboard, the playground and the live
// demo (over POST /v1/translate) work.
// Screenshots go to SWIFTLET_SCREENSHOTS (docs/screenshots for the ones in
// the docs) or the test's temporary directory.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';

const HERE = dirname(fileURLToPath(import.meta.url));
const SWIFTLET = process.env.SWIFTLET;
const SHARED = process.env.SWIFTLET_SHARED;
const CHROMIUM = '/usr/bin/chromium';
const PLAYWRIGHT = join(HERE, 'node_modules', 'playwright-core', 'package.json');

let chromium;
let dir;
let shots;
let server;
let context;

// ---------------------------------------------------------------------------
// The server.

function makeModel() {
  const out = join(dir, 'm.gguf');
  execFileSync(SWIFTLET, ['tools', 'make-model', '--preset', 'tiny', '--type', 'Q8_0',
    '--vocab', join(SHARED, 'testdata/vocab/ggml-vocab-llama-spm.gguf'), '--seed', '1', '--out', out],
  { stdio: ['ignore', 'pipe', 'pipe'] });
  return out;
}

function startServer(model, extra = []) {
  const proc = spawn(SWIFTLET, ['serve', '-m', model, '--port', '0', '--chat-template', 'llama2',
    '--threads', '2', '--kv-memory', '128MiB', '--model-name', 'tiny', ...extra],
  { stdio: ['ignore', 'pipe', 'pipe'] });
  const s = { proc, stderr: [] };
  createInterface({ input: proc.stderr }).on('line', (l) => s.stderr.push(l));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => { proc.kill('SIGKILL'); reject(new Error('serve did not start:\n' + s.stderr.join('\n'))); },
      60_000);
    proc.on('exit', (code) => { clearTimeout(timer); reject(new Error(`serve exited (${code}):\n${s.stderr.join('\n')}`)); });
    createInterface({ input: proc.stdout }).on('line', (line) => {
      const m = line.match(/ on (http:\/\/\S+)$/);
      if (m) { clearTimeout(timer); s.url = m[1]; resolve(s); }
    });
  });
}

async function stopServer(s) {
  if (!s || s.proc.exitCode !== null) return;
  const exited = new Promise((r) => s.proc.once('exit', r));
  s.proc.kill('SIGTERM');
  await exited;
}

// Streamed completions, `concurrency` at a time, until `until()` is true;
// every fourth asks for a 1 ms TTFT target, which admission refuses (429),
// so refusals show too. Resolves to {ok, refused}.
async function applyLoad(url, concurrency, until, headers = {}) {
  const counts = { ok: 0, refused: 0, other: 0 };
  let n = 0;
  async function worker() {
    while (!until()) {
      const tight = ++n % 4 === 0;
      const body = { prompt: 'The weather today is', max_tokens: 24, ignore_eos: true, stream: true };
      if (tight) body.ttft_target_ms = 1;
      const r = await fetch(url + '/v1/completions', {
        method: 'POST', headers: { 'Content-Type': 'application/json', ...headers }, body: JSON.stringify(body) });
      await r.arrayBuffer();
      if (r.status === 200) counts.ok++; else if (r.status === 429) counts.refused++; else counts.other++;
    }
  }
  await Promise.all(Array.from({ length: concurrency }, worker));
  return counts;
}

// ---------------------------------------------------------------------------
// The browser.

async function openPage(url, path) {
  const page = await context.newPage();
  const errors = [];
  page.on('console', (m) => { if (m.type() === 'error') errors.push('console: ' + m.text()); });
  page.on('pageerror', (e) => errors.push('pageerror: ' + e.message));
  page.on('requestfailed', (r) => {
    // A stream the page closes on purpose is not a failure.
    if (!r.url().includes('/v1/translate/stream')) errors.push(`requestfailed: ${r.url()} ${r.failure()?.errorText}`);
  });
  const response = await page.goto(url + path, { waitUntil: 'load' });
  assert.equal(response.status(), 200, `${path} answers 200`);
  return { page, errors };
}

async function shot(page, name, fullPage = false) {
  const path = join(shots, name);
  await page.screenshot({ path, type: 'png', fullPage });
  assert.ok(statSync(path).size > 5000, `${name} has content`);
}

before(async () => {
  assert.ok(SWIFTLET && existsSync(SWIFTLET), 'SWIFTLET must name the built swiftlet binary');
  assert.ok(SHARED && existsSync(SHARED), 'SWIFTLET_SHARED must name the shared directory');
  assert.ok(existsSync(PLAYWRIGHT), `${PLAYWRIGHT} is missing: run scripts/setup.sh (npm ci in tests/browser)`);
  assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing: run scripts/setup.sh (apt-get install chromium)`);
  ({ chromium } = await import('playwright-core'));
  dir = mkdtempSync(join(tmpdir(), 'swiftlet-browser-'));
  shots = process.env.SWIFTLET_SCREENSHOTS || join(dir, 'screenshots');
  mkdirSync(shots, { recursive: true });
  server = await startServer(makeModel());
  // This machine has no network: chromium's background services are off,
  // or it keeps trying to reach them. A fresh profile every run.
  context = await chromium.launchPersistentContext(join(dir, 'profile'), {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1280, height: 860 },
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
});

after(async () => {
  if (context) await context.close();
  await stopServer(server);
  if (dir && !process.env.SWIFTLET_KEEP_TMP) rmSync(dir, { recursive: true, force: true });
});

// ---------------------------------------------------------------------------

test('dashboard: loads clean, charts change under load', async () => {
  const { page, errors } = await openPage(server.url, '/');
  await page.waitForFunction(() => Number(document.body.dataset.updates || 0) >= 2, null, { timeout: 30_000 });
  const charts = await page.$$eval('[data-chart]', (els) => els.map((e) => e.dataset.chart));
  assert.deepEqual(charts, ['ttft', 'tpot', 'requests', 'queue', 'kv', 'tokens']);
  const maxOf = (key) => page.$eval(`path[data-series="${key}"]`, (p) => Number(p.dataset.max));
  assert.equal(await maxOf('tokens_per_s'), 0, 'an idle server generates nothing');
  assert.equal(await maxOf('requests_per_s'), 0);
  // The model card and the targets come from the server.
  const card = await page.textContent('#model-card');
  assert.match(card, /llama/);
  assert.match(card, /Q8_0/);
  assert.match(await page.textContent('#slo'), /TTFT ≤ 500 ms, TPOT ≤ 100 ms/);

  let done = false;
  const load = applyLoad(server.url, 6, () => done);
  try {
    await page.waitForFunction(() => {
      const max = (k) => Number(document.querySelector(`path[data-series="${k}"]`).dataset.max);
      return max('tokens_per_s') > 0 && max('requests_per_s') > 0 && max('ttft_p95_ms') > 0 && max('tpot_p95_ms') > 0;
    }, null, { timeout: 40_000, polling: 250 });
    // More samples under load, then the picture: a few, or for the
    // screenshots in the docs twenty.
    const more = process.env.SWIFTLET_SCREENSHOTS ? 20 : 3;
    const updates = await page.evaluate(() => Number(document.body.dataset.updates));
    await page.waitForFunction((u) => Number(document.body.dataset.updates) >= u, updates + more,
      { timeout: 20_000 + more * 2000 });
    await shot(page, 'dashboard.png', true);
  } finally {
    done = true;
  }
  const counts = await load;
  assert.ok(counts.ok > 0, JSON.stringify(counts));
  assert.ok((await page.$eval('path[data-series="tokens_per_s"]', (p) => Number(p.dataset.points))) >= 2);
  assert.deepEqual(errors, []);
  await page.close();
});

test('playground: a reply streams token by token with counters', async () => {
  const { page, errors } = await openPage(server.url, '/playground');
  await page.waitForFunction(() => document.getElementById('model-name').dataset.model === 'tiny');
  const sse = page.waitForResponse((r) => r.url().endsWith('/v1/chat/completions'));
  // Every change of the reply's text while the stream is open.
  await page.evaluate(() => {
    window.__seen = [];
    new MutationObserver(() => {
      const out = document.querySelector('.msg.assistant:last-of-type');
      const state = document.getElementById('counters').dataset.state;
      if (out) window.__seen.push({ state, length: out.textContent.length });
    }).observe(document.getElementById('transcript'), { subtree: true, childList: true, characterData: true });
  });
  await page.fill('#max_tokens', '64');
  await page.fill('#seed', '7');
  await page.fill('#prompt', 'Tell me about the sea.');
  // The tiny test model writes a whole reply faster than the browser reads
  // once; other requests in the same batches space its tokens out, as on
  // a busy server.
  let done = false;
  const load = applyLoad(server.url, 3, () => done);
  try {
    await page.click('#send');
    const response = await sse;
    assert.equal(response.status(), 200);
    assert.match(response.headers()['content-type'], /text\/event-stream/);
    await page.waitForFunction(() => ['done', 'error'].includes(document.getElementById('counters').dataset.state),
      null, { timeout: 60_000 });
  } finally {
    done = true;
    await load;
  }
  assert.equal(await page.getAttribute('#counters', 'data-state'), 'done');
  const seen = await page.evaluate(() => window.__seen);
  const growing = seen.filter((s) => s.state === 'streaming' && s.length > 0);
  assert.ok(new Set(growing.map((s) => s.length)).size >= 2,
    `the reply grew in steps while streaming: ${JSON.stringify(seen)}`);
  const tokens = Number(await page.textContent('#c-tokens'));
  assert.ok(tokens >= 2 && tokens <= 64, `tokens ${tokens}`);
  assert.match(await page.textContent('#c-ttft'), /ms|s$/);
  assert.match(await page.textContent('#c-prompt'), /^\d+$/);
  assert.ok((await page.textContent('.msg.assistant')).length > 0);
  assert.deepEqual(errors, []);
  await page.close();
});

test('live translation: K columns fill over the WebSocket', async () => {
  const { page, errors } = await openPage(server.url, '/live');
  await page.waitForFunction(() => document.body.dataset.stream === 'open', null, { timeout: 20_000 });
  // Four languages: the three defaults and English.
  await page.check('#langs input[value="en"]');
  await page.waitForFunction(() => document.body.dataset.stream === 'open' &&
    document.querySelectorAll('.column[data-language]:not([data-language="source"])').length === 4);
  const languages = await page.$$eval('.column[data-language]:not([data-language="source"])',
    (els) => els.map((e) => e.dataset.language));
  assert.deepEqual(languages.sort(), ['en', 'ja', 'ko', 'zh-Hant']);
  await page.fill('#budget', '10000');
  await page.dispatchEvent('#budget', 'change');
  await page.waitForFunction(() => document.body.dataset.stream === 'open');
  // A typed comment, then the simulated feed.
  await page.fill('#comment', 'hello from the browser test 👋');
  await page.press('#comment', 'Enter');
  await page.fill('#rate', '3');
  await page.click('#feed');
  await page.waitForFunction(() => {
    const cols = [...document.querySelectorAll('.column[data-language]:not([data-language="source"])')];
    return cols.length === 4 && cols.every((c) => Number(c.dataset.delivered) + Number(c.dataset.dropped) >= 4);
  }, null, { timeout: 45_000, polling: 250 });
  await page.click('#feed');  // Stop.
  for (const lang of languages) {
    const col = `.column[data-language="${lang}"]`;
    // The typed comment (#1) came back in every column.
    const ids = await page.$$eval(`${col} li`, (els) => els.map((e) => e.dataset.id));
    assert.ok(ids.includes('1'), `${lang}: ${ids}`);
    const badges = await page.$$eval(`${col} .badge`, (els) => els.map((e) => e.textContent));
    assert.ok(badges.length >= 4 && badges.every((b) => /ms|s$|late|overflow/.test(b)), `${lang}: ${badges}`);
  }
  const delivered = await page.$$eval('.column[data-language]', (els) =>
    els.reduce((n, e) => n + Number(e.dataset.delivered || 0), 0));
  assert.ok(delivered > 0, 'some translations arrived within the budget');
  if (process.env.SWIFTLET_SCREENSHOTS) {
    // For the docs: a burst faster than the stream's two comments in
    // flight, so its queue grows and the later comments miss the budget:
    // late drops beside results.
    await page.fill('#budget', '200');
    await page.dispatchEvent('#budget', 'change');
    await page.waitForFunction(() => document.body.dataset.stream === 'open');
    await page.fill('#rate', '10');
    await page.click('#feed');
    await page.waitForTimeout(3000);
    await page.click('#feed');
    await page.waitForTimeout(1500);
  }
  await shot(page, 'live-translation.png');
  assert.deepEqual(errors, []);
  await page.close();
});

test('with --api-keys: pages public, /stats needs an admin key, a pasted key works', async () => {
  const keys = join(dir, 'keys.jsonl');
  const add = (id, ...flags) => execFileSync(SWIFTLET, ['keys', 'add', '--file', keys, '--id', id, ...flags],
    { stdio: ['ignore', 'pipe', 'pipe'] }).toString().trim().split('\n')[0];
  const admin = add('ops', '--admin');
  const user = add('app');
  const keyed = await startServer(join(dir, 'm.gguf'), ['--api-keys', keys]);
  try {
    for (const path of ['/', '/playground', '/live', '/ui/charts.js']) {
      assert.equal((await fetch(keyed.url + path)).status, 200, `${path} is public`);
    }
    const stats = (key) => fetch(keyed.url + '/stats', key ? { headers: { Authorization: 'Bearer ' + key } } : {});
    assert.equal((await stats()).status, 401);
    assert.equal((await stats(user)).status, 403);
    assert.equal((await stats(admin)).status, 200);

    const { page } = await openPage(keyed.url, '/');
    await page.waitForFunction(() => /admin API key/.test(document.getElementById('status').textContent));
    await page.fill('#api-key', admin);
    await page.waitForFunction(() => Number(document.body.dataset.updates || 0) >= 1, null, { timeout: 20_000 });
    assert.match(await page.textContent('#model-card'), /tiny/);
    // The key stays with the tab: the playground has it and streams.
    await page.goto(keyed.url + '/playground');
    assert.equal(await page.inputValue('#api-key'), admin);
    await page.fill('#max_tokens', '8');
    await page.fill('#prompt', 'hi');
    await page.click('#send');
    await page.waitForFunction(() => ['done', 'error'].includes(document.getElementById('counters').dataset.state),
      null, { timeout: 60_000 });
    assert.equal(await page.getAttribute('#counters', 'data-state'), 'done');
    // A WebSocket cannot carry the key: the live demo goes over POST
    // /v1/translate, and still fills its columns.
    await page.goto(keyed.url + '/live');
    await page.waitForFunction(() => document.getElementById('transport').value === 'http');
    await page.fill('#comment', 'hello with a key');
    await page.press('#comment', 'Enter');
    await page.waitForFunction(() => {
      const cols = [...document.querySelectorAll('.column[data-language]:not([data-language="source"])')];
      return cols.length === 3 && cols.every((c) => c.querySelector('li[data-id="1"]'));
    }, null, { timeout: 60_000 });
    await page.close();
  } finally {
    await stopServer(keyed);
  }
});
