// Work waiting for an agent is taken highest priority first.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { LEVELS, Worker, workStream } from '../src/index.js';
import { connection, needsEngine, start, wait, waitFor } from './helpers.mjs';

test('queued work is taken critical, high, normal, then low', needsEngine, async (t) => {
  const nc = await connection();
  /** @type {Worker | undefined} */
  let w;
  t.after(async () => {
    await w?.drain();
    await nc.close();
  });
  const jsm = await nc.jetstreamManager();
  const ids = [];
  for (const level of ['low', 'normal', 'high', 'critical']) ids.push(await start(nc, { scenario: 'prio', level }, 'DONE'));
  // The consumers see new work a moment after the stream stores it.
  await waitFor('the four pieces of work queued', async () => {
    let n = 0;
    for (const level of LEVELS) n += (await jsm.consumers.info(workStream('prio'), level)).num_pending;
    return n === 4;
  });
  const order = [];
  // On a connection of the test's own, which the worker leaves open.
  w = new Worker({
    connection: nc,
    signals: false,
    concurrency: 1,
    agents: {
      prio: (work) => {
        order.push(work.priority);
        return { trigger: 'done' };
      },
    },
  });
  await w.start();
  for (const id of ids) assert.equal((await wait(nc, id)).outcome, 'DONE');
  assert.deepEqual(order, ['CRITICAL', 'HIGH', 'NORMAL', 'LOW']);
  await w.drain();
  assert.equal(nc.isClosed(), false);
});
