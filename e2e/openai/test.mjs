// The official OpenAI Node client and the Vercel AI SDK against a real
// `baton serve` (run.sh starts it), where a model is a network: answers,
// streams (through a background continuation), the Responses API, models,
// errors with OpenAI's names and the request id, fields honoured (a cut
// answer) or refused, and a run waiting for approval, which clients detect.
import { test } from "node:test";
import assert from "node:assert/strict";
import OpenAI from "openai";
import { generateText, streamText } from "ai";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { createOpenAI } from "@ai-sdk/openai";

const URL = process.env.BATON_URL;
const KEY = process.env.BATON_KEY;
assert.ok(URL && KEY, "BATON_URL and BATON_KEY must be set (run ./run.sh)");
const baseURL = `${URL}/v1`;
const client = new OpenAI({ baseURL, apiKey: KEY, maxRetries: 0 });

const charged = "I was charged twice for order 1234";
const ev = "How did EV sales develop in 2025?";

test("openai: chat completion", async () => {
  const { data: c, response } = await client.chat.completions
    .create({ model: "support", messages: [{ role: "system", content: "Be brief." }, { role: "user", content: charged }] })
    .withResponse();
  assert.equal(c.object, "chat.completion");
  assert.equal(c.choices[0].finish_reason, "stop");
  assert.match(c.choices[0].message.content, /^Let me get billing/);
  assert.match(c.choices[0].message.content, /duplicate/);
  assert.ok(c.usage.total_tokens > 0);
  assert.match(response.headers.get("x-request-id"), /^req_/);
  assert.ok(response.headers.get("baton-thread-id"));
  assert.equal(c.baton.status, "completed");
});

