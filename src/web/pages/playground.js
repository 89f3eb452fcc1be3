// The playground: a chat with the served model, streamed token by token
// over POST /v1/chat/completions (Server-Sent Events read from fetch's body,
// since EventSource can neither POST nor send the key).
//
// Counters are the browser's own clock: time to first token is from the
// request's start to the first chunk with text, per token is
// (last - first) / (tokens - 1), as the server defines TPOT.
'use strict';

(() => {
  const $ = (id) => document.getElementById(id);
  const history = [];  // {role, content} of finished turns
  let controller = null;

  function num(id, integer) {
    const raw = $(id).value.trim();
    if (raw === '') return undefined;
    const v = integer ? parseInt(raw, 10) : parseFloat(raw);
    return isFinite(v) ? v : undefined;
  }

  function body(messages) {
    const b = { model: $('model-name').dataset.model || undefined, messages, stream: true,
                stream_options: { include_usage: true } };
    const fields = { max_tokens: true, temperature: false, top_p: false, top_k: true, min_p: false,
                     repetition_penalty: false, seed: true };
    for (const [k, integer] of Object.entries(fields)) {
      const v = num(k, integer);
      if (v !== undefined) b[k] = v;
    }
    const stop = $('stop_text').value;
    if (stop) b.stop = [stop];
    b.priority = $('priority').value;
    return b;
  }

  function bubble(role, text) {
    const m = Swiftlet.el('div', { class: 'msg ' + role }, text);
    $('transcript').append(m);
    $('transcript').scrollTop = $('transcript').scrollHeight;
    return m;
  }

  function counters(c) {
    const box = $('counters');
    box.dataset.state = c.state;
    box.dataset.chunks = String(c.chunks);
    $('c-ttft').textContent = c.first === null ? '–' : Swiftlet.ms(c.first - c.start);
    $('c-tokens').textContent = String(c.tokens);
    const end = c.end !== null ? c.end : performance.now();
    const gen = c.first === null ? 0 : end - c.first;
    $('c-rate').textContent = c.tokens > 1 && gen > 0 ? ((c.tokens - 1) / (gen / 1000)).toFixed(1) : '–';
    $('c-tpot').textContent = c.tokens > 1 && c.last !== null ? Swiftlet.ms((c.last - c.first) / (c.tokens - 1)) : '–';
    $('c-total').textContent = Swiftlet.ms(end - c.start);
    $('c-prompt').textContent = c.prompt === null ? '–' : String(c.prompt);
  }

  // Calls `onEvent(json)` per SSE data line until [DONE] or the end.
  async function readEvents(response, onEvent) {
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, { stream: true });
      let cut;
      while ((cut = buffer.indexOf('\n\n')) >= 0) {
        const event = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        for (const line of event.split('\n')) {
          if (!line.startsWith('data:')) continue;
          const data = line.slice(5).trim();
          if (data === '[DONE]') return;
          onEvent(JSON.parse(data));
        }
      }
    }
  }

  async function send(text) {
    const messages = [];
    const system = $('system').value.trim();
    if (system) messages.push({ role: 'system', content: system });
    messages.push(...history, { role: 'user', content: text });
    bubble('user', text);
    const out = bubble('assistant', '');
    const c = { state: 'waiting', start: performance.now(), first: null, last: null, end: null,
                tokens: 0, chunks: 0, prompt: null };
    counters(c);
    controller = new AbortController();
    $('send').disabled = true;
    $('stop').disabled = false;
    $('status').textContent = '';
    let reply = '';
    try {
      const response = await Swiftlet.api('/v1/chat/completions', {
        method: 'POST', headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify(body(messages)), signal: controller.signal });
      c.state = 'streaming';
      await readEvents(response, (chunk) => {
        const now = performance.now();
        if (chunk.error) throw new Error(chunk.error.message || 'stream error');
        const choice = (chunk.choices || [])[0];
        const delta = choice && choice.delta && choice.delta.content;
        if (delta) {
          if (c.first === null) c.first = now;
          c.last = now;
          c.tokens += 1;  // One chunk per token, as the server streams them.
          reply += delta;
          out.textContent = reply;
          $('transcript').scrollTop = $('transcript').scrollHeight;
        }
        if (chunk.usage) {
          c.prompt = chunk.usage.prompt_tokens;
          c.tokens = chunk.usage.completion_tokens;
        }
        c.chunks += 1;
        counters(c);
      });
      c.state = 'done';
      history.push({ role: 'user', content: text }, { role: 'assistant', content: reply });
    } catch (e) {
      c.state = e.name === 'AbortError' ? 'stopped' : 'error';
      if (c.state === 'error') {
        out.remove();
        bubble('error', e.message);
      }
    } finally {
      c.end = performance.now();
      counters(c);
      controller = null;
      $('send').disabled = false;
      $('stop').disabled = true;
    }
  }

  async function loadModel() {
    try {
      const list = await (await Swiftlet.api('/v1/models')).json();
      const id = list.data && list.data[0] && list.data[0].id;
      if (id) { $('model-name').textContent = '· ' + id; $('model-name').dataset.model = id; }
    } catch (e) {
      $('status').textContent = 'models: ' + e.message +
        (e.status === 401 ? ' — paste an API key above' : '');
    }
  }

  $('composer').addEventListener('submit', (e) => {
    e.preventDefault();
    const text = $('prompt').value.trim();
    if (!text || controller) return;
    $('prompt').value = '';
    send(text);
  });
  $('prompt').addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) $('composer').requestSubmit();
  });
  $('stop').addEventListener('click', () => controller && controller.abort());
  $('clear').addEventListener('click', () => { history.length = 0; $('transcript').replaceChildren(); });
  Swiftlet.onKey(loadModel);
  loadModel();
})();
