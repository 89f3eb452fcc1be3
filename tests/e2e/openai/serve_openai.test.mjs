// swiftlet serve driven end to end by the official `openai` npm package
// (version pinned by package-lock.json next to this file).
//
// Run: SWIFTLET=<swiftlet binary> SWIFTLET_SHARED=<shared dir> \
//        node --test tests/e2e/openai/serve_openai.test.mjs
//
// The model has random weights, so its text is noise; every check compares
// the server against an independent fact (a token budget, a greedy rerun, a
// /tokenize count, the OpenAI contract), never against a value copied from
// an earlier run of the server.

import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';

const HERE = dirname(fileURLToPath(import.meta.url));
const SWIFTLET = process.env.SWIFTLET;
const SHARED = process.env.SWIFTLET_SHARED;
const SDK_PACKAGE = join(HERE, 'node_modules', 'openai', 'package.json');

// Fail loudly, not skip: a missing prerequisite must not look like a pass.
let OpenAI;
let sdk;
before(async () => {
  assert.ok(SWIFTLET, 'SWIFTLET must name the swiftlet binary');
  assert.ok(existsSync(SWIFTLET), `SWIFTLET=${SWIFTLET} does not exist`);
  assert.ok(SHARED, 'SWIFTLET_SHARED must name the shared directory');
  assert.ok(existsSync(SHARED), `SWIFTLET_SHARED=${SHARED} does not exist`);
  assert.ok(existsSync(SDK_PACKAGE),
    `${SDK_PACKAGE} is missing: run scripts/setup.sh (npm ci in tests/e2e/openai)`);
  sdk = await import('openai');
  OpenAI = sdk.default;
});

// ---------------------------------------------------------------------------
// Server process helpers.

const TIMEOUT_START_MS = 60_000;

function makeModel(dir) {
  const out = join(dir, 'm.gguf');
  execFileSync(SWIFTLET, [
    'tools', 'make-model', '--preset', 'tiny', '--type', 'Q8_0',
    '--vocab', join(SHARED, 'testdata/vocab/ggml-vocab-llama-spm.gguf'),
    '--seed', '1', '--out', out,
  ], { stdio: ['ignore', 'pipe', 'pipe'] });
  return out;
}

// Starts `swiftlet serve`; resolves once it prints its listening line.
function startServer(model, extra = []) {
  const args = ['serve', '-m', model, '--port', '0', '--chat-template', 'llama2',
    '--threads', '2', '--kv-memory', '256MiB', '--model-name', 'tiny', ...extra];
  const proc = spawn(SWIFTLET, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const server = { proc, logs: [], stderr: [], exit: null };
  server.exited = new Promise((resolve) => proc.on('exit', (code, signal) => {
    server.exit = { code, signal };
    resolve(server.exit);
  }));
  createInterface({ input: proc.stderr }).on('line', (line) => {
    server.stderr.push(line);
    if (line.startsWith('{')) {
      try { server.logs.push(JSON.parse(line)); } catch { /* not a log line */ }
    }
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      reject(new Error(`server did not start in time; stderr:\n${server.stderr.join('\n')}`));
    }, TIMEOUT_START_MS);
    server.exited.then((e) => {
      clearTimeout(timer);
      reject(new Error(`server exited early (${JSON.stringify(e)}); stderr:\n${server.stderr.join('\n')}`));
    });
    createInterface({ input: proc.stdout }).on('line', (line) => {
      const m = line.match(/^swiftlet: serving tiny on (http:\/\/127\.0\.0\.1:(\d+))/);
      if (m && !server.base) {
        clearTimeout(timer);
        server.base = m[1];
        server.port = Number(m[2]);
        server.client = new OpenAI({ baseURL: `${server.base}/v1`, apiKey: 'unused', maxRetries: 0 });
        resolve(server);
      }
    });
  });
}

async function stopServer(server) {
  if (!server || server.exit) return server?.exit;
  server.proc.kill('SIGTERM');
  const killer = setTimeout(() => server.proc.kill('SIGKILL'), 15_000);
  const exit = await server.exited;
  clearTimeout(killer);
  return exit;
}

async function postJson(server, path, body) {
  const res = await fetch(`${server.base}${path}`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body),
  });
  const text = await res.text();
  assert.equal(res.status, 200, `${path} ${JSON.stringify(body)} -> ${res.status} ${text}`);
  return JSON.parse(text);
}

async function tokenCount(server, body) {
  const r = await postJson(server, '/tokenize', body);
  assert.equal(r.count, r.tokens.length);
  return r.count;
}

