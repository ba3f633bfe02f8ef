// The API client against a real `wfrun serve` (the binary in BATON_WFRUN,
// which `go test ./sdk/typescript -run TestNodeClient` builds): the
// suite starts the server on free loopback ports with a token file and a
// workflow whose agents are HTTP agents served here, then drives it through
// every route, checks the typed errors, and cuts an event stream to see it
// resumed with Last-Event-ID.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { createServer } from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import {
  Client, FINISHED, FinishedError, InvalidRequestError, NoActiveRunError, NotWaitingError,
  TransportError, UnauthorizedError, UnknownInstanceError, UnknownVersionError, UnknownWorkflowError,
  WaitTimeout, decodeWork, reportOutcome, reportProgress,
} from '../src/index.js';

const wfrun = process.env.BATON_WFRUN;
const opts = wfrun ? {} : { skip: 'BATON_WFRUN is not set (go test ./sdk/typescript -run TestNodeClient runs these tests)' };
const TOKEN = 'node-client-token';

/** Agents' runs held until the test lets them go, by instance. */
const held = new Map();
function hold(id) {
  if (!held.has(id)) {
    let enter, release;
    const entered = new Promise((r) => { enter = r; });
    const released = new Promise((r) => { release = r; });
    held.set(id, { entered, enter, released, release });
  }
  return held.get(id);
}

/** The answers to the progress the worker sends in mode usage, by instance. */
const progressAnswers = new Map();

/** The HTTP agents: worker (modes done, wait, hold, usage) and helper. */
function agentServer() {
  return createServer(async (req, res) => {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const work = decodeWork(Buffer.concat(chunks));
    let report;
    if (req.url === '/helper') {
      report = reportOutcome(work, 'done', { by: 'helper' });
    } else if (work.input.mode === 'wait') {
      report = reportOutcome(work, 'wait');
    } else if (work.input.mode === 'usage') {
      // Progress goes through the API while the call is open; the usage
      // goes in the 200 answer.
      progressAnswers.set(work.instanceId, await client.report(reportProgress(work, { message: 'checking', delta: 'The order ' })));
      report = reportOutcome(work, 'done', { by: 'worker' }, { inputTokens: 1200, outputTokens: 350, cost: 0.125, model: 'large-2' });
    } else {
      if (work.input.mode === 'hold') {
        const h = hold(work.instanceId);
        h.enter();
        await h.released;
      }
      report = reportOutcome(work, 'done', { by: 'worker' });
    }
    res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify(report));
  });
}

/** A port that was free a moment ago. */
async function freePort() {
  const srv = net.createServer();
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address();
  await new Promise((r) => srv.close(r));
  return port;
}

/** A TCP proxy to port that cuts its first connection once `cut` says so, and holds new connections while `held`. */
async function proxyTo(port, cut) {
  const p = { connections: 0, cuts: cut ? 1 : 0, held: false, waiting: [], sockets: new Set() };
  let dropped;
  p.dropped = new Promise((r) => { dropped = r; });
  p.release = () => { p.held = false; for (const go of p.waiting.splice(0)) go(); };
  p.server = net.createServer(async (client) => {
    p.connections++;
    const cutThis = p.cuts > 0;
    if (cutThis) p.cuts--;
    p.sockets.add(client);
    client.on('error', () => {});
    if (p.held) await new Promise((r) => p.waiting.push(r));
    const upstream = net.connect(port, '127.0.0.1');
    p.sockets.add(upstream);
    upstream.on('error', () => client.destroy());
    client.on('error', () => upstream.destroy());
    client.pipe(upstream);
    let seen = '';
    upstream.on('data', (d) => {
      client.write(d);
      seen += d.toString('latin1');
      if (cutThis && cut(seen)) {
        client.destroy();
        upstream.destroy();
        dropped();
      }
    });
    upstream.on('end', () => client.end());
    client.on('close', () => upstream.destroy());
  });
  await new Promise((r) => p.server.listen(0, '127.0.0.1', r));
  p.url = `http://127.0.0.1:${p.server.address().port}`;
  p.close = async () => {
    p.release();
    for (const s of p.sockets) s.destroy();
    await new Promise((r) => p.server.close(r));
  };
  return p;
}

