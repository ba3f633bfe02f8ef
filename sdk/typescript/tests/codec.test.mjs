// The codec: work, reports and answers read and checked as the Go codec
// reads and checks them (testdata/corpus.json holds its verdicts), and the
// HTTP agents' signature.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';

import {
  AgentError, FieldError, Reject, decodeAnswer, decodeWork, reportError, reportHandoff, reportHeartbeat,
  reportOutcome, reportProgress, reportReject, sign, token, validateReport, verifySignature,
} from '../src/index.js';
import { parseAckSubject } from '../src/names.js';
import { reportOf } from '../src/report.js';
import { expiresAt, parseGoDuration } from '../src/work.js';

const corpus = JSON.parse(readFileSync(new URL('../testdata/corpus.json', import.meta.url), 'utf8'));

/** Work as JSON would carry it: the deadline as text. */
function plain(work) {
  const out = { ...work };
  delete out.messageId;
  delete out.action;
  if (out.deadline) out.deadline = out.deadline.toISOString();
  return out;
}

describe('decodeWork agrees with the Go codec', () => {
  for (const c of corpus.work) {
    test(c.name, () => {
      if (c.field) {
        assert.throws(() => decodeWork(JSON.stringify(c.message)), (err) => err instanceof FieldError && err.field === c.field);
        return;
      }
      const got = plain(decodeWork(JSON.stringify(c.message)));
      const want = { ...c.work };
      // A JavaScript Date keeps milliseconds.
      if (want.deadline) want.deadline = new Date(want.deadline).toISOString();
      assert.deepEqual(got, want);
    });
  }
});

describe('validateReport agrees with the Go codec', () => {
  for (const c of corpus.reports) {
    test(c.name, () => {
      const r = JSON.parse(c.json);
      if (!c.field) {
        assert.equal(validateReport(r), r);
        return;
      }
      assert.throws(() => validateReport(r), (err) => {
        assert.ok(err instanceof FieldError);
        assert.equal(err.field, c.field);
        return true;
      });
    });
  }
});

describe('decodeWork', () => {
  test('takes bytes and objects, and names what is not JSON', () => {
    const m = corpus.work[0].message;
    assert.equal(decodeWork(Buffer.from(JSON.stringify(m))).step, 3);
    assert.equal(decodeWork(m).step, 3);
    assert.throws(() => decodeWork('{'), { name: 'FieldError', field: 'message' });
    assert.throws(() => decodeWork('[1]'), { name: 'FieldError', field: 'message' });
  });

  test('an error reads as the Go codec writes it', () => {
    assert.throws(() => decodeWork({ message_type: 'HANDOFF', content: { action: 'run' }, metadata: {} }),
      { message: 'wire: metadata.instance_id is required' });
  });
});

const work = { instanceId: 'i', step: 3, agent: 'a' };

describe('report builders', () => {
  test('build the reports of the protocol', () => {
    assert.deepEqual(reportOutcome(work, 'done', { x: 1 }), { instance_id: 'i', step: 3, agent: 'a', trigger: 'done', result: { x: 1 } });
    assert.deepEqual(reportError(work, 'slow down', { kind: 'rate_limited' }),
      { instance_id: 'i', step: 3, agent: 'a', error: { message: 'slow down', retryable: true, kind: 'rate_limited' } });
    assert.deepEqual(reportError(work, 'no', { retryable: false, kind: 'error' }),
      { instance_id: 'i', step: 3, agent: 'a', error: { message: 'no', retryable: false } });
    assert.deepEqual(reportReject(work, 'busy'), { instance_id: 'i', step: 3, agent: 'a', reject: 'busy' });
    assert.deepEqual(reportHandoff(work, { to: 'b', reason: 'clarification', payload: { q: 1 }, returnControl: true }, { so: 'far' }),
      { instance_id: 'i', step: 3, agent: 'a', handoff: { to: 'b', reason: 'clarification', payload: { q: 1 }, return_control: true }, result: { so: 'far' } });
    assert.deepEqual(reportHeartbeat(work), { instance_id: 'i', step: 3, agent: 'a', heartbeat: true });
  });

  test('refuse what the engine would refuse, naming the field', () => {
    assert.throws(() => reportOutcome(work, ''), { field: 'report' });
    assert.throws(() => reportError(work, ''), { field: 'error.message' });
    assert.throws(() => reportHandoff(work, { to: '' }), { field: 'handoff.to' });
    assert.throws(() => reportOutcome({ ...work, step: 0 }, 't'), { field: 'step' });
    assert.throws(() => reportOutcome({ ...work, instanceId: '' }, 't'), { field: 'instance_id' });
    assert.throws(() => reportOutcome(work, 't', /** @type {any} */ ([1])), { field: 'result' });
  });
});

