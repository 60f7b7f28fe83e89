// The A2A side of `baton serve` (docs/a2a.md) driven by the official A2A
// JavaScript client, @a2a-js/sdk 0.3 (e2e's TestA2AJavaScriptClient starts
// the server and runs this file with node --test): the agent card,
// message/send and message/stream on a new and on an existing
// context, a task that waits for a decision and the message that answers
// it, a run handed to a background worker streamed to its end,
// tasks/get, tasks/resubscribe, and the errors a client gets.
import { test, before } from "node:test";
import assert from "node:assert/strict";
import {
  ClientFactory,
  ClientFactoryOptions,
  JsonRpcTransportFactory,
  TaskNotFoundError,
  TaskNotCancelableError,
  ContentTypeNotSupportedError,
} from "@a2a-js/sdk/client";
import { receiver, verify } from "./push.mjs";
import { bearerFetch, cardURL } from "./client.mjs";

const URL = process.env.BATON_URL;
const KEY = process.env.BATON_KEY;
const OTHER_KEY = process.env.BATON_OTHER_KEY;

// clientFor returns a client of a network's agent card, sending key (none
// if not given) as a Bearer token.
async function clientFor(network, key) {
  const fetchImpl = bearerFetch(key);
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory({ fetchImpl })],
    }),
  );
  return factory.createFromUrl(cardURL(network), "");
}

function userMessage(text, extra = {}) {
  return { kind: "message", messageId: crypto.randomUUID(), role: "user", parts: [{ kind: "text", text }], ...extra };
}

function artifactText(task) {
  const a = (task.artifacts || []).find((a) => a.artifactId === "answer");
  return a ? a.parts.filter((p) => p.kind === "text").map((p) => p.text).join("") : "";
}

// collect reads a stream to its end: the events, the answer as its
// artifact updates build it, and the last status.
async function collect(stream) {
  const events = [];
  let answer = "";
  let status;
  for await (const ev of stream) {
    events.push(ev);
    if (ev.kind === "task") {
      answer = artifactText(ev);
      status = ev.status;
    } else if (ev.kind === "artifact-update") {
      const text = ev.artifact.parts.map((p) => p.text).join("");
      answer = ev.append ? answer + text : text;
    } else if (ev.kind === "status-update") {
      status = ev.status;
    }
  }
  return { events, answer, status };
}

let support;
let research;

before(async () => {
  assert.ok(URL && KEY && OTHER_KEY, "BATON_URL, BATON_KEY and BATON_OTHER_KEY must be set (go test -run TestA2AJavaScriptClient ./e2e)");
  support = await clientFor("support", KEY);
  research = await clientFor("research", KEY);
});

test("the agent card describes the network", async () => {
  const card = await support.getAgentCard();
  assert.equal(card.name, "support");
  assert.equal(card.protocolVersion, "0.3.0");
  assert.equal(card.preferredTransport, "JSONRPC");
  assert.equal(card.url, `${URL}/a2a/support`);
  assert.equal(card.capabilities.streaming, true);
  assert.deepEqual(card.skills.map((s) => s.id).sort(), ["billing", "refunds", "tech", "triage"]);
  assert.ok(card.securitySchemes.baton, "the card names the API key scheme");
  // The card is public: no key needed.
  const res = await fetch(`${URL}/a2a/research/.well-known/agent-card.json`);
  assert.equal(res.status, 200);
  assert.equal((await res.json()).name, "research");
  // Two networks: no card at the root.
  assert.equal((await fetch(`${URL}/.well-known/agent-card.json`)).status, 404);
});

let context; // the support thread the next tests go on with

test("message/send runs a turn on a new context and returns the completed task", async () => {
  const task = await support.sendMessage({ message: userMessage("I was charged twice for order 1234") });
  assert.equal(task.kind, "task");
  assert.equal(task.status.state, "completed");
  assert.match(task.id, /^run_/);
  assert.ok(task.contextId, "a context id");
  assert.match(artifactText(task), /Let me get billing to look at that charge\.\n\nI can see two charges of 49\.90 EUR/);
  assert.match(task.status.message.parts[0].text, /I can see two charges/);
  assert.equal(task.metadata.baton.last_agent, "billing");
  assert.equal(task.metadata.baton.thread_id, task.contextId);
  assert.deepEqual(task.history.map((m) => m.role), ["user", "agent", "agent"]);
  assert.deepEqual(task.history.slice(1).map((m) => m.metadata.baton.agent), ["triage", "billing"]);
  context = task.contextId;
  // The context is a baton thread of the key's owner.
  const th = await fetch(`${URL}/v1/threads/${context}`, { headers: { Authorization: `Bearer ${KEY}` } });
  assert.equal(th.status, 200);
  assert.equal((await th.json()).network, "support");
});

