// An A2A agent built on the official JavaScript SDK, the real peer of
// Baton's A2A client tests (package a2aagent). What it does with a message
// depends on input.mode in the message's data part:
//
//   message   answers with a Message (a data part echoing the input)
//   complete  answers with a Task that completes with an artifact
//   ask       asks for input first; the next message on the same task
//             completes it with the reply it was given
//   fail      fails the task; reject rejects it; auth asks for auth
//   slow      works until it is cancelled
//
// Environment: PORT (required), A2A_VERSION ("1.0", the default, serves the
// 1.0 card at /.well-known/agent-card.json; "0.3" serves only a 0.3-shaped
// card at the older /.well-known/agent.json and speaks 0.3 through the
// SDK's compat layer), STREAMING ("1": the card offers streaming), TOKEN
// (when set, every call needs Authorization: Bearer TOKEN).
//
// Test hooks: GET /_test/log lists every JSON-RPC call it was sent (method,
// A2A-Version header, authorization, message ids), GET /_test/cancelled the
// tasks it cancelled, GET /_test/working answers once a slow task works.
import express from "express";
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } from "@a2a-js/sdk/server";
import { jsonRpcHandler, agentCardHandler, UserBuilder } from "@a2a-js/sdk/server/express";
import { TaskState, Role } from "@a2a-js/sdk";

const port = Number(process.env.PORT);
const version = process.env.A2A_VERSION || "1.0";
const streaming = process.env.STREAMING === "1";
const token = process.env.TOKEN || "";
const base = `http://127.0.0.1:${port}`;

const log = [];
const cancelled = [];
const working = new Set();
let workingWaiters = [];
const stopped = new Map(); // task id -> resolve of its slow loop
const subscribed = new Map(); // task id -> resolve of a wait for a subscriber
const seenSubscriber = new Set();

// On a streaming peer a task settles only once its client subscribed (or
// after two seconds): the settling events then go out on the stream.
function subscriber(taskId) {
  if (!streaming) return Promise.resolve();
  if (seenSubscriber.delete(taskId)) return new Promise((resolve) => setTimeout(resolve, 20));
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, 2000);
    subscribed.set(taskId, () => { clearTimeout(timer); setTimeout(resolve, 20); });
  });
}

const card = {
  name: "peer",
  description: "the A2A peer of Baton's tests",
  supportedInterfaces: [
    { url: `${base}/rpc`, protocolBinding: "JSONRPC", protocolVersion: version === "0.3" ? "0.3" : "1.0", tenant: "" },
  ],
  provider: undefined,
  version: "1.0.0",
  capabilities: { streaming, pushNotifications: false, extensions: [] },
  securitySchemes: {},
  securityRequirements: [],
  defaultInputModes: ["text/plain", "application/json"],
  defaultOutputModes: ["text/plain", "application/json"],
  skills: [{ id: "echo", name: "echo", description: "echoes", tags: ["test"], examples: [], inputModes: [], outputModes: [], securityRequirements: [] }],
  signatures: [],
};
if (version === "0.3") {
  // The compat layer wants the core card to declare the 0.3 interface too.
  card.supportedInterfaces.push({ url: `${base}/rpc`, protocolBinding: "JSONRPC", protocolVersion: "1.0", tenant: "" });
}

const text = (s) => ({ content: { $case: "text", value: s }, metadata: undefined, filename: "", mediaType: "text/plain" });
const data = (v) => ({ content: { $case: "data", value: v }, metadata: undefined, filename: "", mediaType: "application/json" });
const agentMessage = (ctx, parts) => ({
  messageId: `m-${Math.random().toString(36).slice(2)}`,
  contextId: ctx.contextId,
  taskId: ctx.taskId,
  role: Role.ROLE_AGENT,
  parts,
  metadata: undefined,
  extensions: [],
  referenceTaskIds: [],
});
const usage = { usage: { input_tokens: 7, output_tokens: 3, cost: 0.5 } };

function dataOf(msg) {
  for (const p of msg.parts) {
    if (p.content?.$case === "data") return p.content.value;
  }
  return {};
}
function textOf(msg) {
  return msg.parts.filter((p) => p.content?.$case === "text").map((p) => p.content.value).join(" ");
}

function status(ctx, state, msg, final) {
  return AgentEvent.statusUpdate({
    taskId: ctx.taskId,
    contextId: ctx.contextId,
    status: { state, message: msg, timestamp: new Date().toISOString() },
    metadata: undefined,
  });
}

const tick = () => new Promise((r) => setTimeout(r, 5));

