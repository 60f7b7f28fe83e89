// The AG-UI route of `baton serve` (POST /v1/agui/{network}, docs/agui.md)
// driven by the official AG-UI client, @ag-ui/client and @ag-ui/core 1.0
// (e2e's TestAGUIClient starts the server and runs this file with node
// --test). HttpAgent.runAgent validates every event it gets (the schemas
// of @ag-ui/core, and the order rules of the client's verifier: content
// only inside its message, tool call arguments inside START/END, steps
// closed before RUN_FINISHED, nothing after it): a run with text, a
// transfer and tool calls; a run that stops for an approval and the run
// that answers it (AG-UI interrupts and resume); a run handed to a
// background worker streamed to its end; a stream cut in the middle and
// resumed with Last-Event-ID; the errors.
import { test, before } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { HttpAgent, verifyEvents } from "@ag-ui/client";
import { EventType } from "@ag-ui/core";
import { EventSchemas } from "@ag-ui/core/schemas";
import { from, lastValueFrom, toArray } from "rxjs";

const URL = process.env.BATON_URL;
const KEY = process.env.BATON_KEY;
const OTHER_KEY = process.env.BATON_OTHER_KEY;

before(() => {
  assert.ok(URL && KEY && OTHER_KEY, "BATON_URL, BATON_KEY and BATON_OTHER_KEY must be set (go test -run TestAGUIClient ./e2e)");
});

function agentFor(network, threadId = randomUUID()) {
  return new HttpAgent({ url: `${URL}/v1/agui/${network}`, headers: { Authorization: `Bearer ${KEY}` }, threadId });
}

// run sends the user's text (if any) and runs the agent with params,
// returning every event the client applied and the run's outcome.
async function run(agent, text, params = {}) {
  if (text) agent.addMessage({ id: randomUUID(), role: "user", content: text });
  const events = [];
  let finished;
  const result = await agent.runAgent(params, {
    onEvent: ({ event }) => {
      events.push(event);
    },
    onRunFinishedEvent: (p) => {
      finished = p;
    },
  });
  for (const ev of events) {
    const parsed = EventSchemas.safeParse(ev);
    assert.ok(parsed.success, `event ${JSON.stringify(ev)}: ${parsed.error}`);
  }
  return { events, finished, result, types: events.map((e) => (e.type === EventType.CUSTOM ? `CUSTOM ${e.name}` : e.type)) };
}

function assistantText(agent) {
  return agent.messages
    .filter((m) => m.role === "assistant" && m.content)
    .map((m) => m.content)
    .join("\n\n");
}

test("a run streams text, a transfer and a tool call", async () => {
  const agent = agentFor("support");
  const { types, finished, events } = await run(agent, "I was charged twice for order 1234");
  assert.equal(types[0], EventType.RUN_STARTED);
  assert.equal(events[0].threadId, agent.threadId);
  assert.equal(types.at(-1), EventType.RUN_FINISHED);
  assert.equal(finished.outcome, "success");
  for (const t of ["TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT", "STATE_SNAPSHOT", "STATE_DELTA", "STEP_STARTED", "STEP_FINISHED", "CUSTOM baton.transfer"]) {
    assert.ok(types.includes(t), `no ${t} in ${types}`);
  }
  const steps = events.filter((e) => e.type === EventType.STEP_STARTED).map((e) => e.stepName);
  assert.deepEqual(steps, ["triage", "billing"]);
  assert.match(assistantText(agent), /Let me get billing[\s\S]*two charges of 49.90 EUR/);
  const calls = agent.messages.flatMap((m) => m.toolCalls || []).map((c) => c.function.name);
  assert.deepEqual(calls, ["transfer_to_billing", "lookup_order"]);
  assert.ok(agent.messages.some((m) => m.role === "tool" && m.content.includes('"charges":2')));
  assert.equal(agent.state.baton.agent, "billing");
  assert.equal(agent.state.baton.status, "completed");

  // The thread goes on: the next message is the next turn of the same
  // baton thread, the history in baton.
  const next = await run(agent, "How long until it is reversed?");
  assert.equal(next.finished.outcome, "success");
  assert.match(assistantText(agent), /3-5 business days/);
});

test("an approval interrupts the run; the next run answers it", async () => {
  const agent = agentFor("support");
  const first = await run(agent, "I want a refund for order 1234");
  assert.equal(first.finished.outcome, "interrupt");
  assert.equal(first.finished.interrupts.length, 1);
  const [interrupt] = first.finished.interrupts;
  assert.equal(interrupt.reason, "tool_approval");
  assert.equal(interrupt.metadata.baton.tool, "issue_refund");
  assert.deepEqual(agent.pendingInterrupts.map((i) => i.id), [interrupt.id]);
  assert.equal(agent.state.baton.status, "interrupted");
  // The client refuses a run that does not answer the pending interrupt.
  await assert.rejects(run(agent, "", {}), /pending interrupt/);
  const second = await run(agent, "", { resume: [{ interruptId: interrupt.id, status: "resolved", payload: { type: "approve" } }] });
  assert.equal(second.finished.outcome, "success");
  assert.equal(second.types[0], EventType.RUN_STARTED);
  assert.ok(second.events.some((e) => e.type === EventType.TOOL_CALL_RESULT && e.content.includes("R-77")));
  assert.match(assistantText(agent), /refund R-77 of 49.90 EUR/);
  assert.deepEqual(agent.pendingInterrupts, []);
});

