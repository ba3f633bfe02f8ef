// The Worker's steps on a fake NATS connection that records what the
// worker sends: the paths a real engine seldom takes (heartbeat reports,
// answers that give the work back, expired and over-delivered work).

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { Worker } from '../src/index.js';
import { waitFor } from './helpers.mjs';

const enc = new TextEncoder();
const dec = new TextDecoder();

/** A work message for agent hb, as the engine writes it. */
function workJSON(change = {}) {
  return {
    message_id: 'm1', message_type: 'HANDOFF', from_agent: 'engine', to_agent: 'hb', priority: 'NORMAL',
    content: { action: 'run', task_description: 'beat', input: {}, context: {}, previous_result: {}, constraints: {}, reason: 'start' },
    metadata: { workflow: 'w', version: 1, instance_id: 'i1', step: 1, attempt: 1, state: 'S', handoff_id: '', idempotency_key: 'i1:1', traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' },
    ttl: 3600, requires_ack: true, timestamp: new Date().toISOString(), ...change,
  };
}

/**
 * A connection holding one delivery of work for agent hb at level normal
 * (delivered `delivered` times) and answering reports with `answer`.
 */
function fakeConnection({ work, delivered = 1, answer = { ok: true }, ackWaitMs = 30_000 }) {
  const sent = []; // [subject, body] in order
  let callback;
  let handedOut = false;
  const reply = `$JS.ACK.BATON_WORK_hb.normal.${delivered}.7.1.0.0`;
  const status = (code) => ({ code, description: '', get: () => '' });
  const nc = {
    sent,
    reply,
    subscribe(subject, opts) {
      callback = opts.callback;
      return { unsubscribe() {} };
    },
    publish(subject, data, opts) {
      const body = data ? dec.decode(data) : '';
      if (subject.startsWith('$JS.API.CONSUMER.MSG.NEXT.')) {
        const level = subject.split('.').pop();
        queueMicrotask(() => {
          if (level === 'normal' && !handedOut) {
            handedOut = true;
            callback(null, { subject: 'baton.work.hb.normal', reply, data: enc.encode(JSON.stringify(work)), headers: undefined });
          }
          callback(null, { subject: opts.reply, reply: '', data: new Uint8Array(), headers: status(404) });
        });
        return;
      }
      sent.push([subject, body]);
    },
    async request(subject, data) {
      const body = dec.decode(data);
      sent.push([subject, body]);
      if (subject === 'baton.reports') {
        if (answer === 'none') throw new Error('timeout');
        return { data: enc.encode(JSON.stringify(answer)) };
      }
      return { data: new Uint8Array() };
    },
    closed() {
      return new Promise(() => {});
    },
    jetstream() {
      return {
        async publish(subject, data, opts) {
          sent.push([subject, dec.decode(data), opts.msgID, opts.headers.get('Baton-Reason')]);
          return { duplicate: false };
        },
      };
    },
    async jetstreamManager() {
      return {
        consumers: { async info() { return { config: { ack_wait: ackWaitMs * 1e6 } }; } },
        streams: { async deleteMessage(stream, seq) { sent.push(['delete', `${stream}:${seq}`]); return true; } },
      };
    },
  };
  return nc;
}

async function runOnce(nc, handler, opts = {}) {
  const w = new Worker({ connection: nc, signals: false, agents: { hb: handler }, ...opts });
  await w.start();
  return w;
}

test('work asking for heartbeats gets heartbeat reports and in-progress acks while the handler runs, then the report and the ack', async () => {
  const nc = fakeConnection({ work: workJSON({ metadata: { ...workJSON().metadata, heartbeat: 0.005 } }) });
  let release;
  const w = await runOnce(nc, () => new Promise((r) => { release = () => r({ trigger: 'done' }); }));
  await waitFor('three heartbeat reports', () => nc.sent.filter(([s, b]) => s === 'baton.reports' && JSON.parse(b).heartbeat).length >= 3);
  release();
  await waitFor('the ack', () => nc.sent.some(([s, b]) => s === nc.reply && b === '+ACK'));
  await w.drain();
  const beats = nc.sent.filter(([s, b]) => s === nc.reply && b === '+WPI').length;
  assert.ok(beats >= 3, `${beats} in-progress acks`);
  assert.deepEqual(JSON.parse(nc.sent.find(([s, b]) => s === 'baton.reports' && JSON.parse(b).heartbeat)[1]),
    { instance_id: 'i1', step: 1, agent: 'hb', heartbeat: true });
  const last = nc.sent.filter(([s]) => s === 'baton.reports').pop();
  assert.deepEqual(JSON.parse(last[1]), { instance_id: 'i1', step: 1, agent: 'hb', trigger: 'done' });
  assert.deepEqual(nc.sent.at(-1), [nc.reply, '+ACK']);
});

for (const [name, answer, settle] of [
  ['a stale answer still acks', { ok: false, code: 'stale', message: 'over' }, '+ACK'],
  ['an invalid answer acks: sending it again cannot help', { ok: false, code: 'invalid', message: 'no' }, '+ACK'],
  // Given back after a pause: 100 ms after the first delivery, doubling.
  ['an unknown instance gives the work back', { ok: false, code: 'unknown_instance', message: '?' }, '-NAK {"delay":100000000}'],
  ['no answer gives the work back', 'none', '-NAK {"delay":100000000}'],
]) {
  test(name, async () => {
    const nc = fakeConnection({ work: workJSON(), answer });
    const w = await runOnce(nc, () => ({ trigger: 'done' }));
    await waitFor('the work settled', () => nc.sent.some(([s]) => s === nc.reply));
    await w.drain();
    assert.deepEqual(nc.sent.filter(([s]) => s === nc.reply), [[nc.reply, settle]]);
  });
}

test('expired work is dead-lettered ttl_expired and never run', async () => {
  const nc = fakeConnection({ work: workJSON({ timestamp: '2020-01-01T00:00:00Z', ttl: 60 }) });
  let calls = 0;
  const w = await runOnce(nc, () => { calls++; return { trigger: 'done' }; });
  await waitFor('the removal', () => nc.sent.some(([s]) => s === 'delete'));
  await w.drain();
  const [subject, body, msgID, reason] = nc.sent.find(([s]) => s.startsWith('baton.dead.'));
  assert.equal(subject, 'baton.dead.hb.ttl_expired');
  assert.equal(msgID, 'dead.BATON_WORK_hb.7');
  assert.equal(reason, 'ttl_expired');
  const dl = JSON.parse(body);
  assert.equal(dl.reason, 'ttl_expired');
  assert.equal(dl.message.metadata.idempotency_key, 'i1:1');
  assert.deepEqual(nc.sent.filter(([s]) => s === nc.reply), [[nc.reply, '+TERM natsbus: ttl_expired']]);
  assert.deepEqual(nc.sent.find(([s]) => s === 'delete'), ['delete', 'BATON_WORK_hb:7']);
  assert.equal(calls, 0);
});

test('work delivered more than maxDeliveries times is dead-lettered max_retries and never run', async () => {
  const nc = fakeConnection({ work: workJSON(), delivered: 4 });
  let calls = 0;
  const w = await runOnce(nc, () => { calls++; return { trigger: 'done' }; }, { maxDeliveries: 3 });
  await waitFor('the removal', () => nc.sent.some(([s]) => s === 'delete'));
  await w.drain();
  const dl = JSON.parse(nc.sent.find(([s]) => s.startsWith('baton.dead.hb.max_retries'))[1]);
  assert.equal(dl.attempts, 3);
  assert.equal(calls, 0);
});

test('without heartbeats asked for, in-progress acks alone (at a third of the ack wait) keep the run', async () => {
  const nc = fakeConnection({ work: workJSON(), ackWaitMs: 10 });
  let release;
  const w = await runOnce(nc, () => new Promise((r) => { release = () => r({ trigger: 'done' }); }));
  await waitFor('three in-progress acks', () => nc.sent.filter(([s, b]) => s === nc.reply && b === '+WPI').length >= 3);
  release();
  await waitFor('the ack', () => nc.sent.some(([s, b]) => s === nc.reply && b === '+ACK'));
  await w.drain();
  assert.equal(nc.sent.filter(([s, b]) => s === 'baton.reports' && JSON.parse(b).heartbeat).length, 0);
});