class Executor {
  async execute(ctx, bus) {
    const d = dataOf(ctx.userMessage);
    const mode = ctx.task ? "continue" : d?.input?.mode;
    if (mode === "message") {
      bus.publish(AgentEvent.message({ ...agentMessage(ctx, [text("hello"), data({ echo: d.input, context: d.context ?? null })]), taskId: "", metadata: usage }));
      bus.finished();
      return;
    }
    const task = ctx.task ?? {
      id: ctx.taskId,
      contextId: ctx.contextId,
      status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: new Date().toISOString() },
      artifacts: [],
      history: [ctx.userMessage],
      metadata: mode === "complete" ? usage : undefined,
    };
    bus.publish(AgentEvent.task(task));
    bus.publish(status(ctx, TaskState.TASK_STATE_WORKING, undefined));
    await tick(); // the answer of a send that does not wait goes out first
    if (mode !== "slow") await subscriber(ctx.taskId);
    switch (mode) {
      case "complete":
        bus.publish(AgentEvent.artifactUpdate({
          taskId: ctx.taskId, contextId: ctx.contextId,
          artifact: { artifactId: "a1", name: "answer", description: "", parts: [text("part one"), data({ answer: 42, input: d.input }), text("part two")], metadata: undefined, extensions: [] },
          append: false, lastChunk: true, metadata: undefined,
        }));
        bus.publish(status(ctx, TaskState.TASK_STATE_COMPLETED, undefined));
        break;
      case "ask":
        bus.publish(status(ctx, TaskState.TASK_STATE_INPUT_REQUIRED, agentMessage(ctx, [text("which year?"), data({ choices: [2024, 2025] })])));
        break;
      case "continue":
        bus.publish(AgentEvent.artifactUpdate({
          taskId: ctx.taskId, contextId: ctx.contextId,
          artifact: { artifactId: "a2", name: "answer", description: "", parts: [data({ year: d?.previous_result?.year ?? null, said: textOf(ctx.userMessage) })], metadata: undefined, extensions: [] },
          append: false, lastChunk: true, metadata: undefined,
        }));
        bus.publish(status(ctx, TaskState.TASK_STATE_COMPLETED, undefined));
        break;
      case "fail":
        bus.publish(status(ctx, TaskState.TASK_STATE_FAILED, agentMessage(ctx, [text("the research failed")])));
        break;
      case "reject":
        bus.publish(status(ctx, TaskState.TASK_STATE_REJECTED, agentMessage(ctx, [text("not my kind of work")])));
        break;
      case "auth":
        bus.publish(status(ctx, TaskState.TASK_STATE_AUTH_REQUIRED, agentMessage(ctx, [text("log in first")])));
        break;
      case "slow":
        working.add(ctx.taskId);
        for (const w of workingWaiters) w(ctx.taskId);
        workingWaiters = [];
        await new Promise((resolve) => stopped.set(ctx.taskId, resolve));
        break;
      default:
        bus.publish(status(ctx, TaskState.TASK_STATE_FAILED, agentMessage(ctx, [text(`unknown mode ${mode}`)])));
    }
    bus.finished();
  }

  async cancelTask(taskId, bus) {
    cancelled.push(taskId);
    bus.publish(AgentEvent.statusUpdate({
      taskId, contextId: "",
      status: { state: TaskState.TASK_STATE_CANCELED, message: undefined, timestamp: new Date().toISOString() },
      metadata: undefined,
    }));
    stopped.get(taskId)?.();
    bus.finished();
  }
}

const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), new Executor());
const app = express();

app.get("/_test/log", (_req, res) => res.json(log));
app.get("/_test/cancelled", (_req, res) => res.json(cancelled));
app.get("/_test/working", (_req, res) => {
  if (working.size > 0) return res.json([...working]);
  workingWaiters.push(() => res.json([...working]));
});

app.use((req, res, next) => {
  if (token && req.header("authorization") !== `Bearer ${token}`) {
    return res.status(401).json({ error: "unauthorized" });
  }
  next();
});

if (version === "0.3") {
  // A 0.3 agent: its card, in the 0.3 shape, only at the older path.
  app.get("/.well-known/agent.json", (_req, res) => res.json({
    name: card.name,
    description: card.description,
    url: `${base}/rpc`,
    preferredTransport: "JSONRPC",
    protocolVersion: "0.3.0",
    version: card.version,
    capabilities: { streaming },
    defaultInputModes: card.defaultInputModes,
    defaultOutputModes: card.defaultOutputModes,
    skills: [{ id: "echo", name: "echo", description: "echoes", tags: ["test"] }],
  }));
} else {
  app.use("/.well-known/agent-card.json", agentCardHandler({ agentCardProvider: handler }));
}

app.use("/rpc", express.json(), (req, _res, next) => {
  const b = req.body ?? {};
  const m = b.params?.message;
  log.push({
    method: b.method,
    version: req.header("a2a-version") ?? "",
    authorization: req.header("authorization") ?? "",
    traceparent: req.header("traceparent") ?? "",
    messageId: m?.messageId ?? "",
    contextId: m?.contextId ?? "",
    taskId: m?.taskId ?? "",
    params: b.params ?? null,
  });
  if (b.method === "SubscribeToTask" || b.method === "tasks/resubscribe") {
    seenSubscriber.add(b.params?.id);
    subscribed.get(b.params?.id)?.();
    subscribed.delete(b.params?.id);
  }
  next();
});
app.use("/rpc", jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication, legacyCompat: { enabled: version === "0.3" } }));

const server = app.listen(port, "127.0.0.1", () => console.log(`ready ${base}`));
process.on("SIGINT", () => server.close(() => process.exit(0)));
process.on("SIGTERM", () => server.close(() => process.exit(0)));
