// Drives a running llmserve with the official openai client.
// Environment: LLMSERVE_URL (e.g. http://127.0.0.1:8080), LLMSERVE_MODEL (the
// served model id), LLMSERVE_API_KEY (set when the server requires one).
import assert from 'node:assert/strict';
import OpenAI from 'openai';

const base = process.env.LLMSERVE_URL;
const model = process.env.LLMSERVE_MODEL;
const key = process.env.LLMSERVE_API_KEY || '';
assert.ok(base && model, 'LLMSERVE_URL and LLMSERVE_MODEL must be set');

const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: key || 'unused', maxRetries: 0, timeout: 60_000 });
let failures = 0;

async function check(name, fn) {
  try {
    await fn();
    console.log(`ok   ${name}`);
  } catch (err) {
    failures++;
    console.log(`FAIL ${name}: ${err?.stack || err}`);
  }
}

await check('models.list', async () => {
  const page = await client.models.list();
  assert.deepEqual(page.data.map((m) => m.id), [model]);
});

await check('completions.create', async () => {
  const r = await client.completions.create({ model, prompt: 'Once upon a time', max_tokens: 24, temperature: 0 });
  assert.equal(r.object, 'text_completion');
  assert.match(r.id, /^cmpl-/);
  assert.equal(r.choices.length, 1);
  assert.ok(r.choices[0].text.length > 0, 'empty completion');
  assert.ok(['stop', 'length'].includes(r.choices[0].finish_reason));
  assert.ok(r.usage.prompt_tokens > 0 && r.usage.completion_tokens > 0);
  assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens);
});

const chatParams = {
  model,
  messages: [
    { role: 'system', content: 'You tell short stories.' },
    { role: 'user', content: 'Tell me about a cat.' },
  ],
  max_tokens: 32,
  temperature: 0.7,
  seed: 1234,
};

let chatText;
await check('chat.completions.create', async () => {
  const r = await client.chat.completions.create(chatParams);
  assert.equal(r.object, 'chat.completion');
  assert.match(r.id, /^chatcmpl-/);
  assert.equal(r.choices[0].message.role, 'assistant');
  assert.ok(r.choices[0].message.content.length > 0, 'empty chat answer');
  chatText = r.choices[0].message.content;
});

await check('chat.completions.create stream (same seed, same text)', async () => {
  const stream = await client.chat.completions.create({ ...chatParams, stream: true, stream_options: { include_usage: true } });
  let text = '';
  let finish = null;
  let usage = null;
  let chunks = 0;
  for await (const chunk of stream) {
    chunks++;
    assert.equal(chunk.object, 'chat.completion.chunk');
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      text += c.delta?.content ?? '';
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  assert.ok(chunks > 2, `only ${chunks} chunks`);
  assert.equal(text, chatText);
  assert.ok(['stop', 'length'].includes(finish));
  assert.ok(usage && usage.completion_tokens > 0, 'no usage chunk');
});

await check('completions.create stream', async () => {
  const stream = await client.completions.create({ model, prompt: 'The dog', max_tokens: 16, temperature: 0, stream: true });
  let text = '';
  for await (const chunk of stream) text += chunk.choices[0]?.text ?? '';
  const whole = await client.completions.create({ model, prompt: 'The dog', max_tokens: 16, temperature: 0 });
  assert.equal(text, whole.choices[0].text);
});

await check('error: max_tokens 0 is a 400', async () => {
  await assert.rejects(
    client.completions.create({ model, prompt: 'x', max_tokens: 0 }),
    (err) => err instanceof OpenAI.BadRequestError && err.status === 400 && err.param === 'max_tokens',
  );
});

await check('error: unknown model is a 404', async () => {
  await assert.rejects(
    client.chat.completions.create({ model: 'no-such-model', messages: [{ role: 'user', content: 'x' }] }),
    (err) => err instanceof OpenAI.NotFoundError && err.code === 'model_not_found',
  );
});

await check(key ? 'auth: a wrong key is refused' : 'auth: no key needed', async () => {
  const other = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'wrong-key', maxRetries: 0 });
  const call = other.models.list();
  if (key) {
    await assert.rejects(call, (err) => err instanceof OpenAI.AuthenticationError && err.status === 401);
  } else {
    await call;
  }
  const health = await fetch(`${base}/health`);
  assert.equal(health.status, 200);
});

if (failures > 0) {
  console.log(`${failures} check(s) failed`);
  process.exit(1);
}
console.log('all checks passed');
