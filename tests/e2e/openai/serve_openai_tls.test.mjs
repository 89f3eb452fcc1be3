// swiftlet serve --tls-cert/--tls-key driven by the official `openai` npm
// package over https, trusting a CA made at test time by the `openssl`
// command through NODE_EXTRA_CA_CERTS (as a user would trust a private
// CA), and refused without it.
//
// Run: SWIFTLET=<swiftlet binary> SWIFTLET_SHARED=<shared dir> \
//        node --test tests/e2e/openai/serve_openai_tls.test.mjs

import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';

const HERE = dirname(fileURLToPath(import.meta.url));
const SWIFTLET = process.env.SWIFTLET;
const SHARED = process.env.SWIFTLET_SHARED;
const TIMEOUT_START_MS = 60_000;

function run(cmd, args) {
  try {
    execFileSync(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (e) {
    throw new Error(`${cmd} ${args.join(' ')} failed: ${e.stderr ?? e}`);
  }
}

// A CA and a server certificate for localhost and 127.0.0.1, by openssl.
function makePki(dir) {
  try {
    execFileSync('openssl', ['version'], { stdio: 'ignore' });
  } catch {
    throw new Error('the `openssl` command is missing: scripts/setup.sh installs it');
  }
  const key = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  run('openssl', ['req', '-x509', ...key, '-keyout', join(dir, 'ca.key'), '-out', join(dir, 'ca.pem'),
    '-days', '2', '-subj', '/CN=swiftlet-e2e-ca', '-addext', 'basicConstraints=critical,CA:TRUE',
    '-addext', 'keyUsage=critical,keyCertSign,cRLSign']);
  run('openssl', ['req', ...key, '-keyout', join(dir, 'server.key'), '-out', join(dir, 'server.csr'),
    '-subj', '/CN=localhost']);
  writeFileSync(join(dir, 'server.ext'), 'basicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' +
    'subjectAltName=DNS:localhost,IP:127.0.0.1\n');
  run('openssl', ['x509', '-req', '-in', join(dir, 'server.csr'), '-CA', join(dir, 'ca.pem'),
    '-CAkey', join(dir, 'ca.key'), '-set_serial', '7', '-days', '2', '-extfile', join(dir, 'server.ext'),
    '-out', join(dir, 'server.pem')]);
  return { ca: join(dir, 'ca.pem'), cert: join(dir, 'server.pem'), key: join(dir, 'server.key') };
}

function startServer(model, pki) {
  const args = ['serve', '-m', model, '--port', '0', '--chat-template', 'llama2', '--threads', '2',
    '--kv-memory', '256MiB', '--model-name', 'tiny', '--tls-cert', pki.cert, '--tls-key', pki.key];
  const proc = spawn(SWIFTLET, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const server = { proc, stderr: [], exit: null };
  server.exited = new Promise((resolve) => proc.on('exit', (code, signal) => {
    server.exit = { code, signal };
    resolve(server.exit);
  }));
  createInterface({ input: proc.stderr }).on('line', (line) => server.stderr.push(line));
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
      const m = line.match(/^swiftlet: serving tiny on (https:\/\/127\.0\.0\.1:(\d+))/);
      if (m && !server.base) {
        clearTimeout(timer);
        server.base = m[1];
        resolve(server);
      }
    });
  });
}

// tls_client.mjs in a child node, with `env` added; its JSON line.
function runClient(base, env) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(HERE, 'tls_client.mjs')], {
      env: { ...process.env, SWIFTLET_BASE_URL: `${base}/v1`, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => { out += d; });
    child.stderr.on('data', (d) => { err += d; });
    const timer = setTimeout(() => child.kill('SIGKILL'), 120_000);
    child.on('exit', () => {
      clearTimeout(timer);
      try {
        resolve(JSON.parse(out.trim().split('\n').pop()));
      } catch {
        reject(new Error(`tls_client.mjs printed no result; stdout:\n${out}\nstderr:\n${err}`));
      }
    });
  });
}

describe('swiftlet serve over https with the openai SDK', () => {
  let dir;
  let pki;
  let server;

  before(async () => {
    assert.ok(SWIFTLET && existsSync(SWIFTLET), `SWIFTLET=${SWIFTLET} must name the swiftlet binary`);
    assert.ok(SHARED && existsSync(SHARED), `SWIFTLET_SHARED=${SHARED} must name the shared directory`);
    assert.ok(existsSync(join(HERE, 'node_modules', 'openai', 'package.json')),
      'the openai package is missing: run scripts/setup.sh (npm ci in tests/e2e/openai)');
    dir = mkdtempSync(join(tmpdir(), 'swiftlet-openai-tls-'));
    pki = makePki(dir);
    const model = join(dir, 'm.gguf');
    run(SWIFTLET, ['tools', 'make-model', '--preset', 'tiny', '--type', 'Q8_0', '--vocab',
      join(SHARED, 'testdata/vocab/ggml-vocab-llama-spm.gguf'), '--seed', '1', '--out', model]);
    server = await startServer(model, pki);
  });

  after(async () => {
    let exit = server?.exit;
    if (server && !exit) {
      server.proc.kill('SIGTERM');
      exit = await server.exited;
    }
    if (dir) rmSync(dir, { recursive: true, force: true });
    assert.deepEqual(exit, { code: 0, signal: null }, 'SIGTERM exits 0');
  });

  test('a chat completion and a streamed one, trusting the CA', async () => {
    const r = await runClient(server.base, { NODE_EXTRA_CA_CERTS: pki.ca });
    assert.ok(r.ok, `the SDK failed over https: ${r.error} (${r.cause})`);
    const used = r.chat.usage.completion_tokens;
    assert.ok(used >= 1 && used <= 8, `completion_tokens ${used}`);
    assert.ok(['stop', 'length'].includes(r.chat.finish), r.chat.finish);
    assert.equal(typeof r.chat.content, 'string');
    assert.ok(r.stream.chunks >= 2, `chunks ${r.stream.chunks}`);
    assert.ok(['stop', 'length'].includes(r.stream.finish), r.stream.finish);
    assert.ok(r.stream.usage, 'the stream carried usage');
    assert.ok(r.stream.usage.completion_tokens >= 1 && r.stream.usage.completion_tokens <= 8);
  });

  test('refused without the CA: the certificate does not verify', async () => {
    const r = await runClient(server.base, { NODE_EXTRA_CA_CERTS: '' });
    assert.equal(r.ok, false, 'the SDK trusted a certificate from an unknown CA');
    // Node's own verification error (SELF_SIGNED_CERT_IN_CHAIN, ...), not
    // any connection failure.
    assert.match(r.cause, /CERT|certificate/, r.cause);
  });

  test('plain http to the https port gets a 400 naming https', async () => {
    const res = await fetch(server.base.replace('https://', 'http://') + '/health');
    assert.equal(res.status, 400);
    assert.match(await res.text(), /HTTPS/);
  });
});