async function metrics(server) {
  const res = await fetch(`${server.base}/metrics`);
  assert.equal(res.status, 200);
  const values = new Map();
  for (const line of (await res.text()).split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = line.match(/^(\S+)\s+(\S+)$/);
    if (!m) continue;
    // Engine series carry the model's label: summed over models.
    const key = m[1].replace(/model="[^"]*",?/, '').replace('{}', '');
    values.set(key, (values.get(key) ?? 0) + Number(m[2]));
  }
  return values;
}

function metric(values, name) {
  assert.ok(values.has(name), `metric ${name} missing from /metrics`);
  return values.get(name);
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Collects a streamed completion/chat: text per choice index, finish reasons,
// the usage chunk, and every chunk.
async function collect(stream, field = (c) => c.text) {
  const texts = new Map();
  const finish = new Map();
  const chunks = [];
  let usage = null;
  for await (const chunk of stream) {
    chunks.push(chunk);
    if (chunk.usage) {
      assert.equal(usage, null, 'only one chunk may carry usage');
      usage = chunk.usage;
    }
    for (const c of chunk.choices) {
      texts.set(c.index, (texts.get(c.index) ?? '') + (field(c) ?? ''));
      if (c.finish_reason) {
        assert.ok(!finish.has(c.index), `choice ${c.index} finished twice`);
        finish.set(c.index, c.finish_reason);
      }
    }
  }
  return { texts, finish, chunks, usage };
}

function assertUsage(usage, { prompt, completion }) {
  assert.ok(usage, 'usage present');
  if (prompt !== undefined) assert.equal(usage.prompt_tokens, prompt, 'prompt_tokens');
  if (completion !== undefined) assert.equal(usage.completion_tokens, completion, 'completion_tokens');
  assert.equal(usage.total_tokens, usage.prompt_tokens + usage.completion_tokens, 'total_tokens');
  const cached = usage.prompt_tokens_details?.cached_tokens;
  assert.equal(typeof cached, 'number', 'prompt_tokens_details.cached_tokens');
  assert.ok(cached >= 0 && cached <= usage.prompt_tokens, `cached_tokens ${cached}`);
}

// Python-style length (code points), what OpenAI's character offsets count.
const cpLen = (s) => [...s].length;

const PROMPT = 'The quick brown fox';
const PROMPT2 = 'Once upon a time, in a land far away';
const MESSAGES = [
  { role: 'system', content: 'You are terse.' },
  { role: 'user', content: 'Name three colours.' },
];

// ---------------------------------------------------------------------------

describe('swiftlet serve with the openai SDK', () => {
  let dir;
  let model;
  let server;
  let client;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'swiftlet-openai-'));
    model = makeModel(dir);
    server = await startServer(model);
    client = server.client;
  });

  after(async () => {
    const exit = await stopServer(server);
    if (dir) rmSync(dir, { recursive: true, force: true });
    assert.deepEqual(exit, { code: 0, signal: null }, 'SIGTERM exits 0');
  });

  const greedy = (prompt, extra = {}) => client.completions.create(
    { model: 'tiny', prompt, max_tokens: 24, temperature: 0, ...extra });

  describe('models', () => {
    test('list has tiny', async () => {
      const page = await client.models.list();
      assert.deepEqual(page.data.map((m) => m.id), ['tiny']);
      assert.equal(page.data[0].object, 'model');
    });

    test('retrieve tiny; others are 404', async () => {
      const m = await client.models.retrieve('tiny');
      assert.equal(m.id, 'tiny');
      assert.equal(m.object, 'model');
      await assert.rejects(client.models.retrieve('gpt-4o'), (e) => {
        assert.ok(e instanceof sdk.NotFoundError, `${e}`);
        assert.equal(e.status, 404);
        return true;
      });
    });
  });

  describe('completions', () => {
    test('ignore_eos makes exactly max_tokens tokens; usage matches /tokenize', async () => {
      const r = await client.completions.create(
        { model: 'tiny', prompt: PROMPT, max_tokens: 12, ignore_eos: true, temperature: 1, seed: 3 });
      assert.equal(r.object, 'text_completion');
      assert.equal(r.model, 'tiny');
      assert.match(r.id, /\S/);
      assert.equal(r.choices.length, 1);
      assert.equal(r.choices[0].index, 0);
      assert.equal(r.choices[0].finish_reason, 'length');
      assert.equal(typeof r.choices[0].text, 'string');
      assertUsage(r.usage, { prompt: await tokenCount(server, { prompt: PROMPT }), completion: 12 });
    });

    test('default max_tokens is 16; model may be omitted', async () => {
      const r = await client.completions.create({ prompt: PROMPT, ignore_eos: true });
      assert.equal(r.choices[0].finish_reason, 'length');
      assert.equal(r.usage.completion_tokens, 16);
    });

    test('stream at temperature 0 concatenates to the non-streamed text', async () => {
      const plain = await greedy(PROMPT, { ignore_eos: true });
      const s = await collect(await client.completions.create({
        model: 'tiny', prompt: PROMPT, max_tokens: 24, temperature: 0, ignore_eos: true,
        stream: true, stream_options: { include_usage: true },
      }));
      assert.equal(s.texts.get(0), plain.choices[0].text);
      assert.equal(s.finish.get(0), 'length');
      const last = s.chunks.at(-1);
      assert.deepEqual(last.choices, [], 'usage chunk comes last with choices []');
      assertUsage(s.usage, { prompt: plain.usage.prompt_tokens, completion: 24 });
      for (const c of s.chunks) assert.equal(c.object, 'text_completion');
    });

    test('stream without include_usage carries no usage', async () => {
      const s = await collect(await client.completions.create(
        { prompt: PROMPT, max_tokens: 4, stream: true }));
      assert.equal(s.usage, null);
      assert.ok(s.finish.has(0));
    });

    test('stream at temperature 1 with a seed equals the non-streamed text', async () => {
      const body = { prompt: PROMPT, max_tokens: 24, temperature: 1, seed: 1234, ignore_eos: true };
      const plain = await client.completions.create(body);
      const s = await collect(await client.completions.create({ ...body, stream: true }));
      assert.equal(s.texts.get(0), plain.choices[0].text);
    });

    test('same seed twice gives the same text; different seeds differ', async () => {
      const run = async (seed) => (await client.completions.create(
        { prompt: PROMPT, max_tokens: 16, temperature: 1, seed, ignore_eos: true })).choices[0].text;
      assert.equal(await run(7), await run(7));
      const seen = new Set();
      for (const seed of [11, 12, 13, 14]) seen.add(await run(seed));
      assert.ok(seen.size >= 2, `4 seeds gave ${seen.size} distinct text(s)`);
    });

    test('n=3 gives indexes 0,1,2 and 3x the tokens', async () => {
      const r = await client.completions.create(
        { prompt: PROMPT, n: 3, max_tokens: 8, temperature: 1, seed: 5, ignore_eos: true });
      assert.deepEqual(r.choices.map((c) => c.index).sort(), [0, 1, 2]);
      for (const c of r.choices) assert.equal(c.finish_reason, 'length');
      assertUsage(r.usage, { prompt: await tokenCount(server, { prompt: PROMPT }), completion: 24 });
      const s = await collect(await client.completions.create(
        { prompt: PROMPT, n: 3, max_tokens: 8, temperature: 1, seed: 5, ignore_eos: true,
          stream: true, stream_options: { include_usage: true } }));
      assert.deepEqual([...s.finish.keys()].sort(), [0, 1, 2]);
      assert.equal(s.usage.completion_tokens, 24);
    });

    test('several prompts: index = prompt_index*n + choice, each equals its own greedy run', async () => {
      const a = (await greedy(PROMPT)).choices[0].text;
      const b = (await greedy(PROMPT2)).choices[0].text;
      const r = await greedy([PROMPT, PROMPT2], { n: 2 });
      const byIndex = new Map(r.choices.map((c) => [c.index, c.text]));
      assert.deepEqual([...byIndex.keys()].sort(), [0, 1, 2, 3]);
      assert.equal(byIndex.get(0), a);
      assert.equal(byIndex.get(1), a);
      assert.equal(byIndex.get(2), b);
      assert.equal(byIndex.get(3), b);
      const prompt = await tokenCount(server, { prompt: PROMPT }) + await tokenCount(server, { prompt: PROMPT2 });
      assert.equal(r.usage.prompt_tokens, prompt, 'prompt tokens counted once per prompt');

      const s = await collect(await client.completions.create({
        prompt: [PROMPT, PROMPT2], n: 2, max_tokens: 24, temperature: 0, stream: true,
      }));
      assert.deepEqual([...s.texts.entries()].sort(), [[0, a], [1, a], [2, b], [3, b]]);
    });

    test('token-id prompts equal their string prompts', async () => {
      const ids = (await postJson(server, '/tokenize', { prompt: PROMPT })).tokens;
      const ids2 = (await postJson(server, '/tokenize', { prompt: PROMPT2 })).tokens;
      const a = (await greedy(PROMPT)).choices[0].text;
      const b = (await greedy(PROMPT2)).choices[0].text;
      const one = await greedy(ids);
      assert.equal(one.choices[0].text, a);
      assert.equal(one.usage.prompt_tokens, ids.length);
      const two = await greedy([ids, ids2]);
      assert.deepEqual(two.choices.map((c) => [c.index, c.text]).sort(), [[0, a], [1, b]]);
    });

    test('stop: output is the greedy prefix before the first stop; stop never emitted', async () => {
      const full = (await greedy(PROMPT2)).choices[0].text;
      assert.ok(cpLen(full) >= 12, `greedy text too short to cut: ${JSON.stringify(full)}`);
      const chars = [...full];
      const mid = Math.floor(chars.length / 2);
      const stop = chars.slice(mid, mid + 3).join('');
      const expected = full.slice(0, full.indexOf(stop));
      const r = await greedy(PROMPT2, { stop });
      assert.equal(r.choices[0].text, expected);
      assert.equal(r.choices[0].finish_reason, 'stop');
      assert.ok(r.usage.completion_tokens < 24);

      const s = await collect(await client.completions.create(
        { prompt: PROMPT2, max_tokens: 24, temperature: 0, stop: [stop], stream: true }));
      assert.equal(s.texts.get(0), expected);
      assert.equal(s.finish.get(0), 'stop');

      // Two stops: the earliest occurrence of either wins.
      const late = chars.slice(chars.length - 3).join('');
      const early = chars.slice(2, 4).join('');
      const cut = Math.min(...[late, early].map((x) => full.indexOf(x)));
      const r2 = await greedy(PROMPT2, { stop: [late, early] });
      assert.equal(r2.choices[0].text, full.slice(0, cut));
      assert.equal(r2.choices[0].finish_reason, 'stop');
    });

    test('logprobs k: shape, sorted tops, greedy token is the best', async () => {
      const k = 3;
      const r = await client.completions.create(
        { prompt: PROMPT, max_tokens: 10, temperature: 0, logprobs: k, ignore_eos: true });
      const c = r.choices[0];
      const lp = c.logprobs;
      assert.ok(lp, 'logprobs present');
      const n = r.usage.completion_tokens;
      assert.equal(n, 10);
      assert.equal(lp.tokens.length, n);
      assert.equal(lp.token_logprobs.length, n);
      assert.equal(lp.top_logprobs.length, n);
      assert.equal(lp.text_offset.length, n);
      for (let i = 0; i < n; i++) {
        assert.ok(lp.token_logprobs[i] <= 0, `token_logprobs[${i}] = ${lp.token_logprobs[i]}`);
        const tops = Object.values(lp.top_logprobs[i]);
        assert.ok(tops.length >= 1 && tops.length <= k + 1, `top_logprobs[${i}] has ${tops.length}`);
        for (const v of tops) assert.ok(v <= 0);
        const best = Math.max(...tops);
        assert.ok(Math.abs(lp.token_logprobs[i] - best) < 1e-4,
          `greedy token ${i} logprob ${lp.token_logprobs[i]} != best ${best}`);
        if (i > 0) assert.ok(lp.text_offset[i] >= lp.text_offset[i - 1], 'text_offset ascending');
      }
      // Exactly k distinct alternatives when the chosen token is among them (greedy).
      for (const t of lp.top_logprobs) assert.equal(Object.keys(t).length, k);
    });

    test('logprobs text_offset counts characters, token after token', async () => {
      // Prompt 2's greedy run has non-ASCII tokens, where bytes and characters differ.
      for (const prompt of [PROMPT, PROMPT2]) {
        const r = await client.completions.create(
          { prompt, max_tokens: 16, temperature: 0, logprobs: 1, ignore_eos: true });
        const { tokens, text_offset } = r.choices[0].logprobs;
        for (let i = 1; i < tokens.length; i++) {
          assert.equal(text_offset[i] - text_offset[i - 1], cpLen(tokens[i - 1]),
            `text_offset[${i}] after ${JSON.stringify(tokens[i - 1])} (offsets ${text_offset})`);
        }
      }
    });

    test('logprobs tokens concatenate to the text', async () => {
      for (const prompt of ['Hello', PROMPT, PROMPT2]) {
        const r = await client.completions.create(
          { prompt, max_tokens: 10, temperature: 0, logprobs: 1, ignore_eos: true });
        const lp = r.choices[0].logprobs;
        assert.equal(lp.tokens.join(''), r.choices[0].text, `prompt ${JSON.stringify(prompt)}`);
      }
    });

    test('streamed logprobs match the non-streamed ones', async () => {
      const body = { prompt: PROMPT, max_tokens: 8, temperature: 0, logprobs: 2, ignore_eos: true };
      const plain = (await client.completions.create(body)).choices[0].logprobs;
      const tokens = [];
      const lps = [];
      for await (const chunk of await client.completions.create({ ...body, stream: true })) {
        for (const c of chunk.choices) {
          if (c.logprobs) {
            tokens.push(...c.logprobs.tokens);
            lps.push(...c.logprobs.token_logprobs);
          }
        }
      }
      assert.deepEqual(tokens, plain.tokens);
      assert.equal(lps.length, plain.token_logprobs.length);
      lps.forEach((v, i) => assert.ok(Math.abs(v - plain.token_logprobs[i]) < 1e-4));
    });

    test('prompt prefix cache reports cached_tokens on a repeat', async () => {
      const long = Array.from({ length: 12 }, (_, i) => `item ${i} is here,`).join(' ');
      const first = await client.completions.create({ prompt: long, max_tokens: 2 });
      const again = await client.completions.create({ prompt: long, max_tokens: 2 });
      assert.equal(again.usage.prompt_tokens, first.usage.prompt_tokens);
      assert.ok(first.usage.prompt_tokens >= 32);
      assert.ok(again.usage.prompt_tokens_details.cached_tokens > 0, 'repeat prompt hits the cache');
      assertUsage(again.usage, {});
    });

    test('sampling fields and extensions are accepted', async () => {
      const r = await client.completions.create({
        prompt: PROMPT, max_tokens: 6, temperature: 0.8, top_p: 0.9, seed: 1,
        presence_penalty: 0.5, frequency_penalty: 0.5, user: 'e2e',
        top_k: 40, min_p: 0.05, repetition_penalty: 1.1, priority: 'batch', ttft_target_ms: 60_000,
      });
      assert.equal(r.choices.length, 1);
      assert.ok(r.usage.completion_tokens <= 6);
    });

    test('top_k 1, min_p 1 and neutral penalties at temperature 1 are greedy', async () => {
      const a = (await greedy(PROMPT, { ignore_eos: true })).choices[0].text;
      const variants = [
        { top_k: 1 }, { min_p: 1 }, { top_p: 1e-9 },
      ];
      for (const v of variants) {
        const r = await greedy(PROMPT, { temperature: 1, seed: 99, ignore_eos: true, ...v });
        assert.equal(r.choices[0].text, a, JSON.stringify(v));
      }
      const neutral = await greedy(PROMPT, {
        ignore_eos: true, repetition_penalty: 1, presence_penalty: 0, frequency_penalty: 0,
      });
      assert.equal(neutral.choices[0].text, a);
    });

    test('min_tokens holds back the end', async () => {
      const r = await client.completions.create(
        { prompt: PROMPT, max_tokens: 20, min_tokens: 20, temperature: 1, seed: 2 });
      assert.equal(r.usage.completion_tokens, 20);
      assert.equal(r.choices[0].finish_reason, 'length');
    });
  });

  describe('chat completions', () => {
    test('non-streamed: message, usage matches /tokenize of messages', async () => {
      const r = await client.chat.completions.create(
        { model: 'tiny', messages: MESSAGES, max_completion_tokens: 10, ignore_eos: true });
      assert.equal(r.object, 'chat.completion');
      assert.equal(r.model, 'tiny');
      assert.equal(r.choices.length, 1);
      const c = r.choices[0];
      assert.equal(c.index, 0);
      assert.equal(c.message.role, 'assistant');
      assert.equal(typeof c.message.content, 'string');
      assert.equal(c.finish_reason, 'length');
      assertUsage(r.usage, { prompt: await tokenCount(server, { messages: MESSAGES }), completion: 10 });
    });

    test('max_tokens works as well as max_completion_tokens', async () => {
      const r = await client.chat.completions.create(
        { messages: MESSAGES, max_tokens: 5, ignore_eos: true });
      assert.equal(r.usage.completion_tokens, 5);
    });

    test('stream: role first per choice, text equals non-streamed, usage last', async () => {
      const body = { messages: MESSAGES, max_tokens: 16, temperature: 0, ignore_eos: true };
      const plain = await client.chat.completions.create(body);
      const stream = await client.chat.completions.create(
        { ...body, n: 2, stream: true, stream_options: { include_usage: true } });
      const s = await collect(stream, (c) => c.delta?.content);
      for (const i of [0, 1]) {
        const first = s.chunks.find((ch) => ch.choices.some((c) => c.index === i));
        assert.ok(first, `choice ${i} streamed`);
        assert.equal(first.choices.find((c) => c.index === i).delta.role, 'assistant');
        assert.equal(s.texts.get(i), plain.choices[0].message.content);
        assert.equal(s.finish.get(i), 'length');
      }
      for (const ch of s.chunks) assert.equal(ch.object, 'chat.completion.chunk');
      assert.deepEqual(s.chunks.at(-1).choices, []);
      assertUsage(s.usage, { prompt: plain.usage.prompt_tokens, completion: 32 });
    });

    test('stream at temperature 1 with a seed equals the non-streamed text', async () => {
      const body = { messages: MESSAGES, max_tokens: 16, temperature: 1, seed: 77, ignore_eos: true };
      const plain = await client.chat.completions.create(body);
      const s = await collect(await client.chat.completions.create({ ...body, stream: true }),
        (c) => c.delta?.content);
      assert.equal(s.texts.get(0), plain.choices[0].message.content);
    });

    test('n=3 gives indexes 0,1,2', async () => {
      const r = await client.chat.completions.create(
        { messages: MESSAGES, n: 3, max_tokens: 4, ignore_eos: true, seed: 4 });
      assert.deepEqual(r.choices.map((c) => c.index).sort(), [0, 1, 2]);
      assert.equal(r.usage.completion_tokens, 12);
    });

    test('stop in chat ends before the stop string', async () => {
      const body = { messages: MESSAGES, max_tokens: 24, temperature: 0 };
      const full = (await client.chat.completions.create(body)).choices[0].message.content;
      assert.ok(cpLen(full) >= 12, `greedy text too short to cut: ${JSON.stringify(full)}`);
      const chars = [...full];
      const mid = Math.floor(chars.length / 2);
      const stop = chars.slice(mid, mid + 3).join('');
      const r = await client.chat.completions.create({ ...body, stop });
      assert.equal(r.choices[0].message.content, full.slice(0, full.indexOf(stop)));
      assert.equal(r.choices[0].finish_reason, 'stop');
    });

    test('logprobs + top_logprobs: shape, bytes, sorted, greedy is best', async () => {
      const k = 4;
      const r = await client.chat.completions.create({
        messages: MESSAGES, max_tokens: 10, temperature: 0, ignore_eos: true,
        logprobs: true, top_logprobs: k,
      });
      const content = r.choices[0].logprobs?.content;
      assert.ok(Array.isArray(content), 'choice.logprobs.content');
      assert.equal(content.length, r.usage.completion_tokens);
      for (const [i, e] of content.entries()) {
        assert.equal(typeof e.token, 'string');
        assert.ok(e.logprob <= 0);
        assert.ok(Array.isArray(e.bytes));
        assert.equal(e.top_logprobs.length, k);
        for (let j = 1; j < k; j++) {
          assert.ok(e.top_logprobs[j - 1].logprob >= e.top_logprobs[j].logprob,
            `entry ${i}: top_logprobs sorted descending`);
        }
        for (const t of e.top_logprobs) {
          assert.ok(t.logprob <= 0);
          assert.ok(Array.isArray(t.bytes));
        }
        assert.ok(Math.abs(e.logprob - e.top_logprobs[0].logprob) < 1e-4,
          `entry ${i}: greedy logprob ${e.logprob} != best ${e.top_logprobs[0].logprob}`);
      }
      for (const e of content) {
        // A whole-character token's bytes are its UTF-8 (byte-fallback pieces may not be).
        if (!e.token.includes('\uFFFD')) assert.deepEqual(Buffer.from(e.bytes), Buffer.from(e.token, 'utf8'));
      }
    });

    test('logprobs bytes concatenate to the message content', async () => {
      const r = await client.chat.completions.create({
        messages: MESSAGES, max_tokens: 10, temperature: 0, ignore_eos: true, logprobs: true,
      });
      const content = r.choices[0].logprobs.content;
      const bytes = Buffer.from(content.flatMap((e) => e.bytes));
      assert.equal(bytes.toString('utf8'), r.choices[0].message.content);
      assert.equal(content.map((e) => e.token).join(''), r.choices[0].message.content);
    });

    test('logprobs without top_logprobs gives empty tops', async () => {
      const r = await client.chat.completions.create(
        { messages: MESSAGES, max_tokens: 3, logprobs: true, ignore_eos: true });
      const content = r.choices[0].logprobs.content;
      assert.equal(content.length, 3);
      for (const e of content) assert.deepEqual(e.top_logprobs, []);
    });

    test('no logprobs asked: logprobs is null', async () => {
      const r = await client.chat.completions.create({ messages: MESSAGES, max_tokens: 2 });
      assert.equal(r.choices[0].logprobs ?? null, null);
    });
  });

  describe('embeddings', () => {
    const norm = (v) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));

    test('float: one L2-normalised 256-vector per input, in order', async () => {
      const r = await client.embeddings.create(
        { model: 'tiny', input: ['Hello', 'a different text'], encoding_format: 'float' });
      assert.equal(r.object, 'list');
      assert.equal(r.data.length, 2);
      r.data.forEach((d, i) => {
        assert.equal(d.index, i);
        assert.equal(d.object, 'embedding');
        assert.ok(Array.isArray(d.embedding));
        assert.equal(d.embedding.length, 256);
        assert.ok(Math.abs(norm(d.embedding) - 1) < 1e-3, `norm ${norm(d.embedding)}`);
      });
      assert.notDeepEqual(r.data[0].embedding, r.data[1].embedding);
      const prompt = await tokenCount(server, { prompt: 'Hello' })
        + await tokenCount(server, { prompt: 'a different text' });
      assert.equal(r.usage.prompt_tokens, prompt);
    });

    test('SDK default (base64) decodes to the same vectors', async () => {
      const input = ['Hello', 'a different text'];
      const f = await client.embeddings.create({ input, encoding_format: 'float' });
      const b = await client.embeddings.create({ input });
      assert.equal(b.data.length, 2);
      b.data.forEach((d, i) => {
        assert.equal(d.embedding.length, 256);
        d.embedding.forEach((x, j) => assert.ok(Math.abs(x - f.data[i].embedding[j]) < 1e-6));
      });
      // And the wire format really is base64 of little-endian float32.
      const raw = await postJson(server, '/v1/embeddings', { input: 'Hello', encoding_format: 'base64' });
      assert.equal(typeof raw.data[0].embedding, 'string');
      const buf = Buffer.from(raw.data[0].embedding, 'base64');
      assert.equal(buf.length, 256 * 4);
      const floats = Array.from({ length: 256 }, (_, j) => buf.readFloatLE(4 * j));
      floats.forEach((x, j) => assert.ok(Math.abs(x - f.data[0].embedding[j]) < 1e-6));
    });
  });

  describe('errors', () => {
    const bad = async (promise, param, Cls = sdk.BadRequestError, status = 400) => {
      await assert.rejects(promise, (e) => {
        assert.ok(e instanceof Cls, `expected ${Cls.name}, got ${e?.constructor?.name}: ${e}`);
        assert.equal(e.status, status);
        assert.equal(e.error?.param ?? e.param, param, `param of ${e.message}`);
        assert.equal(typeof e.error?.message, 'string');
        assert.equal(e.error?.type, 'invalid_request_error');
        return true;
      });
    };

    test('wrong type or out of range is 400 with the field as param', async () => {
      await bad(client.completions.create({ prompt: 'x', temperature: 'hot' }), 'temperature');
      await bad(client.completions.create({ prompt: 'x', temperature: 5 }), 'temperature');
      await bad(client.completions.create({ prompt: 'x', top_p: 1.5 }), 'top_p');
      await bad(client.completions.create({ prompt: 'x', n: 17 }), 'n');
      await bad(client.completions.create({ prompt: 'x', stop: ['a', 'b', 'c', 'd', 'e'] }), 'stop');
      await bad(client.completions.create({ prompt: 'x', max_tokens: -1 }), 'max_tokens');
      await bad(client.completions.create({ prompt: 'x', presence_penalty: 3 }), 'presence_penalty');
      await bad(client.completions.create({ prompt: 'x', frequency_penalty: 'lots' }), 'frequency_penalty');
      await bad(client.chat.completions.create({ messages: MESSAGES, temperature: 'hot' }), 'temperature');
      await bad(client.chat.completions.create({ messages: 'hi' }), 'messages');
      await bad(client.completions.create({ prompt: 'x', priority: 'urgent' }), 'priority');
      await bad(client.completions.create({ prompt: 'x', top_k: 'many' }), 'top_k');
    });

    test('a valid n=16 and four stops are accepted', async () => {
      const r = await client.completions.create(
        { prompt: 'x', n: 16, max_tokens: 1, stop: ['a', 'b', 'c', 'd'] });
      assert.equal(r.choices.length, 16);
    });

    test('unknown model is 404 with param model', async () => {
      await bad(client.completions.create({ model: 'gpt-4o', prompt: 'x' }), 'model', sdk.NotFoundError, 404);
      await bad(client.chat.completions.create({ model: 'gpt-4o', messages: MESSAGES }), 'model',
        sdk.NotFoundError, 404);
      await bad(client.completions.create({ model: 'gpt-4o', prompt: 'x', stream: true }), 'model',
        sdk.NotFoundError, 404);
    });
  });

  describe('cancellation', () => {
    test('abort mid-stream frees the KV blocks and counts as cancelled', async () => {
      const name = 'swiftlet_requests_finished_total{reason="cancelled"}';
      const before = metric(await metrics(server), name);
      assert.equal(metric(await metrics(server), 'swiftlet_kv_blocks_used'), 0, 'idle server holds no KV blocks');
      const controller = new AbortController();
      const stream = await client.completions.create(
        { prompt: PROMPT, max_tokens: 1800, ignore_eos: true, stream: true },
        { signal: controller.signal });
      let chunks = 0;
      let busy = -1;
      // The SDK ends the iteration quietly or throws an abort error; both are fine.
      try {
        for await (const _ of stream) {
          if (++chunks === 3) {
            busy = metric(await metrics(server), 'swiftlet_kv_blocks_used');
            controller.abort();
          }
        }
      } catch (e) {
        assert.ok(e instanceof sdk.APIUserAbortError || e.name === 'AbortError', `${e}`);
      }
      assert.ok(chunks >= 3 && chunks < 1800, `aborted after ${chunks} chunks`);
      assert.ok(busy > 0, `KV blocks in use while streaming: ${busy}`);
      const deadline = Date.now() + 5_000;
      let m;
      for (;;) {
        m = await metrics(server);
        if (metric(m, 'swiftlet_kv_blocks_used') === 0 && metric(m, name) > before) break;
        if (Date.now() > deadline) break;
        await sleep(100);
      }
      assert.equal(metric(m, 'swiftlet_kv_blocks_used'), 0, 'KV blocks back to 0');
      assert.equal(metric(m, name), before + 1, 'cancelled count rose by one');
      assert.equal(metric(m, 'swiftlet_requests_running'), 0);
    });
  });
});

