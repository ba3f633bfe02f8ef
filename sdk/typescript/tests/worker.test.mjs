// The Worker against a real engine: each test runs workers for its own
// agents (see testdata/sdk.yaml) and starts instances through the Go test's
// control service.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { StringCodec } from 'nats';

import { AgentError, Reject, Worker } from '../src/index.js';
import { connection, control, deferred, needsEngine, start, testLogger, url, wait, waitFor } from './helpers.mjs';

const sc = StringCodec();

describe('Worker', needsEngine, () => {
  /** @type {import('nats').NatsConnection} */
  let nc;
  before(async () => { nc = await connection(); });
  after(async () => { await nc?.close(); });

  /** Runs a worker for agents until the test ends. */
  async function worker(t, agents, opts = {}) {
    const logger = testLogger();
    const w = new Worker({ servers: url, agents, signals: false, logger, ...opts });
    await w.start();
    t.after(async () => {
      await w.drain();
      if (logger.lines.length) t.diagnostic(logger.lines.join('\n'));
    });
    return w;
  }

  test('a run gets the decoded work and its outcome moves the instance on', async (t) => {
    const seen = [];
    await worker(t, {
      echo: (work, ctx) => {
        seen.push({ work, ctx });
        return { trigger: 'echoed', result: { seen: work.context.order } };
      },
    });
    const id = await start(nc, { scenario: 'echo', order: 7 }, 'DONE');
    const res = await wait(nc, id);
    assert.equal(res.outcome, 'DONE');
    assert.equal(res.context.echoed, 7);
    assert.equal(seen.length, 1);
    const { work, ctx } = seen[0];
    assert.equal(work.agent, 'echo');
    assert.equal(work.instanceId, id);
    assert.equal(work.step, 2);
    assert.equal(work.workflow, 'sdk');
    assert.equal(work.version, 1);
    assert.equal(work.state, 'ECHOING');
    assert.equal(work.idempotencyKey, `${id}:2`);
    assert.equal(work.action, 'run');
    assert.equal(work.notice, false);
    assert.equal(work.from, 'router');
    assert.equal(work.kind, 'rule');
    assert.equal(work.reason, 'Echo the order');
    assert.notEqual(work.handoffId, '');
    assert.equal(work.priority, 'HIGH');
    assert.equal(work.description, 'Echo order 7');
    assert.deepEqual(work.input, { scenario: 'echo', order: 7 });
    assert.deepEqual(work.constraints, { max_words: 5 });
    assert.equal(work.deliveryCount, 1);
    assert.match(work.traceparent, /^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/);
    assert.equal(ctx.traceparent, work.traceparent);
    assert.ok(ctx.signal instanceof AbortSignal);
    assert.equal(ctx.signal.aborted, false);
  });

  test("the traceparent a handler sees is its run's span in the engine's trace", async (t) => {
    let seen;
    await worker(t, {
      echo: (work, ctx) => {
        seen = { traceparent: ctx.traceparent, step: work.step };
        return { trigger: 'echoed', result: { seen: 1 } };
      },
    });
    const id = await start(nc, { scenario: 'echo', order: 1 }, 'DONE');
    await wait(nc, id);
    const spans = await control(nc, 'spans', { id });
    const [, traceId, spanId] = seen.traceparent.split('-');
    assert.match(spans.trace_id, /^[0-9a-f]{32}$/);
    assert.equal(traceId, spans.trace_id, 'the trace is the instance span\'s');
    assert.equal(spanId, spans.runs[String(seen.step)], 'the parent is the run span');
  });

  test('a long run sends in-progress acks and is delivered once', async (t) => {
    // Every ack the worker sends for slow's work is published on its
    // delivery's reply subject, $JS.ACK.BATON_WORK_slow....
    const acks = [];
    const sub = nc.subscribe('$JS.ACK.BATON_WORK_slow.>', { callback: (_, m) => acks.push(sc.decode(m.data)) });
    t.after(() => sub.unsubscribe());
    await nc.flush();
    let calls = 0;
    await worker(t, {
      slow: async (work) => {
        calls++;
        // Four heartbeats at a third of the ack wait: the run outlasts the
        // ack wait, and only the heartbeats keep its work from redelivery.
        await waitFor('four in-progress acks', () => acks.filter((a) => a === '+WPI').length >= 4);
        return { trigger: 'done', result: { deliveries: work.deliveryCount } };
      },
    });
    const id = await start(nc, { scenario: 'slow' }, 'DONE');
    const res = await wait(nc, id);
    assert.equal(res.outcome, 'DONE');
    await waitFor('the ack', () => acks.includes('+ACK'));
    assert.equal(calls, 1, 'the handler ran more than once: the work was delivered again');
    assert.deepEqual(acks.filter((a) => a !== '+WPI'), ['+ACK']);
  });

  test('a Reject is reported, and the work terminated and dead-lettered with the reason', async (t) => {
    await worker(t, { picky: () => { throw new Reject('not my job'); } });
    const id = await start(nc, { scenario: 'picky' }, 'REJECTED');
    const res = await wait(nc, id);
    assert.equal(res.outcome, 'REJECTED');
    assert.match(res.context.why, /not my job/);
    const dl = await waitFor('the dead letter', async () => (await control(nc, 'dead')).dead.find((d) => d.agent === 'picky'));
    assert.equal(dl.reason, 'rejected');
    assert.equal(dl.last_error, 'not my job');
    assert.equal(dl.message.metadata.idempotency_key, `${id}:2`);
  });

  test('a thrown Error is a retryable failure: the retry runs as attempt 2', async (t) => {
    const attempts = [];
    await worker(t, {
      flaky: (work) => {
        attempts.push(work.attempt);
        if (attempts.length === 1) throw new Error('flaked');
        return { trigger: 'done' };
      },
    });
    const id = await start(nc, { scenario: 'flaky' }, 'DONE');
    assert.equal((await wait(nc, id)).outcome, 'DONE');
    assert.equal(attempts.length, 2);
    assert.ok(attempts[1] > attempts[0], `attempts ${attempts}`);
  });

  test('an AgentError that is not retryable fails the run at once, with its kind', async (t) => {
    let calls = 0;
    await worker(t, {
      broken: () => {
        calls++;
        throw new AgentError('card declined', { retryable: false, kind: 'declined' });
      },
    });
    const id = await start(nc, { scenario: 'broken' }, 'FAILED');
    const res = await wait(nc, id);
    assert.equal(res.outcome, 'FAILED');
    assert.equal(res.context.failure, 'card declined');
    assert.equal(calls, 1);
    const { history } = await control(nc, 'history', { id });
    const run = history.find((e) => e.kind === 'agent_run' && e.agent === 'broken');
    assert.equal(run?.error_kind, 'declined', JSON.stringify(history));
    const out = history.find((e) => e.kind === 'outcome' && e.agent === 'broken');
    assert.equal(out?.retryable ?? false, false, JSON.stringify(history));
    assert.equal(history.filter((e) => e.kind === 'retry').length, 0, JSON.stringify(history));
  });

  test('a hand-off with return control: the helper gets the payload, the delegator its result', async (t) => {
    const runs = [];
    await worker(t, {
      delegator: (work) => {
        runs.push({ agent: 'delegator', reason: work.reason, previousResult: work.previousResult });
        if (work.reason === 'return_control') return { trigger: 'done', result: { answer: work.previousResult.answer } };
        return { handoff: { to: 'helper', reason: 'clarification', explanation: 'needs the answer', task: 'Find the answer', payload: { q: 'six times seven' }, returnControl: true } };
      },
      helper: (work) => {
        runs.push({ agent: 'helper', from: work.from, kind: work.kind, reason: work.reason, payload: work.payload, returnControl: work.returnControl, description: work.description });
        return { trigger: 'answered', result: { answer: 42 } };
      },
    });
    const id = await start(nc, { scenario: 'delegate' }, 'DONE');
    const res = await wait(nc, id);
    assert.equal(res.outcome, 'DONE');
    assert.equal(res.context.answer, 42);
    assert.equal(runs.length, 3, JSON.stringify(runs));
    assert.deepEqual(runs[1], {
      agent: 'helper', from: 'delegator', kind: 'clarification', reason: 'needs the answer',
      payload: { q: 'six times seven' }, returnControl: true, description: 'Find the answer',
    });
    assert.equal(runs[2].reason, 'return_control');
    assert.deepEqual(runs[2].previousResult, { answer: 42 });
  });

  test('a final notice is taken without a handler call, and onNotice sees it', async (t) => {
    const noticed = deferred();
    let calls = 0;
    await worker(t, { watcher: () => { calls++; return { trigger: 'x' }; } }, { onNotice: (work) => noticed.resolve(work) });
    const id = await start(nc, { scenario: 'notice' }, 'NOTICED');
    assert.equal((await wait(nc, id)).outcome, 'NOTICED');
    const work = await noticed.promise;
    assert.equal(work.notice, true);
    assert.equal(work.instanceId, id);
    await waitFor('the notice taken', async () => (await control(nc, 'history', { id })).history.some((e) => e.kind === 'notice_taken'));
    assert.equal(calls, 0);
  });

  test('usage on outcomes counts in the instance\'s usage, and progress is answered ok while the run works', async (t) => {
    const runs = [];
    await worker(t, {
      reporter: async (work, ctx) => {
        const answer = await ctx.progress({ message: `checking, attempt ${work.attempt}`, delta: 'The order ', data: { lines: 3 } });
        // The engine keeps the latest progress of the run under way.
        const { progress } = await control(nc, 'progress', { id: work.instanceId });
        runs.push({ step: work.step, attempt: work.attempt, answer, progress, ctx });
        if (work.attempt === 1) {
          // A failed run's usage counts too.
          throw new AgentError('flaked', { usage: { inputTokens: 100, cost: 0.25, model: 'small' } });
        }
        return { trigger: 'done', result: {}, usage: { inputTokens: 1200, outputTokens: 350, cost: 0.125, model: 'large-2' } };
      },
    });
    const id = await start(nc, { scenario: 'report' }, 'DONE');
    const res = await wait(nc, id);
    assert.equal(res.outcome, 'DONE');
    const totals = { input_tokens: 1300, output_tokens: 350, tokens: 1650, cost: 0.375 };
    assert.deepEqual(
      { input_tokens: res.usage.input_tokens, output_tokens: res.usage.output_tokens, tokens: res.usage.tokens, cost: res.usage.cost },
      totals, JSON.stringify(res.usage));
    assert.deepEqual(res.usage.agents, { reporter: totals });
    assert.equal(res.context.spent, 0.375);
    assert.equal(runs.length, 2);
    for (const r of runs) {
      assert.deepEqual(r.answer, { ok: true });
      assert.deepEqual(r.progress, [{ step: r.step, agent: 'reporter', progress: { message: `checking, attempt ${r.attempt}`, delta: 'The order ', data: { lines: 3 } } }]);
    }
    const { history } = await control(nc, 'history', { id });
    const used = history.filter((e) => e.kind === 'agent_run' && e.agent === 'reporter').map((e) => e.usage);
    assert.deepEqual(used, [{ input_tokens: 100, cost: 0.25, model: 'small' }, { input_tokens: 1200, output_tokens: 350, cost: 0.125, model: 'large-2' }]);
    // Progress for a run that is over changes nothing.
    const late = await runs[1].ctx.progress({ message: 'too late' });
    assert.equal(late.ok, false);
    assert.equal(late.code, 'stale');
    await assert.rejects(runs[1].ctx.progress(/** @type {any} */ ({ data: [1] })), { name: 'FieldError', field: 'progress.data' });
  });

  test('a drain past its grace aborts the handler\'s signal and gives its work back', async (t) => {
    const started = deferred();
    // A handler that never ends, whatever its signal says.
    const first = await worker(t, { stubborn: (_, ctx) => { started.resolve(ctx.signal); return new Promise(() => {}); } }, { grace: 20 });
    const id = await start(nc, { scenario: 'stubborn' }, 'DONE');
    const signal = await started.promise;
    assert.equal(signal.aborted, false);
    await first.drain();
    assert.equal(signal.aborted, true);
    await worker(t, { stubborn: (_, ctx) => ({ trigger: 'done', result: { deliveries: ctx.deliveryCount } }) });
    const res = await wait(nc, id);
    assert.equal(res.outcome, 'DONE');
    assert.equal(res.context.deliveries, 2);
  });

  test('a drain during start: start resolves, nothing is taken, the connection is closed', async () => {
    let calls = 0;
    const w = new Worker({ servers: url, signals: false, agents: { echo: () => { calls++; return { trigger: 'echoed' }; } } });
    const started = w.start();
    await w.drain();
    await started;
    await w.closed;
    assert.equal(calls, 0);
    await assert.rejects(w.start(), /already started/);
  });

  test('a worker whose connection is closed under it drains itself', async () => {
    const own = await connection();
    const w = new Worker({ connection: own, signals: false, agents: { echo: () => ({ trigger: 'echoed' }) } });
    await w.start();
    await own.close();
    await w.closed;
  });

  test('work that is not a message is dead-lettered, never handed to the handler', async (t) => {
    let calls = 0;
    await worker(t, { garbage: () => { calls++; return { trigger: 'x' }; } });
    const js = nc.jetstream();
    await js.publish('baton.work.garbage.normal', sc.encode('{not json'));
    const dl = await waitFor('the dead letter', async () => (await control(nc, 'dead')).dead.find((d) => d.agent === 'garbage'));
    assert.equal(dl.reason, 'rejected');
    assert.match(dl.last_error, /^natsbus: work is not a message: /);
    assert.equal(calls, 0);
  });
});