const WORKFLOW = (agents) => `
workflow: nodeclient
version: 1
description: the node client suite's workflow
initial: WORKING
agents:
  worker: {url: "${agents}/worker"}
  helper: {url: "${agents}/helper", selectable: true}
states:
  WORKING: {agent: worker, timeout: 60s}
  WAITING: {wait: {signals: [go]}, timeout: 1h}
  DONE: {terminal: true}
rules:
  - {id: to_wait, from: worker, trigger: wait, next: WAITING}
  - {id: done, from: worker, trigger: done, next: DONE, context: {by: result.by}}
  - {id: go, from: WAITING, trigger: go, next: DONE, context: {by: result.by}}
`;

let tmp, agents, server, serverPort, client, serverLog = '';

before(async () => {
  if (!wfrun) return;
  tmp = mkdtempSync(join(tmpdir(), 'baton-node-client-'));
  agents = agentServer();
  await new Promise((r) => agents.listen(0, '127.0.0.1', r));
  mkdirSync(join(tmp, 'workflows'));
  writeFileSync(join(tmp, 'workflows', 'nodeclient.yaml'), WORKFLOW(`http://127.0.0.1:${agents.address().port}`));
  writeFileSync(join(tmp, 'tokens'), `${TOKEN}\n`);
  serverPort = await freePort();
  const natsPort = await freePort();
  server = spawn(wfrun, ['serve', '--workflows', join(tmp, 'workflows'), '--data', join(tmp, 'data'),
    '--http', `127.0.0.1:${serverPort}`, '--nats-listen', `127.0.0.1:${natsPort}`, '--token-file', join(tmp, 'tokens')],
  { stdio: ['ignore', 'pipe', 'pipe'] });
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`wfrun serve did not start:\n${serverLog}`)), 120_000);
    const onData = (d) => {
      serverLog += d;
      if (serverLog.includes('wfrun: serving the HTTP API')) {
        clearTimeout(timer);
        resolve();
      }
    };
    server.stdout.on('data', onData);
    server.stderr.on('data', onData);
    server.on('exit', () => { clearTimeout(timer); reject(new Error(`wfrun serve exited:\n${serverLog}`)); });
  });
  client = new Client({ server: `http://127.0.0.1:${serverPort}`, token: TOKEN });
});

after(async () => {
  if (!wfrun) return;
  for (const h of held.values()) h.release();
  if (server && server.exitCode === null) {
    const exited = new Promise((r) => server.once('exit', r));
    server.kill('SIGTERM');
    await exited;
  }
  await new Promise((r) => agents.close(r));
  agents.closeAllConnections?.();
  rmSync(tmp, { recursive: true, force: true });
});

let n = 0;
const newId = () => `node-${process.pid}-${++n}`;

