// An A2A client built on the official JavaScript SDK, the real peer of the
// tests of Baton's A2A server (package a2aserver). It runs one scenario
// against the workflows the tests serve, asserts what it gets, and prints
// "ok <scenario>" (exit 0) or the failed assertion (exit 1).
//
// Usage: node a2a_client_run.mjs <scenario>
// Environment: BASE (the server's URL, required), TOKEN (a bearer token
// sent on every call), DIALECT ("1.0", the default, or "0.3": the client
// then keeps only the card's 0.3 interface and speaks 0.3 through the SDK's
// compat transport).
//
// Scenarios: card, complete, idempotent, wait, stream, gated (prints
// "working <task id>" once the stream shows the task working, and waits
// for the test to let it go on), cancel, errors, token.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import {
  ClientFactory,
  ClientFactoryOptions,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
} from "@a2a-js/sdk/client";
import { TaskState, Role } from "@a2a-js/sdk";

const base = process.env.BASE;
const token = process.env.TOKEN || "";
const dialect = process.env.DIALECT || "1.0";
const scenario = process.argv[2];

function fetchImpl(url, init = {}) {
  const headers = new Headers(init.headers);
  if (token) headers.set("Authorization", `Bearer ${token}`);
  return fetch(url, { ...init, headers });
}

async function connect(workflow, clientConfig = {}) {
  const resolver = new DefaultAgentCardResolver({ fetchImpl });
  let card = await resolver.resolve(`${base}/a2a/${workflow}/.well-known/agent-card.json`, "");
  if (dialect === "0.3") {
    card = { ...card, supportedInterfaces: card.supportedInterfaces.filter((i) => i.protocolVersion === "0.3") };
  }
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory({ fetchImpl, legacyCompat: { enabled: dialect === "0.3" } })],
      cardResolver: resolver,
      clientConfig,
    }),
  );
  return { card, client: await factory.createFromAgentCard(card) };
}

const text = (s) => ({ content: { $case: "text", value: s }, metadata: undefined, filename: "", mediaType: "text/plain" });
const data = (v) => ({ content: { $case: "data", value: v }, metadata: undefined, filename: "", mediaType: "application/json" });
const message = (parts, taskId = "", messageId = randomUUID()) => ({
  message: { messageId, contextId: "", taskId, role: Role.ROLE_USER, parts, metadata: undefined, extensions: [], referenceTaskIds: [] },
});

const textOf = (msg) => (msg?.parts ?? []).filter((p) => p.content?.$case === "text").map((p) => p.content.value).join("\n");
const resultOf = (task) => task.artifacts[0].parts.find((p) => p.content?.$case === "data").content.value;

async function rejects(promise, code, field) {
  try {
    await promise;
  } catch (err) {
    assert.equal(err.envelopeCode, code, `error code of ${err.message}`);
    if (field) assert.equal(err.data?.field, field, `field of ${err.message}`);
    return err;
  }
  assert.fail(`the call succeeded, want error ${code}`);
}

async function collect(stream) {
  const events = [];
  for await (const ev of stream) events.push(ev.payload);
  return events;
}

// settledOf is a stream's last state, and the result it carried (by the
// task or an artifact update).
function settledOf(events) {
  assert.ok(events.length > 0, "the stream sent nothing");
  const last = events[events.length - 1];
  const state = last.$case === "task" ? last.value.status.state : last.value.status.state;
  let result;
  for (const ev of events) {
    if (ev.$case === "task" && ev.value.artifacts?.length) result = resultOf(ev.value);
    if (ev.$case === "artifactUpdate") result = ev.value.artifact.parts[0].content.value;
  }
  return { state, result, last };
}

