// Compiled by `npm run typecheck` only (never run): an agent written in
// TypeScript against the package's declarations.

import {
  AgentError, Reject, Worker, decodeWork, reportOutcome, verifySignature,
  type Handler, type Outcome, type Report, type Work,
} from '@batonhq/agent';

const review: Handler = async (work: Work, { signal, traceparent }): Promise<Outcome> => {
  if (signal.aborted) throw new AgentError('cancelled', { retryable: true, kind: 'cancelled' });
  if (work.context.amount > 500) throw new Reject('above my limit');
  void traceparent;
  return { trigger: 'reviewed', result: { approval: 'APPROVED' } };
};

const worker = new Worker({
  servers: 'nats://127.0.0.1:4222',
  agents: { seller: review, helper: (w) => ({ handoff: { to: 'seller', reason: 'clarification', returnControl: w.returnControl } }) },
  concurrency: 4,
  onNotice: (w) => { void w.instanceId; },
});
void worker.start().then(() => worker.drain());

const body = '{}';
if (verifySignature('secret', body, 'sha256=00')) {
  const w = decodeWork(body);
  const r: Report = reportOutcome(w, 'done', { ok: true });
  void r;
}

// The API client, typed.
import { Client, NotWaitingError, type Instance } from '@batonhq/agent';

async function follow(): Promise<Instance> {
  const client = new Client({ server: 'http://127.0.0.1:8080' });
  const { id } = await client.start('triage', { input: { text: 'hi' } });
  for await (const ev of await client.events({ instance: id })) {
    if (ev.type === 'completed') break;
  }
  try {
    await client.signal(id, 'go', { by: 'ana' });
  } catch (err) {
    if (!(err instanceof NotWaitingError)) throw err;
    void err.field;
  }
  return client.wait(id, { timeout: 60_000 });
}
void follow;

// Usage on outcomes and failures, progress while a run works, and the
// client's usage, cancel reason and progress events.
import { reportProgress, type Event, type InstanceUsage, type Progress, type Usage } from '@batonhq/agent';

const used: Usage = { inputTokens: 1200, outputTokens: 350, cost: 0.0123, model: 'large-2' };
const writer: Handler = async (work, ctx) => {
  const answer = await ctx.progress({ message: 'drafting', delta: 'Dear customer, ', data: { words: 3 } });
  if (!answer.ok) throw new AgentError('the run is over', { retryable: false, usage: used });
  if (work.context.refuse) throw new Reject('not mine', { usage: { cost: 0.001 } });
  return { trigger: 'drafted', result: { text: 'Dear customer, ...' }, usage: used };
};
void writer;
const p: Progress = { message: 'checking' };
void reportProgress({ instanceId: 'i', step: 1, agent: 'a' }, p);

async function spent(client: Client, id: string): Promise<number> {
  const inst = await client.get(id);
  const usage: InstanceUsage = inst.usage;
  const reason: string | undefined = inst.cancel_reason;
  void reason;
  for await (const ev of await client.events({ instance: id })) {
    const e: Event = ev;
    if (e.type === 'agent_progress' && e.progress?.message) break;
    if (e.type === 'agent_reported' && e.usage?.cost !== undefined) break;
  }
  return usage.cost + (usage.agents['writer']?.tokens ?? 0);
}
void spent;