test("a rejected approval: the run goes on without the call", async () => {
  const agent = agentFor("support");
  const first = await run(agent, "I want a refund for order 1234");
  const [interrupt] = first.finished.interrupts;
  const second = await run(agent, "", { resume: [{ interruptId: interrupt.id, status: "cancelled" }] });
  assert.equal(second.finished.outcome, "success");
  const result = second.events.find((e) => e.type === EventType.TOOL_CALL_RESULT);
  assert.ok(result, `no tool result in ${second.types}`);
});

test("a run handed to a background worker streams to its end", async () => {
  const agent = agentFor("research");
  const { types, finished } = await run(agent, "How did EV sales develop in 2025?");
  assert.equal(finished.outcome, "success");
  const i = types.indexOf("CUSTOM baton.suspended");
  const j = types.indexOf("CUSTOM baton.resumed");
  assert.ok(i > 0 && j > i, `no hand-over in ${types}`);
  assert.match(assistantText(agent), /RPT-42/);
  assert.equal(agent.state.baton.status, "completed");
});

// sse reads an event stream: [{id, data}] until it ends, or until stop
// says so (then the connection is dropped).
async function sse(res, stop = () => false) {
  const out = [];
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buf = "";
  let lastId = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += decoder.decode(value, { stream: true });
    let k;
    while ((k = buf.indexOf("\n\n")) >= 0) {
      const block = buf.slice(0, k);
      buf = buf.slice(k + 2);
      const data = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("id: ")) lastId = line.slice(4);
        if (line.startsWith("data: ")) data.push(line.slice(6));
      }
      if (data.length === 0) continue;
      const ev = { id: lastId, data: JSON.parse(data.join("\n")) };
      out.push(ev);
      if (stop(ev)) {
        await reader.cancel();
        return out;
      }
    }
  }
  return out;
}

function post(network, body, headers = {}, key = KEY) {
  return fetch(`${URL}/v1/agui/${network}`, {
    method: "POST",
    headers: { "Content-Type": "application/json", Accept: "text/event-stream", Authorization: `Bearer ${key}`, ...headers },
    body: JSON.stringify(body),
  });
}

test("a stream cut in the middle resumes with Last-Event-ID: the client accepts the whole", async () => {
  const input = {
    threadId: randomUUID(),
    runId: randomUUID(),
    state: {},
    messages: [{ id: randomUUID(), role: "user", content: "How did EV sales develop in 2025?" }],
    tools: [],
    context: [],
    forwardedProps: {},
  };
  let res = await post("research", input);
  assert.equal(res.status, 200);
  const head = await sse(res, (ev) => ev.data.type === EventType.TEXT_MESSAGE_CONTENT);
  res = await post("research", input, { "Last-Event-ID": head.at(-1).id });
  assert.equal(res.status, 200);
  const tail = await sse(res);
  const events = [...head, ...tail].map((e) => e.data);
  for (const ev of events) {
    assert.ok(EventSchemas.safeParse(ev).success, JSON.stringify(ev));
  }
  // The client's own verifier accepts the two reads as one stream.
  const verified = await lastValueFrom(from(events).pipe(verifyEvents(false), toArray()));
  assert.equal(verified.length, events.length);
  assert.equal(events.at(-1).type, EventType.RUN_FINISHED);
  // The same request again, without an id, is the whole stream (no second
  // run): the text is the same.
  res = await post("research", input);
  const again = (await sse(res)).map((e) => e.data);
  const text = (evs) => evs.filter((e) => e.type === EventType.TEXT_MESSAGE_CONTENT).map((e) => e.delta).join("");
  assert.equal(text(again), text(events));
  assert.ok(text(events).length > 0);
});

test("errors are JSON with the field named", async () => {
  const good = { threadId: randomUUID(), runId: randomUUID(), messages: [{ id: "1", role: "user", content: "hi" }] };
  for (const [body, param] of [
    [{ ...good, threadId: "" }, "threadId"],
    [{ ...good, runId: "a b" }, "runId"],
    [{ ...good, messages: [{ id: "1", role: "assistant", content: "hi" }] }, "messages"],
    [{ ...good, resume: [{ interruptId: "nope", status: "resolved" }] }, "resume"],
  ]) {
    const res = await post("support", body);
    assert.equal(res.status, 400, JSON.stringify(body));
    const err = await res.json();
    assert.equal(err.error.param, param);
  }
  let res = await post("nowhere", good);
  assert.equal(res.status, 404);
  res = await post("support", good, {}, "bad-key");
  assert.equal(res.status, 401);
  // A thread of another owner is not there for this one.
  const mine = { ...good, threadId: randomUUID() };
  res = await post("support", mine);
  await sse(res);
  res = await post("support", { ...mine, runId: randomUUID() }, {}, OTHER_KEY);
  assert.equal(res.status, 409);
});