const scenarios = {
  async card() {
    const { card } = await connect("quick");
    assert.equal(card.name, "quick");
    assert.equal(card.version, "3");
    assert.equal(card.capabilities.streaming, true);
    assert.match(card.skills[0].description, /amount: number/);
    assert.match(card.skills[0].description, /note: string\?/);
  },

  async complete() {
    const { client } = await connect("quick");
    const task = await client.sendMessage(message([data({ amount: 5 })]));
    assert.equal(task.status.state, TaskState.TASK_STATE_COMPLETED);
    assert.equal(task.contextId, task.id);
    const result = resultOf(task);
    assert.equal(result.outcome, "DONE");
    assert.equal(result.context.by, "fast");
    assert.equal(result.usage.input_tokens, 3);
    const got = await client.getTask({ id: task.id });
    assert.equal(got.status.state, TaskState.TASK_STATE_COMPLETED);
  },

  async idempotent() {
    const { client } = await connect("quick");
    const id = randomUUID();
    const first = await client.sendMessage(message([data({ amount: 1 })], "", id));
    const again = await client.sendMessage(message([data({ amount: 1 })], "", id));
    assert.equal(again.id, first.id);
    const other = await client.sendMessage(message([data({ amount: 1 })]));
    assert.notEqual(other.id, first.id);
  },

  async wait() {
    const { client } = await connect("approve");
    let task = await client.sendMessage(message([text("please approve")]));
    assert.equal(task.status.state, TaskState.TASK_STATE_INPUT_REQUIRED);
    assert.match(textOf(task.status.message), /approved, rejected/);
    await rejects(client.sendMessage(message([text("yes")], task.id)), -32602, "signal");
    task = await client.sendMessage(message([data({ signal: "approved", data: { by: "ana" } })], task.id));
    assert.equal(task.status.state, TaskState.TASK_STATE_COMPLETED);
    assert.equal(resultOf(task).context.by, "ana");

    const one = (await connect("confirm")).client;
    let asked = await one.sendMessage(message([text("shall we?")]));
    assert.equal(asked.status.state, TaskState.TASK_STATE_INPUT_REQUIRED);
    asked = await one.sendMessage(message([text("yes")], asked.id));
    assert.equal(asked.status.state, TaskState.TASK_STATE_COMPLETED);
    assert.deepEqual(resultOf(asked).context.answer, { text: "yes" });
  },

  async stream() {
    const { client } = await connect("approve");
    let events = await collect(client.sendMessageStream(message([text("stream it")])));
    let settled = settledOf(events);
    assert.equal(settled.state, TaskState.TASK_STATE_INPUT_REQUIRED);
    const id = events[0].value.id;
    events = await collect(client.sendMessageStream(message([data({ signal: "approved", data: { by: "bo" } })], id)));
    settled = settledOf(events);
    assert.equal(settled.state, TaskState.TASK_STATE_COMPLETED);
    assert.equal(settled.result.context.by, "bo");
    // Subscribing to a finished task gives the task and ends.
    events = await collect(client.resubscribeTask({ id }));
    assert.equal(settledOf(events).state, TaskState.TASK_STATE_COMPLETED);
  },

  async gated() {
    const { client } = await connect("gated");
    const events = [];
    for await (const ev of client.sendMessageStream(message([data({})]))) {
      events.push(ev.payload);
      if (events.length === 1) {
        assert.equal(ev.payload.$case, "task");
        assert.equal(ev.payload.value.status.state, TaskState.TASK_STATE_WORKING);
        console.log(`working ${ev.payload.value.id}`);
      }
    }
    const settled = settledOf(events);
    assert.equal(settled.last.$case, "statusUpdate");
    assert.equal(settled.state, TaskState.TASK_STATE_INPUT_REQUIRED);
    assert.match(textOf(settled.last.value.status.message), /signal go/);
  },

  async cancel() {
    const { client } = await connect("slow", { polling: true });
    const task = await client.sendMessage(message([data({})]));
    assert.equal(task.status.state, TaskState.TASK_STATE_WORKING);
    const cancelled = await client.cancelTask({ id: task.id });
    assert.equal(cancelled.status.state, TaskState.TASK_STATE_CANCELED);
    await rejects(client.cancelTask({ id: task.id }), -32002);
    await rejects(client.getTask({ id: "no-such-task" }), -32001);
  },

  async errors() {
    const { client } = await connect("quick");
    await rejects(client.sendMessage(message([data({ amount: "ten" })])), -32602, "input.amount");
    const done = await client.sendMessage(message([data({ amount: 2 })]));
    await rejects(client.sendMessage(message([text("more")], done.id)), -32004);
    await rejects(client.sendMessage(message([text("hello")], "no-such-task")), -32001);
    await rejects(client.getTask({ id: "no-such-task" }), -32001);
  },

  async token() {
    const { client, card } = await connect("quick");
    assert.ok(card.securitySchemes?.bearer, "the card declares no bearer scheme");
    const task = await client.sendMessage(message([data({ amount: 5 })]));
    assert.equal(task.status.state, TaskState.TASK_STATE_COMPLETED);
    const bare = await fetch(`${base}/a2a/quick`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "GetTask", params: { id: task.id } }),
    });
    assert.equal(bare.status, 401);
  },
};

const run = scenarios[scenario];
if (!run) {
  console.error(`unknown scenario ${scenario}`);
  process.exit(2);
}
try {
  await run();
  console.log(`ok ${scenario}`);
} catch (err) {
  console.error(err?.stack ?? String(err));
  process.exit(1);
}
