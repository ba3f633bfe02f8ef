// The research example's A2A agent, on the official A2A JavaScript SDK
// (protocol 1.0, JSON-RPC). Each task researches the topic Baton's triage
// gave (the message's data part: {input, context, ...}). A question without
// a scope (neither input.scope nor context.scope) is not researched at
// once: the task asks for one (input-required), and the next message on
// the same task, once a person gave the scope, completes it.
//
// Environment: PORT (default 9301); RESEARCH_A2A_TOKEN, when set, is the
// bearer token every call must carry.
//
// For the example's tests: GET /_test/messages lists every message it was
// sent ({messageId, taskId, contextId, data: its data part as JSON}); a topic containing "hold research"
// is held, working, until POST /_test/release; GET /_test/held lists the
// tasks held.
import express from 'express';
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import { jsonRpcHandler, agentCardHandler, UserBuilder } from '@a2a-js/sdk/server/express';
import { TaskState, Role } from '@a2a-js/sdk';

const port = Number(process.env.PORT || 9301);
const token = process.env.RESEARCH_A2A_TOKEN || '';
const base = `http://127.0.0.1:${port}`;

const card = {
  name: 'researcher',
  description: 'Researches a topic; asks for the scope when the question has none.',
  supportedInterfaces: [{ url: `${base}/rpc`, protocolBinding: 'JSONRPC', protocolVersion: '1.0', tenant: '' }],
  provider: undefined,
  version: '1.0.0',
  capabilities: { streaming: false, pushNotifications: false, extensions: [] },
  securitySchemes: {},
  securityRequirements: [],
  defaultInputModes: ['text/plain', 'application/json'],
  defaultOutputModes: ['text/plain', 'application/json'],
  skills: [{ id: 'research', name: 'research', description: 'Researches a topic within a scope.', tags: ['research'], examples: [], inputModes: [], outputModes: [], securityRequirements: [] }],
  signatures: [],
};

const messages = [];
const held = new Set();
let release;
const released = new Promise((resolve) => { release = resolve; });

const text = (s) => ({ content: { $case: 'text', value: s }, metadata: undefined, filename: '', mediaType: 'text/plain' });
const data = (v) => ({ content: { $case: 'data', value: v }, metadata: undefined, filename: '', mediaType: 'application/json' });

function dataOf(msg) {
  for (const p of msg.parts) if (p.content?.$case === 'data') return p.content.value ?? {};
  return {};
}

function status(ctx, state, parts) {
  const message = parts && {
    messageId: `m-${ctx.taskId}-${state}`, contextId: ctx.contextId, taskId: ctx.taskId, role: Role.ROLE_AGENT,
    parts, metadata: undefined, extensions: [], referenceTaskIds: [],
  };
  return AgentEvent.statusUpdate({ taskId: ctx.taskId, contextId: ctx.contextId, status: { state, message, timestamp: new Date().toISOString() }, metadata: undefined });
}

class Researcher {
  async execute(ctx, bus) {
    const d = dataOf(ctx.userMessage);
    const topic = String(d.context?.topic ?? d.input?.question ?? '');
    const scope = d.context?.scope ?? d.input?.scope;
    bus.publish(AgentEvent.task(ctx.task ?? {
      id: ctx.taskId, contextId: ctx.contextId,
      status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: new Date().toISOString() },
      artifacts: [], history: [ctx.userMessage], metadata: undefined,
    }));
    bus.publish(status(ctx, TaskState.TASK_STATE_WORKING));
    await new Promise((r) => setTimeout(r, 5)); // the answer of a send that does not wait goes out first
    if (topic.includes('hold research')) {
      held.add(ctx.taskId);
      await released;
    }
    if (!scope) {
      bus.publish(status(ctx, TaskState.TASK_STATE_INPUT_REQUIRED, [text('Which period or scope should the research cover?')]));
    } else {
      bus.publish(AgentEvent.artifactUpdate({
        taskId: ctx.taskId, contextId: ctx.contextId,
        artifact: {
          artifactId: 'findings', name: 'findings', description: '',
          parts: [text(`Findings on "${topic}" (${scope}): three sources agree.`), data({ topic, scope, sources: 3 })],
          metadata: undefined, extensions: [],
        },
        append: false, lastChunk: true, metadata: undefined,
      }));
      bus.publish(status(ctx, TaskState.TASK_STATE_COMPLETED));
    }
    bus.finished();
  }

  async cancelTask(taskId, bus) {
    bus.publish(AgentEvent.statusUpdate({ taskId, contextId: '', status: { state: TaskState.TASK_STATE_CANCELED, message: undefined, timestamp: new Date().toISOString() }, metadata: undefined }));
    bus.finished();
  }
}

const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), new Researcher());
const app = express();

app.get('/_test/messages', (_req, res) => res.json(messages));
app.get('/_test/held', (_req, res) => res.json([...held]));
app.post('/_test/release', (_req, res) => { release(); res.json({ released: held.size }); });

app.use((req, res, next) => {
  if (token && req.header('authorization') !== `Bearer ${token}`) return res.status(401).json({ error: 'unauthorized' });
  next();
});
app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: handler }));
app.use('/rpc', express.json(), (req, _res, next) => {
  const m = req.body?.params?.message;
  if (m) {
    const part = (m.parts ?? []).find((p) => p.data !== undefined);
    messages.push({ messageId: m.messageId ?? '', taskId: m.taskId ?? '', contextId: m.contextId ?? '', data: JSON.stringify(part?.data ?? null) });
  }
  next();
});
app.use('/rpc', jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));

const server = app.listen(port, '127.0.0.1', () => console.log(`researcher: listening on ${base}`));
const stop = () => { release(); server.close(() => process.exit(0)); server.closeAllConnections(); };
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