test("openai: chat stream through a background continuation", async () => {
  const stream = await client.chat.completions.create({
    model: "research", stream: true, stream_options: { include_usage: true },
    messages: [{ role: "user", content: ev }],
  });
  let text = "", finish = null, usage = null;
  for await (const chunk of stream) {
    if (chunk.choices[0]?.delta?.content) text += chunk.choices[0].delta.content;
    if (chunk.choices[0]?.finish_reason) finish = chunk.choices[0].finish_reason;
    if (chunk.usage) usage = chunk.usage;
  }
  assert.equal(finish, "stop");
  assert.match(text, /I'll ask our analyst/);
  assert.match(text, /RPT-42/);
  assert.ok(usage.total_tokens > 0);
});

test("openai: responses, streamed and not", async () => {
  const r = await client.responses.create({ model: "support", instructions: "Be brief.", input: charged });
  assert.equal(r.status, "completed");
  assert.match(r.output_text, /duplicate/);
  assert.ok(r.usage.total_tokens > 0);
  const stream = await client.responses.create({ model: "research", input: ev, stream: true });
  let text = "", final = null;
  const types = [];
  for await (const e of stream) {
    types.push(e.type);
    if (e.type === "response.output_text.delta") text += e.delta;
    if (e.type === "response.completed") final = e.response;
  }
  assert.equal(types[0], "response.created");
  assert.equal(final.status, "completed");
  assert.match(text, /RPT-42/);
  assert.equal(final.output[0].content[0].text, text);
});

test("openai: best-effort parameters (seed, penalties, logit_bias, store, user, metadata) are accepted", async () => {
  const c = await client.chat.completions.create({
    model: "support", messages: [{ role: "user", content: charged }],
    seed: 7, presence_penalty: 0.5, frequency_penalty: 0.2, logit_bias: { "50256": -100 },
    parallel_tool_calls: false, store: false, user: "user-1", metadata: { app: "e2e" }, prompt_cache_key: "support",
  });
  assert.equal(c.baton.status, "completed");
  assert.match(c.choices[0].message.content, /duplicate/);
  const r = await client.responses.create({
    model: "support", input: charged, store: true, parallel_tool_calls: true, safety_identifier: "user-1",
    metadata: { app: "e2e" }, prompt_cache_key: "support",
  });
  assert.equal(r.status, "completed");
  assert.deepEqual(r.metadata, { app: "e2e" });
});

test("openai: models", async () => {
  const ids = [];
  for await (const m of client.models.list()) ids.push(m.id);
  assert.deepEqual(ids.sort(), ["research", "support"]);
  const m = await client.models.retrieve("support");
  assert.equal(m.id, "support");
  assert.equal(m.owned_by, "baton");
});

test("openai: errors carry OpenAI's names and the request id", async () => {
  await assert.rejects(
    client.chat.completions.create({ model: "nope", messages: [{ role: "user", content: "hi" }] }),
    (e) => {
      assert.ok(e instanceof OpenAI.NotFoundError, String(e));
      assert.equal(e.code, "model_not_found");
      assert.equal(e.type, "invalid_request_error");
      assert.match(e.requestID, /^req_/);
      return true;
    },
  );
  await assert.rejects(
    client.chat.completions.create({ model: "support", n: 2, messages: [{ role: "user", content: "hi" }] }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === "n" && e.code === "unsupported_parameter",
  );
  await assert.rejects(
    client.chat.completions.create({
      model: "support", messages: [{ role: "user", content: "hi" }], tool_choice: "required",
      tools: [{ type: "function", function: { name: "get_weather", parameters: { type: "object", properties: {} } } }],
    }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === "tools",
  );
  const bad = new OpenAI({ baseURL, apiKey: "wrong", maxRetries: 0 });
  await assert.rejects(bad.models.list(), (e) => e instanceof OpenAI.AuthenticationError && e.code === "invalid_api_key");
});

test("openai: max_tokens cuts the answer, finish length", async () => {
  const c = await client.chat.completions.create({ model: "support", max_tokens: 3, messages: [{ role: "user", content: "hello" }] });
  assert.equal(c.choices[0].finish_reason, "length");
  const r = await client.responses.create({ model: "support", max_output_tokens: 3, input: "hello" });
  assert.equal(r.status, "incomplete");
  assert.equal(r.incomplete_details.reason, "max_output_tokens");
});

test("openai: a run waiting for approval is detectable", async () => {
  const c = await client.chat.completions.create({ model: "support", messages: [{ role: "user", content: "I want a refund for order 1234" }] });
  assert.equal(c.choices[0].finish_reason, "interrupted");
  assert.equal(c.baton.status, "interrupted");
  assert.deepEqual(c.baton.interrupt.tools, ["issue_refund"]);
  const res = await fetch(URL + c.baton.interrupt.decision_url, {
    method: "POST", headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
    body: JSON.stringify({ type: "approve" }),
  });
  assert.equal(res.status, 200, await res.text());
});

test("@ai-sdk/openai-compatible: generateText and streamText", async () => {
  const baton = createOpenAICompatible({ name: "baton", baseURL, apiKey: KEY, includeUsage: true });
  const g = await generateText({ model: baton("support"), prompt: charged, maxRetries: 0 });
  assert.match(g.text, /duplicate/);
  assert.equal(g.finishReason, "stop");
  const s = streamText({ model: baton("research"), prompt: ev, maxRetries: 0, onError: ({ error }) => { throw error; } });
  let text = "";
  for await (const part of s.textStream) text += part;
  assert.match(text, /RPT-42/);
  assert.equal(await s.finishReason, "stop");
  const cut = await generateText({ model: baton("support"), prompt: "hello", maxOutputTokens: 3, maxRetries: 0 });
  assert.equal(cut.finishReason, "length");
});

test("@ai-sdk/openai (Responses API by default): generateText and streamText", async () => {
  const paths = [];
  const spy = (url, init) => { paths.push(new globalThis.URL(url).pathname); return fetch(url, init); };
  const openai = createOpenAI({ baseURL, apiKey: KEY, fetch: spy });
  const g = await generateText({ model: openai("support"), prompt: charged, maxRetries: 0 });
  assert.match(g.text, /duplicate/);
  assert.equal(g.finishReason, "stop");
  assert.ok(g.usage.totalTokens > 0);
  const s = streamText({ model: openai("research"), prompt: ev, maxRetries: 0, onError: ({ error }) => { throw error; } });
  let text = "";
  for await (const part of s.textStream) text += part;
  assert.match(text, /RPT-42/);
  assert.equal(await s.finishReason, "stop");
  assert.deepEqual(paths, ["/v1/responses", "/v1/responses"]);
  const chat = await generateText({ model: openai.chat("support"), prompt: charged, maxRetries: 0 });
  assert.match(chat.text, /duplicate/);
  assert.equal(paths.at(-1), "/v1/chat/completions");
});
