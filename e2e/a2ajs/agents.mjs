// Two remote A2A agents for baton networks to transfer to, each built on
// the server side of an official JavaScript SDK: @a2a-js/sdk 0.3 (protocol
// 0.3, its card with url and preferredTransport) and 1.3 (protocol 1.0,
// its card with supportedInterfaces only, no 0.3 compatibility). Each
// answers a word at a time as artifact updates (streaming) and stops when
// its task is cancelled; GET /cancelled lists the tasks it cancelled.
// Prints one JSON line {"v03": BASE_URL, "v1": BASE_URL} once both listen.
import express from "express";
import { DefaultRequestHandler as Handler03, InMemoryTaskStore as Store03 } from "@a2a-js/sdk/server";
import { A2AExpressApp } from "@a2a-js/sdk/server/express";
import { DefaultRequestHandler as Handler1, InMemoryTaskStore as Store1, AgentEvent } from "a2a-js-v1/server";
import { jsonRpcHandler, agentCardHandler, UserBuilder } from "a2a-js-v1/server/express";
import { TaskState } from "a2a-js-v1";

const WORDS = "one two three four five six seven eight nine ten eleven twelve: the JavaScript expert has spoken.".split(" ");
const DELAY = Number(process.env.AGENT_DELAY_MS ?? 150);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function listen(app) {
  return new Promise((resolve) => {
    const srv = app.listen(0, "127.0.0.1", () => resolve(`http://127.0.0.1:${srv.address().port}`));
  });
}

// expertExecutor is an executor of either SDK: it answers WORDS a word at
// a time, DELAY apart, and stops when its task is cancelled. ev makes the
// SDK's events, each at the moment it is published: task (submitted),
// working, artifact(ctx, i, text) (the i-th word), canceled and
// completed. cancelled lists the tasks it cancelled.
function expertExecutor(ev) {
  const cancelled = [];
  const stop = new Set();
  return {
    cancelled,
    async execute(ctx, bus) {
      bus.publish(ev.task(ctx));
      bus.publish(ev.working(ctx));
      for (const [i, w] of WORDS.entries()) {
        await sleep(DELAY);
        if (stop.has(ctx.taskId)) {
          bus.publish(ev.canceled(ctx));
          bus.finished();
          return;
        }
        bus.publish(ev.artifact(ctx, i, (i > 0 ? " " : "") + w));
      }
      bus.publish(ev.completed(ctx));
      bus.finished();
    },
    async cancelTask(taskId) {
      stop.add(taskId);
      cancelled.push(taskId);
    },
  };
}

// The 0.3 agent.
async function agent03() {
  const app = express();
  const base = await listen(app);
  const card = {
    name: "js03", description: "An expert on @a2a-js/sdk 0.3.", url: `${base}/a2a`, protocolVersion: "0.3.0", version: "1.0.0",
    preferredTransport: "JSONRPC", capabilities: { streaming: true }, defaultInputModes: ["text/plain"], defaultOutputModes: ["text/plain"],
    skills: [{ id: "expert", name: "expert", description: "Answers slowly.", tags: ["e2e"] }],
  };
  const now = () => new Date().toISOString();
  const update = ({ taskId, contextId }, state, final) => ({ kind: "status-update", taskId, contextId, status: { state, timestamp: now() }, final });
  const executor = expertExecutor({
    task: (ctx) => ({ kind: "task", id: ctx.taskId, contextId: ctx.contextId, status: { state: "submitted", timestamp: now() }, history: [ctx.userMessage] }),
    working: (ctx) => update(ctx, "working", false),
    artifact: ({ taskId, contextId }, i, text) => ({ kind: "artifact-update", taskId, contextId, append: i > 0,
      artifact: { artifactId: "answer", name: "answer", parts: [{ kind: "text", text }] } }),
    canceled: (ctx) => update(ctx, "canceled", true),
    completed: (ctx) => update(ctx, "completed", true),
  });
  new A2AExpressApp(new Handler03(card, new Store03(), executor)).setupRoutes(app, "/a2a");
  app.get("/cancelled", (_req, res) => res.json(executor.cancelled));
  return base;
}

// The 1.0 agent.
async function agent1() {
  const app = express();
  const base = await listen(app);
  const card = {
    name: "js1", description: "An expert on @a2a-js/sdk 1.3.", version: "1.0.0",
    supportedInterfaces: [{ url: `${base}/a2a/jsonrpc`, protocolBinding: "JSONRPC", protocolVersion: "1.0", tenant: "" }],
    provider: undefined, documentationUrl: undefined, iconUrl: undefined,
    capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: {}, securityRequirements: [], defaultInputModes: ["text/plain"], defaultOutputModes: ["text/plain"],
    skills: [{ id: "expert", name: "expert", description: "Answers slowly.", tags: ["e2e"], examples: [], inputModes: [], outputModes: [], securityRequirements: [] }],
    signatures: [],
  };
  const text = (t) => ({ content: { $case: "text", value: t }, metadata: undefined, filename: "", mediaType: "" });
  const status = (state) => ({ state, message: undefined, timestamp: new Date().toISOString() });
  const update = ({ taskId, contextId }, state) => AgentEvent.statusUpdate({ taskId, contextId, status: status(state), metadata: undefined });
  const executor = expertExecutor({
    task: (ctx) => AgentEvent.task({ id: ctx.taskId, contextId: ctx.contextId, status: status(TaskState.TASK_STATE_SUBMITTED), artifacts: [], history: [ctx.userMessage], metadata: undefined }),
    working: (ctx) => update(ctx, TaskState.TASK_STATE_WORKING),
    artifact: ({ taskId, contextId }, i, t) => AgentEvent.artifactUpdate({ taskId, contextId, append: i > 0, lastChunk: i === WORDS.length - 1, metadata: undefined,
      artifact: { artifactId: "answer", name: "answer", description: "", parts: [text(t)], metadata: undefined, extensions: [] } }),
    canceled: (ctx) => update(ctx, TaskState.TASK_STATE_CANCELED),
    completed: (ctx) => update(ctx, TaskState.TASK_STATE_COMPLETED),
  });
  const handler = new Handler1(card, new Store1(), executor);
  app.use("/.well-known/agent-card.json", agentCardHandler({ agentCardProvider: async () => card }));
  app.use("/a2a/jsonrpc", jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
  app.get("/cancelled", (_req, res) => res.json(executor.cancelled));
  return base;
}

const [v03, v1] = await Promise.all([agent03(), agent1()]);
process.stdout.write(JSON.stringify({ v03, v1 }) + "\n");
