// Workers in processes of their own: a drain on SIGTERM finishes the run
// under way and takes nothing more; a worker killed mid-run loses nothing,
// as its work comes back to another after the ack wait.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { Worker } from '../src/index.js';
import { connection, needsEngine, start, url, wait, waitFor } from './helpers.mjs';

const fixture = fileURLToPath(new URL('./fixtures/agent.mjs', import.meta.url));

/** Starts the fixture for agent; lines collects what it prints. */
function child(t, agent) {
  const p = spawn(process.execPath, [fixture, agent], { env: { ...process.env }, stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = [];
  createInterface({ input: p.stdout }).on('line', (l) => lines.push(l));
  const exited = once(p, 'exit');
  t.after(async () => {
    if (p.exitCode === null && p.signalCode === null) {
      p.kill('SIGKILL');
      await exited;
    }
  });
  return { p, lines, exited };
}

describe('a worker process', needsEngine, () => {
  /** @type {import('nats').NatsConnection} */
  let nc;
  before(async () => { nc = await connection(); });
  after(async () => { await nc?.close(); });

  test('drains on SIGTERM: the run under way reports and acks, no new work is taken, the process exits 0', async (t) => {
    const c = child(t, 'drainer');
    await waitFor('the child to be ready', () => c.lines.includes('ready'));
    const first = await start(nc, { scenario: 'drain' }, 'DONE');
    await waitFor('the run to begin', () => c.lines.includes(`run ${first}:2 1`));
    c.p.kill('SIGTERM');
    await waitFor('the drain to begin', () => c.lines.includes('draining'));
    const second = await start(nc, { scenario: 'drain' }, 'DONE');
    c.p.stdin.write('go\n');
    const [code, signal] = await c.exited;
    assert.equal(signal, null);
    assert.equal(code, 0);
    assert.ok(c.lines.includes('closed'), c.lines.join('\n'));
    assert.equal((await wait(nc, first)).outcome, 'DONE');
    assert.ok(!c.lines.some((l) => l.startsWith(`run ${second}:`)), c.lines.join('\n'));

    // The work sent during the drain waited for the next worker.
    const w = new Worker({ servers: url, signals: false, agents: { drainer: () => ({ trigger: 'done' }) } });
    await w.start();
    t.after(() => w.drain());
    assert.equal((await wait(nc, second)).outcome, 'DONE');
  });

  test('killed mid-run: its work is delivered again, with the same idempotency key, to another worker', async (t) => {
    const c = child(t, 'crasher');
    await waitFor('the child to be ready', () => c.lines.includes('ready'));
    const id = await start(nc, { scenario: 'crash' }, 'DONE');
    await waitFor('the run to begin', () => c.lines.includes(`run ${id}:2 1`));
    c.p.kill('SIGKILL');
    await c.exited;
    const keys = [];
    const w = new Worker({
      servers: url,
      signals: false,
      agents: {
        crasher: (work, ctx) => {
          keys.push(work.idempotencyKey);
          return { trigger: 'done', result: { deliveries: ctx.deliveryCount } };
        },
      },
    });
    await w.start();
    t.after(() => w.drain());
    const res = await wait(nc, id);
    assert.equal(res.outcome, 'DONE');
    assert.ok(res.context.deliveries >= 2, `deliveries ${res.context.deliveries}`);
    assert.deepEqual(keys, [`${id}:2`]);
  });
});