describe('usage and progress', () => {
  const used = { inputTokens: 1200, outputTokens: 350, cost: 0.0123, model: 'large-2' };
  const wire = { input_tokens: 1200, output_tokens: 350, cost: 0.0123, model: 'large-2' };

  test('usage goes with every report that ends the run, under its report names', () => {
    assert.deepEqual(reportOutcome(work, 'done', undefined, used), { instance_id: 'i', step: 3, agent: 'a', trigger: 'done', usage: wire });
    assert.deepEqual(reportError(work, 'no', { usage: { cost: 0.5 } }).usage, { cost: 0.5 });
    assert.deepEqual(reportReject(work, 'busy', { inputTokens: 10 }).usage, { input_tokens: 10 });
    assert.deepEqual(reportHandoff(work, { to: 'b' }, undefined, { outputTokens: 1 }).usage, { output_tokens: 1 });
    assert.equal('usage' in reportOutcome(work, 'done', {}, { inputTokens: 0, model: '' }), false, 'zero usage is left out');
    assert.deepEqual(reportOf(work, { outcome: { trigger: 'ok', usage: used }, threw: false }).usage, wire);
    assert.deepEqual(reportOf(work, { outcome: { handoff: { to: 'b' }, usage: used }, threw: false }).usage, wire);
    assert.deepEqual(reportOf(work, { thrown: new Reject('busy', { usage: used }), threw: true }).usage, wire);
    assert.deepEqual(reportOf(work, { thrown: new AgentError('declined', { retryable: false, usage: used }), threw: true }),
      { instance_id: 'i', step: 3, agent: 'a', error: { message: 'declined', retryable: false }, usage: wire });
  });

  test('bad usage is refused before it is sent, naming the report field', () => {
    for (const [usage, field] of [
      [{ inputTokens: -1 }, 'usage.input_tokens'],
      [{ outputTokens: 1.5 }, 'usage.output_tokens'],
      [{ inputTokens: 2 ** 64 }, 'usage.input_tokens'],
      [{ cost: -0.01 }, 'usage.cost'],
      [{ cost: NaN }, 'usage.cost'],
      [{ cost: Infinity }, 'usage.cost'],
      [{ cost: '0.1' }, 'usage.cost'],
      [{ model: 4 }, 'usage.model'],
      [{ tokens: 3 }, 'usage.tokens'],
      [[1], 'usage'],
    ]) {
      assert.throws(() => reportOutcome(work, 'done', undefined, /** @type {any} */ (usage)), (err) => err instanceof FieldError && err.field === field, JSON.stringify(usage));
      for (const end of [{ outcome: { trigger: 'ok', usage }, threw: false }, { thrown: new AgentError('x', { usage }), threw: true }, { thrown: new Reject('x', { usage }), threw: true }]) {
        const e = reportOf(work, end).error;
        assert.equal(e.kind, 'invalid_result', JSON.stringify(usage));
        assert.equal(e.retryable, false);
        assert.match(e.message, new RegExp(field.replace('.', '\\.')));
        assert.equal(reportOf(work, end).usage, undefined);
      }
    }
  });

  test('progress is a report of its own, checked as the engine checks it', () => {
    assert.deepEqual(reportProgress(work, { message: 'checking', delta: 'The order ', data: { lines: 3 } }),
      { instance_id: 'i', step: 3, agent: 'a', progress: { message: 'checking', delta: 'The order ', data: { lines: 3 } } });
    assert.deepEqual(reportProgress(work), { instance_id: 'i', step: 3, agent: 'a', progress: {} });
    assert.deepEqual(reportProgress(work, { message: '' }).progress, {});
    for (const [p, field] of [
      ['working', 'progress'],
      [{ message: 1 }, 'progress.message'],
      [{ delta: true }, 'progress.delta'],
      [{ data: [1] }, 'progress.data'],
      [{ mood: 'good' }, 'progress.mood'],
    ]) {
      assert.throws(() => reportProgress(work, /** @type {any} */ (p)), (err) => err instanceof FieldError && err.field === field, JSON.stringify(p));
    }
    assert.throws(() => reportProgress({ ...work, agent: '' }, {}), { field: 'agent' });
  });
});

describe('what a handler ends with', () => {
  test('is the report: an outcome, a hand-off, a rejection, a failure of some kind', () => {
    assert.equal(reportOf(work, { outcome: { trigger: 'ok' }, threw: false }).trigger, 'ok');
    assert.equal(reportOf(work, { outcome: { handoff: { to: 'b' } }, threw: false }).handoff.to, 'b');
    assert.equal(reportOf(work, { thrown: new Reject('busy'), threw: true }).reject, 'busy');
    assert.deepEqual(reportOf(work, { thrown: new AgentError('declined', { retryable: false, kind: 'card' }), threw: true }).error,
      { message: 'declined', retryable: false, kind: 'card' });
    assert.deepEqual(reportOf(work, { thrown: new Error('boom'), threw: true }).error, { message: 'boom', retryable: true });
    assert.deepEqual(reportOf(work, { thrown: 'text', threw: true }).error, { message: 'text', retryable: true });
    assert.deepEqual(reportOf(work, { thrown: Object.assign(new Error('x'), { retryable: false }), threw: true }).error,
      { message: 'x', retryable: false });
  });

  test('an outcome that is not one fails the run for good', () => {
    for (const outcome of [undefined, 'done', { trigger: '' }, { handoff: {} }]) {
      const e = reportOf(work, { outcome, threw: false }).error;
      assert.equal(e.retryable, false, JSON.stringify(outcome));
      assert.equal(e.kind, 'invalid_result');
    }
  });
});