describe('queue limit', () => {
  let dir;
  let server;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'swiftlet-openai-q-'));
    server = await startServer(makeModel(dir), ['--max-queue', '1']);
  });

  after(async () => {
    const exit = await stopServer(server);
    if (dir) rmSync(dir, { recursive: true, force: true });
    assert.deepEqual(exit, { code: 0, signal: null }, 'SIGTERM exits 0');
  });

  test('overload is 429 RateLimitError with retry-after headers, not retried', async (t) => {
    const N = 12;
    const results = await Promise.allSettled(Array.from({ length: N }, (_, i) =>
      server.client.completions.create(
        { prompt: `${PROMPT} ${i}`, max_tokens: 200, ignore_eos: true, seed: i })));
    const ok = results.filter((r) => r.status === 'fulfilled');
    const refused = results.filter((r) => r.status === 'rejected');
    t.diagnostic(`${ok.length} served, ${refused.length} refused`);
    for (const r of refused) {
      const e = r.reason;
      assert.ok(e instanceof sdk.RateLimitError, `expected RateLimitError, got ${e}`);
      assert.equal(e.status, 429);
      const after = e.headers.get('retry-after');
      const afterMs = e.headers.get('retry-after-ms');
      assert.match(after ?? '', /^\d+$/, `retry-after: ${after}`);
      assert.match(afterMs ?? '', /^\d+(\.\d+)?$/, `retry-after-ms: ${afterMs}`);
      assert.equal(typeof e.error?.message, 'string');
    }
    for (const r of ok) {
      assert.equal(r.value.usage.completion_tokens, 200);
      assert.equal(r.value.choices[0].finish_reason, 'length');
    }
    assert.ok(refused.length > 0, 'some requests must be refused');
    assert.ok(ok.length > 0, 'some requests must be served');
    // maxRetries 0: the server saw each request exactly once.
    await sleep(200);
    const logged = server.logs.filter((l) => l.endpoint === '/v1/completions');
    assert.equal(logged.length, N, 'one log line per request');
    assert.equal(logged.filter((l) => l.status === 429).length, refused.length);
    assert.equal(logged.filter((l) => l.status === 200).length, ok.length);
    const m = await metrics(server);
    assert.equal(metric(m, 'swiftlet_refusals_total{reason="queue_full"}'), refused.length);
  });
});
