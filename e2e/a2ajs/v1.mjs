// The official A2A JavaScript client of protocol 1.0 (@a2a-js/sdk 1.3,
// installed as a2a-js-v1) against `baton serve`: the card's
// supportedInterfaces, SendMessage, SendStreamingMessage, GetTask,
// CancelTask; and transfers from a baton network to remote agents built on
// each SDK's server side (agents.mjs: 0.3 and 1.0), streamed and
// cancelled. Imported by test.mjs.
import { test } from "node:test";
import assert from "node:assert/strict";
import { ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory, DefaultAgentCardResolver } from "a2a-js-v1/client";
import { Role, TaskState } from "a2a-js-v1";
import { receiver, verify } from "./push.mjs";
import { bearerFetch, cardURL } from "./client.mjs";

const URL_ = process.env.BATON_URL;
const KEY = process.env.BATON_KEY;
const OTHER_KEY = process.env.BATON_OTHER_KEY;
const AGENTS = process.env.A2A_AGENTS ? JSON.parse(process.env.A2A_AGENTS) : null;

async function clientV1(network, key) {
  const fetchImpl = bearerFetch(key);
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory({ fetchImpl })],
      cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
    }),
  );
  return factory.createFromUrl(cardURL(network), "");
}

const textPart = (t) => ({ content: { $case: "text", value: t }, metadata: undefined, filename: "", mediaType: "" });
const dataPart = (d) => ({ content: { $case: "data", value: d }, metadata: undefined, filename: "", mediaType: "" });

function message(parts, extra = {}) {
  return { messageId: crypto.randomUUID(), contextId: "", taskId: "", role: Role.ROLE_USER, parts, metadata: undefined, extensions: [], referenceTaskIds: [], ...extra };
}

const send = (text, extra) => ({ tenant: "", message: message([textPart(text)], extra), configuration: undefined, metadata: undefined });

const partsText = (parts) => parts.filter((p) => p.content?.$case === "text").map((p) => p.content.value).join("");

function answerOf(task) {
  const a = (task.artifacts || []).find((a) => a.artifactId === "answer");
  return a ? partsText(a.parts) : "";
}

async function collect(stream, onEvent) {
  const events = [];
  let answer = "";
  let state;
  let task;
  for await (const ev of stream) {
    events.push(ev);
    const p = ev.payload;
    if (p.$case === "task") {
      task = p.value;
      answer = answerOf(p.value);
      state = p.value.status?.state;
    } else if (p.$case === "artifactUpdate") {
      const text = partsText(p.value.artifact.parts);
      answer = p.value.append ? answer + text : text;
    } else if (p.$case === "statusUpdate") {
      state = p.value.status?.state;
    }
    if (onEvent) await onEvent(p, task);
  }
  return { events, answer, state, task };
}

test("1.0: the card declares supportedInterfaces; SendMessage answers a completed task", async () => {
  const card = await (await fetch(`${URL_}/a2a/support/.well-known/agent-card.json`)).json();
  assert.equal(card.supportedInterfaces[0].protocolVersion, "1.0");
  assert.equal(card.supportedInterfaces[0].protocolBinding, "JSONRPC");
  const client = await clientV1("support", KEY);
  const task = await client.sendMessage(send("I was charged twice for order 1234"));
  assert.equal(task.status.state, TaskState.TASK_STATE_COMPLETED);
  assert.match(answerOf(task), /duplicate/);
  const got = await client.getTask({ tenant: "", id: task.id, historyLength: undefined });
  assert.equal(got.status.state, TaskState.TASK_STATE_COMPLETED);
  assert.equal(got.contextId, task.contextId);
});

test("1.0: SendStreamingMessage streams the task, its answer and its end; a decision answers an input-required task", async () => {
  const client = await clientV1("support", KEY);
  const s = await collect(client.sendMessageStream(send("I was charged twice for order 1234")));
  assert.equal(s.events[0].payload.$case, "task");
  assert.ok(s.events.some((e) => e.payload.$case === "artifactUpdate"));
  assert.equal(s.state, TaskState.TASK_STATE_COMPLETED);
  assert.match(s.answer, /duplicate/);
  const waiting = await collect(client.sendMessageStream(send("I want a refund for order 1234")));
  assert.equal(waiting.state, TaskState.TASK_STATE_INPUT_REQUIRED);
  const done = await collect(client.sendMessageStream({ tenant: "", configuration: undefined, metadata: undefined,
    message: message([dataPart({ type: "approve" })], { taskId: waiting.task.id, contextId: waiting.task.contextId }) }));
  assert.equal(done.state, TaskState.TASK_STATE_COMPLETED);
  assert.match(done.answer, /Your refund R-77/);
});

test("1.0: CancelTask cancels a task; another owner's task is not found", async () => {
  const client = await clientV1("support", KEY);
  const waiting = await collect(client.sendMessageStream(send("I want a refund for order 1234")));
  const cancelled = await client.cancelTask({ tenant: "", id: waiting.task.id, metadata: undefined });
  assert.equal(cancelled.status.state, TaskState.TASK_STATE_CANCELED);
  const other = await clientV1("support", OTHER_KEY);
  await assert.rejects(other.getTask({ tenant: "", id: waiting.task.id }), /not found/i);
});