test("message/stream goes on in the context: the task, working updates, the answer streamed, a final status", async () => {
  const { events, answer, status } = await collect(
    support.sendMessageStream({ message: userMessage("How long will the reversal take?", { contextId: context }) }),
  );
  assert.equal(events[0].kind, "task");
  assert.equal(events[0].contextId, context);
  assert.equal(events[0].status.state, "submitted");
  const kinds = new Set(events.map((e) => e.kind));
  assert.ok(kinds.has("status-update") && kinds.has("artifact-update"), [...kinds].join(","));
  const deltas = events.filter((e) => e.kind === "artifact-update");
  assert.ok(deltas.length > 3, `the answer came in ${deltas.length} updates: it did not stream`);
  assert.equal(deltas[0].append ?? false, false);
  assert.ok(deltas.slice(1).every((e) => e.append), "later updates append");
  const last = events.at(-1);
  assert.equal(last.kind, "status-update");
  assert.equal(last.final, true);
  assert.equal(status.state, "completed");
  assert.match(answer, /reversed within 3-5 business days/);
  // tasks/get gives the same answer.
  const task = await support.getTask({ id: last.taskId });
  assert.equal(task.status.state, "completed");
  assert.equal(artifactText(task), answer);
  const short = await support.getTask({ id: last.taskId, historyLength: 1 });
  assert.equal(short.history.length, 1);
});

test("a task that waits for a decision is input-required; a message on the task approves it", async () => {
  const { events, status } = await collect(
    support.sendMessageStream({ message: userMessage("I want a refund for order 1234") }),
  );
  assert.equal(status.state, "input-required");
  assert.equal(events.at(-1).final, true);
  assert.match(status.message.parts[0].text, /issue_refund/);
  const interrupt = status.message.metadata.baton.interrupt;
  assert.equal(interrupt.action_requests[0].name, "issue_refund");
  const taskId = events[0].id;
  // A text that is no decision is refused, and leaves the task waiting.
  await assert.rejects(support.sendMessage({ message: userMessage("maybe later", { taskId }) }), /waits for a decision/);
  assert.equal((await support.getTask({ id: taskId })).status.state, "input-required");
  // Approved by a data part, streamed: the task goes on from where it
  // waited, to its end.
  const answered = await collect(
    support.sendMessageStream({
      message: { kind: "message", messageId: crypto.randomUUID(), role: "user", taskId, parts: [{ kind: "data", data: { type: "approve" } }] },
    }),
  );
  assert.equal(answered.events[0].id, taskId);
  assert.equal(answered.status.state, "completed");
  assert.equal(answered.events.at(-1).final, true);
  assert.match(answered.answer, /Your refund R-77 of 49\.90 EUR for order 1234 has been issued/);
  const done = await support.getTask({ id: taskId });
  assert.equal(done.status.state, "completed");
  assert.match(artifactText(done), /Your refund R-77/);
  // Answered, the task takes no second decision.
  await assert.rejects(support.sendMessage({ message: userMessage("approve", { taskId }) }), /not waiting for input/);
});

test("tasks/cancel cancels a task that waits for a decision; again, it answers the same", async () => {
  const { events, status } = await collect(
    support.sendMessageStream({ message: userMessage("I want a refund for order 1234") }),
  );
  assert.equal(status.state, "input-required");
  const taskId = events[0].id;
  for (let i = 0; i < 2; i++) {
    const cancelled = await support.cancelTask({ id: taskId });
    assert.equal(cancelled.id, taskId);
    assert.equal(cancelled.status.state, "canceled");
  }
  assert.equal((await support.getTask({ id: taskId })).status.state, "canceled");
  // Cancelled, the task takes no decision.
  await assert.rejects(support.sendMessage({ message: userMessage("approve", { taskId }) }), /not waiting for input/);
});

test("a run handed to a background worker streams to its end", async () => {
  const { events, answer, status } = await collect(
    research.sendMessageStream({ message: userMessage("How did EV sales develop in 2025?") }),
  );
  const suspended = events.filter((e) => e.kind === "status-update" && e.metadata?.baton?.event?.type === "suspended");
  assert.ok(suspended.length > 0, "the run was handed to a worker (a suspended update)");
  assert.equal(status.state, "completed", JSON.stringify(status));
  assert.match(answer, /Report \*\*RPT-42\*\* is ready/);
  // tasks/resubscribe on a final task: the task, and the stream ends.
  const again = await collect(research.resubscribeTask({ id: events[0].id }));
  assert.equal(again.events[0].kind, "task");
  assert.equal(again.status.state, "completed");
  assert.match(again.answer, /Report \*\*RPT-42\*\* is ready/);
});