async function until(what, cond) {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const v = await cond();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** The stream's events until id's end, a minute at most. */
async function collect(stream, id) {
  stream.deadline = Date.now() + 60_000;
  const out = [];
  for await (const ev of stream) {
    out.push(ev);
    if (FINISHED.includes(ev.type) && ev.instance === id) break;
  }
  return out;
}

describe('instances', opts, () => {
  test('a start is safe to retry, and wait returns the end', async () => {
    const id = newId();
    const first = await client.start('nodeclient', { input: { mode: 'done' }, id });
    assert.deepEqual([first.id, first.workflow, first.version], [id, 'nodeclient', 1]);
    assert.equal((await client.start('nodeclient', { input: { mode: 'done' }, id })).id, id);
    const got = await client.wait(id, { timeout: 60_000 });
    assert.deepEqual([got.status, got.outcome, got.context], ['completed', 'DONE', { by: 'worker' }]);
    assert.deepEqual(await client.get(id), got);
    const kinds = (await client.history(id)).map((e) => e.kind);
    assert.deepEqual([kinds[0], kinds.at(-1)], ['started', 'completed']);
  });

  test('an HTTP agent\'s usage and progress: the instance\'s usage, and the events that carry them', async () => {
    const id = newId();
    const stream = await client.events({ instance: id });
    await client.start('nodeclient', { input: { mode: 'usage' }, id });
    const events = await collect(stream, id);
    stream.close();
    assert.deepEqual(progressAnswers.get(id), { ok: true });
    const progress = events.find((e) => e.type === 'agent_progress');
    assert.deepEqual([progress?.agent, progress?.progress], ['worker', { message: 'checking', delta: 'The order ' }], JSON.stringify(events));
    const reported = events.find((e) => e.type === 'agent_reported');
    assert.deepEqual(reported?.usage, { input_tokens: 1200, output_tokens: 350, cost: 0.125, model: 'large-2' });
    const totals = { input_tokens: 1200, output_tokens: 350, tokens: 1550, cost: 0.125 };
    assert.deepEqual((await client.get(id)).usage, { ...totals, agents: { worker: totals } });
    const late = await client.report(reportProgress({ instanceId: id, step: 1, agent: 'worker' }, { message: 'too late' }));
    assert.equal(late.code, 'stale');
  });

  test('list pages newest first', async () => {
    const ids = [];
    for (let k = 0; k < 3; k++) ids.push((await client.start('nodeclient', { input: { mode: 'done' }, id: newId() })).id);
    for (const id of ids) await client.wait(id, { timeout: 60_000 });
    const page = await client.list({ workflow: 'nodeclient', limit: 2 });
    assert.equal(page.instances.length, 2);
    assert.ok(page.next);
    const rest = await client.list({ workflow: 'nodeclient', limit: 1000, cursor: page.next });
    assert.equal(rest.next, null);
    const listed = [...page.instances, ...rest.instances].map((i) => i.id);
    const all = [];
    for await (const i of client.instances({ workflow: 'nodeclient', pageSize: 1 })) all.push(i.id);
    assert.deepEqual(all, listed);
    assert.deepEqual(listed.filter((i) => ids.includes(i)), [...ids].reverse());
  });

  test('signal a waiting instance; a second signal is NotWaitingError', async () => {
    const { id } = await client.start('nodeclient', { input: { mode: 'wait' }, id: newId() });
    await until('waiting', async () => (await client.get(id)).status === 'waiting');
    assert.equal((await client.signal(id, 'go', { by: 'ana' })).id, id);
    const got = await client.wait(id, { timeout: 60_000 });
    assert.deepEqual([got.outcome, got.context], ['DONE', { by: 'ana' }]);
    await assert.rejects(client.signal(id, 'go'), (err) => err instanceof NotWaitingError && err.status === 409 && err.code === 'not_waiting');
  });

  test('cancel, and cancel again is FinishedError', async () => {
    const { id } = await client.start('nodeclient', { input: { mode: 'wait' }, id: newId() });
    await until('waiting', async () => (await client.get(id)).status === 'waiting');
    assert.equal((await client.cancel(id)).status, 'cancelled');
    assert.equal((await client.wait(id, { timeout: 60_000 })).status, 'cancelled');
    await assert.rejects(client.cancel(id), (err) => err instanceof FinishedError && err.code === 'finished');
  });

  test('select hands the step to a selectable agent', async () => {
    const id = newId();
    const h = hold(id);
    await client.start('nodeclient', { input: { mode: 'hold' }, id });
    await h.entered;
    await assert.rejects(client.select(id, 'nobody'), (err) => err instanceof InvalidRequestError && err.field === 'agent');
    assert.equal((await client.select(id, 'helper', 'a person chose')).id, id);
    const got = await client.wait(id, { timeout: 60_000 });
    h.release();
    assert.deepEqual([got.outcome, got.context], ['DONE', { by: 'helper' }]);
    await assert.rejects(client.select(id, 'helper'), NoActiveRunError);
  });

  test('wait gives up after its timeout', async () => {
    const { id } = await client.start('nodeclient', { input: { mode: 'wait' }, id: newId() });
    await assert.rejects(client.wait(id, { timeout: 200 }), WaitTimeout);
    await client.cancel(id);
  });

  test('reports are answered by the engine', async () => {
    const { id } = await client.start('nodeclient', { input: { mode: 'done' }, id: newId() });
    await client.wait(id, { timeout: 60_000 });
    assert.equal((await client.report({ instance_id: id, step: 1, agent: 'worker', trigger: 'done' })).code, 'stale');
    assert.equal((await client.report({ instance_id: `nobody-${id}`, step: 1, agent: 'worker', trigger: 'done' })).code, 'unknown_instance');
    // A report of a run that says nothing is refused by the engine; a body naming no run is no report.
    assert.equal((await client.report({ instance_id: id, step: 1, agent: 'worker' })).code, 'invalid');
    await assert.rejects(client.report(/** @type {any} */ ({ trigger: 'done' })), (err) => err instanceof InvalidRequestError && err.field === 'instance_id');
  });
});

describe('errors', opts, () => {
  test('each error answer is its typed exception', async () => {
    const cases = [
      [() => client.get('no-such-instance'), UnknownInstanceError, 404, 'unknown_instance', undefined],
      [() => client.start('nope'), UnknownWorkflowError, 404, 'unknown_workflow', 'workflow'],
      [() => client.start('nodeclient', { version: 9 }), UnknownVersionError, 404, 'unknown_version', undefined],
      [() => client.list({ status: 'bogus' }), InvalidRequestError, 400, 'invalid_field', 'status'],
      [() => client.graph('nodeclient', { format: /** @type {any} */ ('png') }), InvalidRequestError, 400, 'invalid_field', 'format'],
      [() => new Client({ server: client.server, token: 'wrong' }).get('x'), UnauthorizedError, 401, 'unauthorized', undefined],
    ];
    for (const [call, cls, status, code, field] of cases) {
      await assert.rejects(call(), (err) => {
        assert.ok(err instanceof cls, `${err} is not a ${cls.name}`);
        assert.deepEqual([err.status, err.code], [status, code]);
        if (field !== undefined) assert.equal(err.field, field);
        assert.ok(err.apiMessage);
        return true;
      });
    }
  });

  test('the server and token come from the environment', async () => {
    const saved = { server: process.env.BATON_SERVER, token: process.env.BATON_TOKEN };
    try {
      process.env.BATON_SERVER = client.server;
      process.env.BATON_TOKEN = TOKEN;
      assert.equal((await new Client().workflows())[0].name, 'nodeclient');
      delete process.env.BATON_TOKEN;
      await assert.rejects(new Client().workflows(), UnauthorizedError);
    } finally {
      for (const [k, v] of Object.entries({ BATON_SERVER: saved.server, BATON_TOKEN: saved.token })) {
        if (v === undefined) delete process.env[k]; else process.env[k] = v;
      }
    }
  });

  test('a server that does not answer is a TransportError', async () => {
    const port = await freePort();
    await assert.rejects(new Client({ server: `http://127.0.0.1:${port}`, token: TOKEN }).get('x'), TransportError);
    assert.throws(() => new Client({ server: 'ftp://example.com' }), TypeError);
  });
});

describe('catalog', opts, () => {
  test('workflows, graph and dead letters', async () => {
    const [wf] = await client.workflows();
    assert.deepEqual([wf.name, wf.description], ['nodeclient', "the node client suite's workflow"]);
    assert.deepEqual(wf.versions.map((v) => [v.version, v.current]), [[1, true]]);
    const g = await client.graph('nodeclient');
    assert.deepEqual([g.workflow, g.format], ['nodeclient', 'mermaid']);
    assert.match(g.graph, /WORKING/);
    assert.match((await client.graph('nodeclient', { format: 'dot', version: 1 })).graph, /digraph/);
    const page = await client.deadLetters({ limit: 10 });
    assert.ok(Array.isArray(page.dead_letters));
    assert.ok('next' in page);
    const agents = await client.agents();
    assert.deepEqual(agents.map((a) => [a.id, a.kind, a.workflows]).sort(), [['helper', 'http', ['nodeclient']], ['worker', 'http', ['nodeclient']]]);
  });
});

describe('events', opts, () => {
  test('a dropped stream resumes with Last-Event-ID', async () => {
    // The proxy cuts the first stream after its first event and holds the
    // reconnection until the instance has ended: what the resumed stream
    // brings, only Last-Event-ID can have asked for.
    const proxy = await proxyTo(serverPort, (seen) => seen.includes('\nid: '));
    const id = newId();
    const direct = await client.events({ instance: id });
    const resumed = await new Client({ server: proxy.url, token: TOKEN }).events({ instance: id });
    try {
      proxy.held = true;
      const got = collect(resumed, id);
      const h = hold(id);
      await client.start('nodeclient', { input: { mode: 'hold' }, id });
      await h.entered;
      await proxy.dropped;
      h.release();
      const want = await collect(direct, id);
      proxy.release();
      const resumedEvents = await got;
      assert.equal(resumed.reconnects, 1);
      assert.deepEqual(resumedEvents, want);
      assert.deepEqual([want[0].type, want.at(-1).type], ['instance_started', 'completed']);
      assert.equal(resumed.lastEventId, String(want.at(-1).id));
    } finally {
      direct.close();
      resumed.close();
      await proxy.close();
    }
  });

  test('lastEventId replays what the server keeps', async () => {
    const id = newId();
    const live = await client.events({ instance: id });
    await client.start('nodeclient', { input: { mode: 'done' }, id });
    const first = await collect(live, id);
    live.close();
    const again = await client.events({ instance: id, lastEventId: String(first[0].id) });
    const rest = await collect(again, id);
    again.close();
    assert.deepEqual(rest, first.slice(1));
  });
});

describe('parsing', () => {
  /** A loopback server that answers every GET with body; the Last-Event-ID headers it saw. */
  async function canned(body) {
    const seen = [];
    const srv = createServer((req, res) => {
      seen.push(req.headers['last-event-id']);
      res.writeHead(200, { 'Content-Type': 'text/event-stream', Connection: 'close' }).end(body);
    });
    await new Promise((r) => srv.listen(0, '127.0.0.1', r));
    return { url: `http://127.0.0.1:${srv.address().port}`, seen, close: () => new Promise((r) => { srv.closeAllConnections(); srv.close(r); }) };
  }

  test('fields, comments and the end', async () => {
    const s = await canned(': hello\r\n\r\nid: 7\r\nevent: state_changed\r\ndata: {"id": 7, "type": "state_changed",\r\ndata:  "to": "B"}\r\n\r\n'
      + 'retry: 10\n\nid: 8\nevent: gap\ndata: not json\n\nid: 9\ndata\n\nevent: end\ndata: {}\n\nid: 10\nevent: never\ndata: {}\n\n');
    try {
      const stream = await new Client({ server: s.url }).events({ lastEventId: '6', deadline: Date.now() + 60_000 });
      const got = [];
      for await (const ev of stream) got.push(ev);
      assert.deepEqual(got, [{ id: 7, type: 'state_changed', to: 'B' }, { type: 'gap', data: 'not json' }, { type: 'message', data: '' }]);
      assert.deepEqual([stream.lastEventId, stream.reconnects], ['9', 0]);
      assert.deepEqual(s.seen, ['6']);
    } finally {
      await s.close();
    }
  });

  test('a stream that ends is opened again from the last id', async () => {
    const s = await canned('id: 3\ndata: {"type": "run_started"}\n\n');
    try {
      const stream = await new Client({ server: s.url }).events({ deadline: Date.now() + 60_000 });
      const got = [(await stream.next()).value, (await stream.next()).value];
      stream.close();
      assert.deepEqual(got, [{ type: 'run_started' }, { type: 'run_started' }]);
      assert.deepEqual(s.seen, [undefined, '3']);
    } finally {
      await s.close();
    }
  });
});
