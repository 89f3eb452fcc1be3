// The openai SDK as a user runs it against an https server whose CA the
// user trusts through NODE_EXTRA_CA_CERTS (read by node at start-up, so
// serve_openai_tls.test.mjs runs this file in a child process with it set).
//
// Run: SWIFTLET_BASE_URL=https://127.0.0.1:PORT/v1 NODE_EXTRA_CA_CERTS=ca.pem node tls_client.mjs
// Prints one JSON line: what a chat completion and a streamed one returned,
// or the error that stopped them.
import OpenAI from 'openai';

const client = new OpenAI({ baseURL: process.env.SWIFTLET_BASE_URL, apiKey: 'unused', maxRetries: 0 });
const messages = [{ role: 'user', content: 'Name three colours.' }];
try {
  const chat = await client.chat.completions.create({ model: 'tiny', messages, max_tokens: 8 });
  const stream = await client.chat.completions.create({
    model: 'tiny', messages, max_tokens: 8, stream: true, stream_options: { include_usage: true },
  });
  let text = '';
  let chunks = 0;
  let finish = null;
  let usage = null;
  for await (const chunk of stream) {
    chunks += 1;
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      text += c.delta?.content ?? '';
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  console.log(JSON.stringify({
    ok: true,
    chat: { content: chat.choices[0].message.content, finish: chat.choices[0].finish_reason, usage: chat.usage },
    stream: { text, chunks, finish, usage },
  }));
} catch (e) {
  // The SDK wraps fetch's error, which wraps the TLS one: report the innermost.
  let inner = e;
  while (inner?.cause) inner = inner.cause;
  console.log(JSON.stringify({
    ok: false, error: `${e?.constructor?.name}: ${e?.message}`, cause: `${inner?.code ?? ''} ${inner?.message ?? inner}`,
  }));
}