test("a context brought with its history", async () => {
  const task = await support.sendMessage({
    message: {
      kind: "message",
      messageId: crypto.randomUUID(),
      role: "user",
      parts: [
        { kind: "data", data: { history: [{ role: "user", text: "Hello" }, { role: "assistant", text: "How can I help?" }] } },
        { kind: "text", text: "The app crashes when I log in" },
      ],
    },
  });
  assert.equal(task.status.state, "completed");
  assert.match(artifactText(task), /Log-in is degraded right now/);
  const msgs = await fetch(`${URL}/v1/threads/${task.contextId}/messages`, { headers: { Authorization: `Bearer ${KEY}` } });
  const body = await msgs.json();
  const texts = (body.messages || body.data || body).map((m) => m.text ?? (m.parts || []).map((p) => p.text).join(""));
  assert.equal(texts[0], "Hello");
  assert.equal(texts[1], "How can I help?");
});

test("errors: no key, another owner's task, unknown task, cancel, a file part", async () => {
  const anonymous = await clientFor("support");
  await assert.rejects(anonymous.sendMessage({ message: userMessage("Hi") }), /401/);
  const other = await clientFor("support", OTHER_KEY);
  const mine = await support.sendMessage({ message: userMessage("Hi there") });
  assert.equal(mine.status.state, "completed");
  await assert.rejects(other.getTask({ id: mine.id }), TaskNotFoundError);
  await assert.rejects(other.sendMessage({ message: userMessage("Hi", { contextId: mine.contextId }) }), /is taken/);
  await assert.rejects(support.getTask({ id: "run_doesnotexist" }), TaskNotFoundError);
  await assert.rejects(support.cancelTask({ id: mine.id }), TaskNotCancelableError);
  await assert.rejects(
    support.sendMessage({
      message: { kind: "message", messageId: crypto.randomUUID(), role: "user", parts: [{ kind: "file", file: { uri: "https://example.com/a.pdf" } }] },
    }),
    ContentTypeNotSupportedError,
  );
  // A network that is not served.
  const res = await fetch(`${URL}/a2a/nowhere`, {
    method: "POST",
    headers: { Authorization: `Bearer ${KEY}`, "Content-Type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "message/send", params: { message: userMessage("Hi") } }),
  });
  assert.equal(res.status, 404);
});
test("push notifications: a config given with message/send and one set on a waiting task reach a receiver on loopback", async () => {
  const rcv = await receiver();
  try {
    const support = await clientFor("support", KEY);
    const card = await support.getAgentCard();
    assert.equal(card.capabilities.pushNotifications, true);
    const task = await support.sendMessage({
      message: userMessage("I was charged twice for order 1234"),
      configuration: { blocking: true, pushNotificationConfig: { id: "on-send", url: `${rcv.url}/send03`, token: "tok-send", authentication: { schemes: ["Bearer"], credentials: "cred03" } } },
    });
    let n = await rcv.settled("/send03");
    // The task's start was notified too: working (it may arrive after).
    const w = n.working[0] ?? await rcv.next("/send03");
    assert.equal(JSON.parse(w.body).status.state, "working");
    assert.equal(w.headers["x-a2a-notification-token"], "tok-send");
    assert.ok(await verify(w));
    assert.equal(n.headers["x-a2a-notification-token"], "tok-send");
    assert.equal(n.headers.authorization, "Bearer cred03");
    assert.ok(await verify(n), "the Standard Webhooks signature verifies");
    let body = JSON.parse(n.body);
    assert.equal(body.kind, "task");
    assert.equal(body.id, task.id);
    assert.equal(body.status.state, "completed");

    const waiting = await support.sendMessage({ message: userMessage("I want a refund for order 1234") });
    assert.equal(waiting.status.state, "input-required");
    const set = await support.setTaskPushNotificationConfig({ taskId: waiting.id, pushNotificationConfig: { id: "later", url: `${rcv.url}/set03`, token: "tok-set" } });
    assert.equal(set.pushNotificationConfig.id, "later");
    const got = await support.getTaskPushNotificationConfig({ id: waiting.id, pushNotificationConfigId: "later" });
    assert.equal(got.pushNotificationConfig.url, `${rcv.url}/set03`);
    assert.equal((await support.listTaskPushNotificationConfig({ id: waiting.id })).length, 1);
    await support.sendMessage({
      message: { kind: "message", messageId: crypto.randomUUID(), role: "user", taskId: waiting.id, parts: [{ kind: "data", data: { type: "approve" } }] },
    });
    n = await rcv.settled("/set03");
    assert.equal(n.headers["x-a2a-notification-token"], "tok-set");
    assert.ok(await verify(n));
    body = JSON.parse(n.body);
    assert.equal(body.id, waiting.id);
    assert.equal(body.status.state, "completed");
    assert.match(artifactText(body), /Your refund R-77/);
    await support.deleteTaskPushNotificationConfig({ id: waiting.id, pushNotificationConfigId: "later" });
    assert.deepEqual(await support.listTaskPushNotificationConfig({ id: waiting.id }), []);
    await assert.rejects(support.setTaskPushNotificationConfig({ taskId: waiting.id, pushNotificationConfig: { url: "http://169.254.169.254/" } }), /refused|not allowed|internal/i);
  } finally {
    await rcv.close();
  }
});

import "./v1.mjs";
