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