test('decodeAnswer reads the engine\'s answers', () => {
  assert.deepEqual(decodeAnswer('{"ok":true}'), { ok: true });
  assert.deepEqual(decodeAnswer('{"ok":false,"code":"stale","message":"over"}'), { ok: false, code: 'stale', message: 'over' });
  assert.throws(() => decodeAnswer('{"code":"stale"}'), { field: 'ok' });
});

describe('verifySignature', () => {
  const body = '{"message_type":"HANDOFF"}';
  // printf '%s' '{"message_type":"HANDOFF"}' | openssl dgst -sha256 -hmac s3cret
  const good = 'sha256=bceaa5fbb2ef2c46ff73bcdafcbe0907c23fee4f528b34b6c25499ca3ce7d13f';

  test('accepts the HMAC-SHA256 of the exact body', () => {
    assert.equal(sign('s3cret', body), good);
    assert.equal(verifySignature('s3cret', body, good), true);
    assert.equal(verifySignature('s3cret', Buffer.from(body), [good]), true);
  });

  test('refuses another secret, another body, and malformed headers', () => {
    assert.equal(verifySignature('other', body, good), false);
    assert.equal(verifySignature('s3cret', `${body} `, good), false);
    for (const h of [undefined, null, '', 'sha256=', good.toUpperCase(), good.replace('sha256=', 'sha1='), `${good}00`, [good, good]]) {
      assert.equal(verifySignature('s3cret', body, h), false, String(h));
    }
  });
});

test('token writes agent ids as natsbus does', () => {
  assert.equal(token('seller'), 'seller');
  assert.equal(token('billing.eu'), 'billing~2Eeu');
  assert.equal(token('a b*>~'), 'a~20b~2A~3E~7E');
});

test('parseAckSubject reads both forms of a delivery\'s reply subject', () => {
  assert.deepEqual(parseAckSubject('$JS.ACK.BATON_WORK_a.normal.2.17.5.1700000000000000000.0'),
    { stream: 'BATON_WORK_a', consumer: 'normal', delivered: 2, streamSeq: 17 });
  assert.deepEqual(parseAckSubject('$JS.ACK.hub.ACCHASH.BATON_WORK_a.high.1.9.3.1700000000000000000.4.xyz'),
    { stream: 'BATON_WORK_a', consumer: 'high', delivered: 1, streamSeq: 9 });
  assert.equal(parseAckSubject('_INBOX.x'), undefined);
});

test('expiry: timestamp plus ttl in seconds or as a Go duration, an hour by default', () => {
  const ts = '2026-11-24T05:00:00Z';
  const t0 = Date.parse(ts);
  assert.equal(expiresAt({ timestamp: ts }), t0 + 3_600_000);
  assert.equal(expiresAt({ timestamp: ts, ttl: 0.25 }), t0 + 250);
  assert.equal(expiresAt({ timestamp: ts, ttl: '1m30s' }), t0 + 90_000);
  assert.equal(expiresAt({}), Infinity);
  assert.equal(parseGoDuration('1h2m3.5s'), 3_723_500);
  assert.equal(parseGoDuration('250ms'), 250);
  assert.equal(parseGoDuration('soon'), undefined);
});

test('a Worker refuses options that cannot work, and start fails without a server', async () => {
  const { Worker } = await import('../src/index.js');
  const seller = () => ({ trigger: 't' });
  assert.throws(() => new Worker(/** @type {any} */ ({ agents: { seller } })), /servers or a connection/);
  assert.throws(() => new Worker({ servers: 'x', agents: {} }), /at least one agent/);
  assert.throws(() => new Worker({ servers: 'x', agents: { seller: /** @type {any} */ ('no') } }), /not a function/);
  assert.throws(() => new Worker({ servers: 'x', agents: { seller }, grace: -1 }), /grace must be a positive number/);
  assert.doesNotThrow(() => new Worker({ servers: 'x', agents: { seller }, takeWait: 0 }));
  const w = new Worker({ servers: 'nats://127.0.0.1:1', agents: { seller }, signals: false, connectOptions: { reconnect: false, timeout: 200 } });
  await assert.rejects(w.start());
  await assert.rejects(w.start(), (err) => !/already started/.test(String(err)));
});