// Transfers to the JavaScript agents: desk03 (an @a2a-js/sdk 0.3 server)
// and desk1 (a 1.3 server, protocol 1.0), driven through baton's own A2A
// endpoint with the 1.0 client.
for (const [network, sdk] of [["desk03", "v03"], ["desk1", "v1"]]) {
  test(`transfer to a remote agent on the ${sdk} SDK server: its answer streams through`, { skip: !AGENTS }, async () => {
    const client = await clientV1(network, KEY);
    const s = await collect(client.sendMessageStream(send("Please transfer me to the expert")));
    assert.equal(s.state, TaskState.TASK_STATE_COMPLETED, JSON.stringify(s.events.at(-1)));
    assert.match(s.answer, /the JavaScript expert has spoken/);
    const chunks = s.events.filter((e) => e.payload.$case === "artifactUpdate").length;
    assert.ok(chunks > 5, `the remote's answer came in ${chunks} artifact updates`);
  });

  test(`cancel during a transfer to the ${sdk} SDK server cancels the remote task`, { skip: !AGENTS }, async () => {
    const client = await clientV1(network, KEY);
    const before = await (await fetch(`${AGENTS[sdk]}/cancelled`)).json();
    let cancelled;
    const s = await collect(client.sendMessageStream(send("Please transfer me to the expert")), async (p, task) => {
      if (!cancelled && p.$case === "artifactUpdate" && /two/.test(partsText(p.value.artifact.parts))) {
        cancelled = client.cancelTask({ tenant: "", id: task.id, metadata: undefined });
      }
    });
    assert.ok(cancelled, "the remote's answer never streamed");
    assert.equal((await cancelled).status.state, TaskState.TASK_STATE_CANCELED);
    assert.equal(s.state, TaskState.TASK_STATE_CANCELED);
    assert.doesNotMatch(s.answer, /has spoken/);
    // The remote was told: its task is cancelled (a2aremote's CancelTask).
    const deadline = Date.now() + 15000;
    let after = before;
    while (after.length === before.length && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
      after = await (await fetch(`${AGENTS[sdk]}/cancelled`)).json();
    }
    assert.equal(after.length, before.length + 1, `the ${sdk} agent's cancelled tasks: ${JSON.stringify(after)}`);
  });
}

test("1.0: push notifications: a config given with SendMessage and one created on a waiting task reach a receiver on loopback", async () => {
  const rcv = await receiver();
  try {
    const card = await (await fetch(`${URL_}/a2a/support/.well-known/agent-card.json`)).json();
    assert.equal(card.capabilities.pushNotifications, true);
    const client = await clientV1("support", KEY);
    const config = (id, path, token, authentication) => ({ tenant: "", id, taskId: "", url: `${rcv.url}${path}`, token, authentication });
    const task = await client.sendMessage({ ...send("I was charged twice for order 1234"), configuration: {
      acceptedOutputModes: [], historyLength: undefined, returnImmediately: false, metadata: undefined,
      taskPushNotificationConfig: config("on-send", "/send1", "tok-send", { scheme: "Bearer", credentials: "cred1" }) } });
    let n = await rcv.settled("/send1");
    // The task's start was notified too: working (it may arrive after).
    const w = n.working[0] ?? await rcv.next("/send1");
    assert.equal(JSON.parse(w.body).task.status.state, "TASK_STATE_WORKING");
    assert.equal(w.headers["x-a2a-notification-token"], "tok-send");
    assert.ok(await verify(w));
    assert.equal(n.headers["content-type"], "application/a2a+json");
    assert.equal(n.headers["x-a2a-notification-token"], "tok-send");
    assert.equal(n.headers.authorization, "Bearer cred1");
    assert.ok(await verify(n), "the Standard Webhooks signature verifies");
    let body = JSON.parse(n.body);
    assert.equal(body.task.id, task.id);
    assert.equal(body.task.status.state, "TASK_STATE_COMPLETED");

    const waiting = await collect(client.sendMessageStream(send("I want a refund for order 1234")));
    assert.equal(waiting.state, TaskState.TASK_STATE_INPUT_REQUIRED);
    const id = waiting.task.id;
    const created = await client.createTaskPushNotificationConfig({ ...config("later", "/set1", "tok-set", undefined), taskId: id });
    assert.equal(created.id, "later");
    assert.equal(created.taskId, id);
    const got = await client.getTaskPushNotificationConfig({ tenant: "", taskId: id, id: "later" });
    assert.equal(got.url, `${rcv.url}/set1`);
    const list = await client.listTaskPushNotificationConfig({ tenant: "", taskId: id, pageSize: 0, pageToken: "" });
    assert.equal(list.configs.length, 1);
    await collect(client.sendMessageStream({ tenant: "", configuration: undefined, metadata: undefined,
      message: message([dataPart({ type: "approve" })], { taskId: id, contextId: waiting.task.contextId }) }));
    n = await rcv.settled("/set1");
    assert.equal(n.headers["x-a2a-notification-token"], "tok-set");
    assert.ok(await verify(n));
    body = JSON.parse(n.body);
    assert.equal(body.task.id, id);
    assert.equal(body.task.status.state, "TASK_STATE_COMPLETED");
    await client.deleteTaskPushNotificationConfig({ tenant: "", taskId: id, id: "later" });
    assert.equal((await client.listTaskPushNotificationConfig({ tenant: "", taskId: id, pageSize: 0, pageToken: "" })).configs.length, 0);
  } finally {
    await rcv.close();
  }
});
