// Drives a running llmserve whose chat template has tools (Qwen 2.5's,
// Hermes-style calls) with the official openai client: a tool-calling
// round trip, whole and streamed, and a json_schema response.
// Environment: as client.mjs.
import assert from 'node:assert/strict';
import OpenAI from 'openai';

const base = process.env.LLMSERVE_URL;
const model = process.env.LLMSERVE_MODEL;
assert.ok(base && model, 'LLMSERVE_URL and LLMSERVE_MODEL must be set');

const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 120_000 });
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

const tools = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'The weather of a city',
      parameters: {
        type: 'object',
        properties: { city: { type: 'string', maxLength: 12 }, unit: { enum: ['celsius', 'fahrenheit'] } },
        required: ['city', 'unit'],
        additionalProperties: false,
      },
    },
  },
  { type: 'function', function: { name: 'get_time', parameters: { type: 'object', properties: {} } } },
];

function checkWeatherArgs(args) {
  const v = JSON.parse(args);
  assert.equal(typeof v.city, 'string');
  assert.ok([...v.city].length <= 12, `city ${v.city} too long`);
  assert.ok(['celsius', 'fahrenheit'].includes(v.unit), `unit ${v.unit}`);
  assert.deepEqual(Object.keys(v).sort(), ['city', 'unit']);
}

const question = [{ role: 'user', content: 'What is the weather in Paris?' }];
const forced = {
  model,
  messages: question,
  tools,
  tool_choice: { type: 'function', function: { name: 'get_weather' } },
  parallel_tool_calls: false,
  max_tokens: 200,
  temperature: 0,
};

// answerWith continues the conversation with the call and the tool's
// answer, and asks for the final message.
async function answerWith(call, stream) {
  const messages = [
    ...question,
    { role: 'assistant', content: null, tool_calls: [call] },
    { role: 'tool', tool_call_id: call.id, content: JSON.stringify({ temperature: 21, unit: 'celsius' }) },
  ];
  const params = { model, messages, tools, max_tokens: 24, temperature: 0 };
  if (!stream) {
    const r = await client.chat.completions.create(params);
    assert.ok(['stop', 'length', 'tool_calls'].includes(r.choices[0].finish_reason));
    assert.ok(r.choices[0].message.content !== undefined || r.choices[0].message.tool_calls);
    return;
  }
  let finish = null;
  for await (const chunk of await client.chat.completions.create({ ...params, stream: true })) {
    for (const c of chunk.choices) if (c.finish_reason) finish = c.finish_reason;
  }
  assert.ok(['stop', 'length', 'tool_calls'].includes(finish), `finish ${finish}`);
}

await check('tools: named tool_choice gives a valid call, then the answer', async () => {
  const r = await client.chat.completions.create(forced);
  const c = r.choices[0];
  assert.equal(c.finish_reason, 'tool_calls');
  assert.equal(c.message.tool_calls.length, 1);
  const call = c.message.tool_calls[0];
  assert.match(call.id, /^call_/);
  assert.equal(call.type, 'function');
  assert.equal(call.function.name, 'get_weather');
  checkWeatherArgs(call.function.arguments);
  await answerWith(call, false);
});

await check('tools: required, streamed, gives a valid call in delta.tool_calls, then the answer', async () => {
  const stream = await client.chat.completions.create({ ...forced, tool_choice: 'required', stream: true });
  const calls = [];
  let finish = null;
  for await (const chunk of stream) {
    for (const c of chunk.choices) {
      for (const d of c.delta?.tool_calls ?? []) {
        if (!calls[d.index]) {
          assert.ok(d.id && d.function?.name, 'the first piece of a call has its id and name');
          calls[d.index] = { id: d.id, type: 'function', function: { name: d.function.name, arguments: '' } };
        }
        calls[d.index].function.arguments += d.function?.arguments ?? '';
      }
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  assert.equal(finish, 'tool_calls');
  assert.equal(calls.length, 1);
  assert.ok(['get_weather', 'get_time'].includes(calls[0].function.name));
  if (calls[0].function.name === 'get_weather') checkWeatherArgs(calls[0].function.arguments);
  else JSON.parse(calls[0].function.arguments);
  await answerWith(calls[0], true);
});

await check('response_format json_schema: the answer parses and validates', async () => {
  const schema = {
    type: 'object',
    properties: {
      name: { type: 'string', maxLength: 10 },
      age: { type: 'integer' },
      mood: { enum: ['happy', 'sad'] },
    },
    required: ['name', 'age', 'mood'],
    additionalProperties: false,
  };
  const r = await client.chat.completions.create({
    model,
    messages: [{ role: 'user', content: 'Describe a cat as JSON.' }],
    response_format: { type: 'json_schema', json_schema: { name: 'cat', schema, strict: true } },
    max_tokens: 200,
    temperature: 0,
  });
  assert.equal(r.choices[0].finish_reason, 'stop');
  const v = JSON.parse(r.choices[0].message.content);
  assert.equal(typeof v.name, 'string');
  assert.ok([...v.name].length <= 10);
  assert.ok(Number.isInteger(v.age));
  assert.ok(['happy', 'sad'].includes(v.mood));
  assert.deepEqual(Object.keys(v).sort(), ['age', 'mood', 'name']);
});

await check('error: an unsupported schema keyword is a 400 naming it', async () => {
  await assert.rejects(
    client.chat.completions.create({
      model,
      messages: question,
      response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'string', pattern: 'a+' } } },
    }),
    (err) => err instanceof OpenAI.BadRequestError && err.param === 'response_format.json_schema.schema' && /pattern/.test(err.message),
  );
});

if (failures > 0) {
  console.log(`${failures} check(s) failed`);
  process.exit(1);
}
console.log('all checks passed');
