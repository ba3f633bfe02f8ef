// The worker: takes an agent's work from NATS JetStream, runs its handler,
// reports to the engine and settles the work, exactly as package natsbus's
// Go Worker does, so that the engine cannot tell one from the other.

import { randomUUID } from 'node:crypto';
import { connect, createInbox, headers as natsHeaders } from 'nats';

import {
  decodeAnswer, reportHeartbeat, reportOf, reportOutcome, reportProgress, CODE_STALE, CODE_UNKNOWN_INSTANCE,
} from './report.js';
import { decodeWork, expiresAt, isObject } from './work.js';
import {
  DEAD_PREFIX, LEVELS, REPORTS_SUBJECT, nextSubject, parseAckSubject, token, workStream,
} from './names.js';

// JetStream's acknowledgement bodies, published to a delivery's reply subject.
const ACK = '+ACK';
const NAK = '-NAK';
const WPI = '+WPI';
const TERM = '+TERM ';

// JetStream's error codes of a message that is not (or no longer) there.
const MSG_NOT_FOUND = 10037;
const SEQ_NOT_FOUND = 10043;

/** Terminations whose reason starts with this follow a dead letter already published. */
const OWN = 'natsbus: ';

const DEFAULTS = Object.freeze({
  concurrency: 16,
  grace: 10_000,
  pollMin: 1,
  pollMax: 50,
  reportTimeout: 10_000,
  timeout: 5_000,
  maxDeliveries: 5,
  takeWait: 0,
});

/** @type {import('../index.js').Logger} */
const NOP = { debug() {}, info() {}, warn() {}, error() {} };

const enc = new TextEncoder();
const dec = new TextDecoder();

/**
 * Runs handlers for agents whose work comes over NATS JetStream.
 */
export class Worker {
  /** @type {Required<Pick<import('../index.js').WorkerOptions, 'concurrency' | 'grace' | 'pollMin' | 'pollMax' | 'reportTimeout' | 'timeout' | 'maxDeliveries' | 'takeWait'>>} */
  #cfg;
  /** @type {Map<string, import('../index.js').Handler>} */
  #handlers;
  /** @type {import('../index.js').WorkerOptions} */
  #opts;
  /** @type {import('../index.js').Logger} */
  #log;
  /** @type {import('nats').NatsConnection | undefined} */
  #nc;
  #ownConnection = false;
  /** @type {import('nats').JetStreamClient | undefined} */
  #js;
  /** @type {import('nats').JetStreamManager | undefined} */
  #jsm;
  #id = randomUUID();
  #state = 'new';
  /** @type {Promise<void>[]} */
  #takers = [];
  /** @type {Map<string, number>} */
  #running = new Map();
  /** @type {Set<Run>} */
  #runs = new Set();
  /** @type {Map<string, Mailbox>} */
  #boxes = new Map();
  /** @type {Set<() => void>} */
  #wakers = new Set();
  /** @type {Map<string, () => void>} */
  #slotWaiters = new Map();
  /** The prefix of the reply subjects of pulls; one subscription serves them all. */
  #pullInbox = '';
  /** @type {import('nats').Subscription | undefined} */
  #pullSub;
  /** @type {Map<string, (msg: import('nats').Msg) => void>} */
  #pulls = new Map();
  #pullSeq = 0;
  /** @type {Promise<void> | undefined} */
  #draining;
  /** @type {(() => void) | undefined} */
  #resolveClosed;
  /** @type {Promise<void>} */
  closed;
  /** @type {(() => void) | undefined} */
  #onSignal;

  /**
   * @param {import('../index.js').WorkerOptions} options
   */
  constructor(options) {
    if (!isObject(options)) throw new TypeError('baton: Worker needs options');
    if (!options.connection && !options.servers) throw new TypeError('baton: Worker needs servers or a connection');
    const agents = options.agents;
    if (!isObject(agents) || Object.keys(agents).length === 0) {
      throw new TypeError('baton: Worker needs at least one agent handler');
    }
    this.#handlers = new Map();
    for (const [id, h] of Object.entries(agents).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
      if (id === '') throw new TypeError('baton: Worker: an agent id is empty');
      if (typeof h !== 'function') throw new TypeError(`baton: Worker: the handler of ${id} is not a function`);
      this.#handlers.set(id, h);
    }
    this.#cfg = { ...DEFAULTS };
    for (const k of /** @type {(keyof typeof DEFAULTS)[]} */ (Object.keys(DEFAULTS))) {
      const v = options[k];
      if (v === undefined) continue;
      if (k === 'takeWait' && v === 0) {
        this.#cfg[k] = 0; // take only what the consumers already know of
        continue;
      }
      if (typeof v !== 'number' || !(v > 0) || !Number.isFinite(v)) {
        throw new TypeError(`baton: Worker: ${k} must be a positive number`);
      }
      this.#cfg[k] = v;
    }
    this.#cfg.pollMax = Math.max(this.#cfg.pollMax, this.#cfg.pollMin);
    this.#opts = options;
    this.#log = options.logger ?? NOP;
    this.closed = new Promise((resolve) => { this.#resolveClosed = resolve; });
  }

  /**
   * Connects (unless a connection was given) and starts taking work. On
   * SIGTERM or SIGINT (unless `signals: false`) the worker drains.
   * @returns {Promise<void>}
   */
  async start() {
    if (this.#state !== 'new') throw new Error('baton: Worker already started');
    this.#state = 'starting';
    try {
      if (this.#opts.connection) {
        this.#nc = this.#opts.connection;
      } else {
        this.#nc = await connect({ ...this.#opts.connectOptions, servers: /** @type {string | string[]} */ (this.#opts.servers) });
        this.#ownConnection = true;
      }
      this.#js = this.#nc.jetstream();
      this.#jsm = await this.#nc.jetstreamManager();
      this.#pullInbox = `${createInbox()}.`;
      this.#pullSub = this.#nc.subscribe(`${this.#pullInbox}*`, { callback: (_, msg) => this.#routePull(msg) });
    } catch (err) {
      // Nothing started: start may be called again.
      if (this.#ownConnection) await this.#nc?.close();
      this.#nc = undefined;
      this.#ownConnection = false;
      this.#state = 'new';
      throw err;
    }
    if (this.#state !== 'starting') {
      // drain was called while the connection was being made.
      this.#pullSub?.unsubscribe();
      if (this.#ownConnection) await this.#nc.close();
      return;
    }
    // A connection closed for good (by its owner, or out of reconnects)
    // ends the worker: nothing more can be taken or settled.
    this.#nc.closed().then(() => {
      if (this.#state === 'running') {
        this.#log.warn('baton: worker: the connection closed; draining', {});
        void this.drain();
      }
    }, () => {});
    if (this.#opts.signals !== false) {
      this.#onSignal = () => { void this.drain(); };
      process.once('SIGTERM', this.#onSignal);
      process.once('SIGINT', this.#onSignal);
    }
    this.#state = 'running';
    for (const agent of this.#handlers.keys()) {
      this.#running.set(agent, 0);
      this.#takers.push(this.#take(agent));
    }
  }

  /**
   * Stops taking work, waits up to the grace period for the handlers
   * running, aborts the signals of those still running (their work is
   * given back for another worker) and closes the connection the worker
   * opened. Safe to call twice; resolves when all is done.
   * @returns {Promise<void>}
   */
  drain() {
    if (this.#draining) return this.#draining;
    this.#draining = this.#drain();
    return this.#draining;
  }

  async #drain() {
    const wasRunning = this.#state === 'running';
    this.#state = 'draining';
    this.#log.info('baton: worker draining', { running: this.#runs.size });
    for (const wake of this.#wakers) wake();
    for (const wake of this.#slotWaiters.values()) wake();
    await Promise.all(this.#takers);
    if (wasRunning && this.#runs.size > 0) {
      /** @type {ReturnType<typeof setTimeout> | undefined} */
      let timer;
      const grace = new Promise((resolve) => { timer = setTimeout(resolve, this.#cfg.grace); });
      await Promise.race([Promise.all([...this.#runs].map((r) => r.done)), grace]);
      clearTimeout(timer);
      for (const r of this.#runs) r.close();
      await Promise.all([...this.#runs].map((r) => r.done));
    }
    if (this.#onSignal) {
      process.removeListener('SIGTERM', this.#onSignal);
      process.removeListener('SIGINT', this.#onSignal);
    }
    this.#pullSub?.unsubscribe();
    if (this.#nc && this.#ownConnection) {
      try {
        await this.#nc.drain();
      } catch {
        await this.#nc.close();
      }
    }
    this.#state = 'closed';
    this.#log.info('baton: worker closed', {});
    this.#resolveClosed?.();
  }

  /** Whether the worker stopped taking work. */
  get #stopping() {
    return this.#state !== 'running';
  }

  /**
   * agent's taker: keeps up to `concurrency` runs going. While all are
   * busy it waits for one to end; while the work stream is empty it looks
   * again after a pause that doubles.
   * @param {string} agent
   */
  async #take(agent) {
    let pause = this.#cfg.pollMin;
    while (!this.#stopping) {
      const free = this.#cfg.concurrency - /** @type {number} */ (this.#running.get(agent));
      if (free <= 0) {
        await new Promise((resolve) => this.#slotWaiters.set(agent, () => resolve(undefined)));
        this.#slotWaiters.delete(agent);
        continue;
      }
      /** @type {Delivery[]} */
      let got = [];
      try {
        got = await this.#takeWork(agent, free);
      } catch (err) {
        this.#log.warn('baton: worker: take work', { agent, error: String(err) });
      }
      if (this.#stopping) {
        // Taken while the drain began: give it back at once.
        for (const d of got) this.#nack(d).catch(() => {});
        return;
      }
      for (const d of got) this.#startRun(agent, d);
      if (got.length > 0) {
        pause = this.#cfg.pollMin;
        continue;
      }
      await this.#sleep(pause);
      pause = Math.min(2 * pause, this.#cfg.pollMax);
    }
  }

  /** @param {number} ms */
  #sleep(ms) {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.#wakers.delete(done);
        resolve(undefined);
      };
      const timer = setTimeout(done, ms);
      this.#wakers.add(done);
    });
  }

  /**
   * Takes up to n messages of agent: the critical consumer first, then
   * high, normal and low, in stream order within a level.
   * @param {string} agent @param {number} n
   * @returns {Promise<Delivery[]>}
   */
  async #takeWork(agent, n) {
    const mb = await this.#mailbox(agent);
    if (!mb) return [];
    /** @type {Delivery[]} */
    const out = [];
    for (let i = 0; i < LEVELS.length; i++) {
      while (out.length < n) {
        const want = n - out.length;
        /** @type {import('nats').Msg[]} */
        let got;
        try {
          got = await this.#pull(mb, i, want);
        } catch (err) {
          // What was taken so far runs; the next take looks again, and
          // looks the consumers up again in case they were made anew.
          this.#log.warn('baton: worker: take work', { agent, error: String(err) });
          this.#boxes.delete(agent);
          return out;
        }
        for (const msg of got) {
          const d = await this.#admit(agent, mb, msg);
          if (d) out.push(d);
        }
        if (got.length < want) break; // this level is empty
      }
    }
    return out;
  }

  /**
   * What the worker knows of agent's work stream, or undefined while the
   * engine has not opened it.
   * @param {string} agent
   * @returns {Promise<Mailbox | undefined>}
   */
  async #mailbox(agent) {
    const have = this.#boxes.get(agent);
    if (have) return have;
    const stream = workStream(agent);
    const jsm = /** @type {import('nats').JetStreamManager} */ (this.#jsm);
    /** @type {import('nats').ConsumerInfo} */
    let info;
    try {
      info = await jsm.consumers.info(stream, LEVELS[0]);
      for (const level of LEVELS.slice(1)) await jsm.consumers.info(stream, level);
    } catch (err) {
      this.#log.debug('baton: worker: no work stream yet', { agent, stream, error: String(err) });
      return undefined;
    }
    const mb = {
      stream,
      next: LEVELS.map((level) => nextSubject(stream, level)),
      ackWait: nanosToMillis(info.config.ack_wait ?? 30e9),
      backoff: (info.config.backoff ?? []).map(nanosToMillis),
    };
    this.#boxes.set(agent, mb);
    return mb;
  }

  /**
   * Asks level i's consumer of mb for up to n messages, "no wait": the
   * server hands out what the consumer knows of and ends the batch with a
   * 404. JetStream tells a consumer of new work a moment after it
   * acknowledges the send, so work sent in the same instant as a take is
   * seen by the next one, milliseconds later (the Go worker polls the same
   * way). With takeWait set, a level that seems empty waits that long for
   * the news before it answers 408: priorities hold for work sent an
   * instant before, at the cost of the wait at every empty level. The messages of a batch arrive with their own
   * subjects and are told apart by their consumer; the status that ends it,
   * by the reply token. A taker pulls from one consumer at a time.
   * @param {Mailbox} mb @param {number} i @param {number} n
   * @returns {Promise<import('nats').Msg[]>}
   */
  #pull(mb, i, n) {
    const nc = /** @type {import('nats').NatsConnection} */ (this.#nc);
    const next = mb.next[i];
    const token = (++this.#pullSeq).toString(36);
    const key = `${mb.stream}.${LEVELS[i]}`;
    return new Promise((resolve, reject) => {
      /** @type {import('nats').Msg[]} */
      const out = [];
      /** @param {Error} [err] */
      const done = (err) => {
        clearTimeout(timer);
        this.#pulls.delete(token);
        this.#pulls.delete(key);
        if (err && out.length === 0) reject(err);
        else resolve(out);
      };
      /** @param {import('nats').Msg} msg */
      const take = (msg) => {
        const h = msg.headers;
        if (h && h.code !== 0 && msg.data.length === 0) {
          if (h.code === 100) return; // an idle heartbeat
          if (h.code === 404 || h.code === 408) done(); // the end of the level
          else done(new Error(`baton: pull from ${next}: status ${h.code} ${h.description}`));
          return;
        }
        out.push(msg);
        if (out.length >= n) done();
      };
      const timer = setTimeout(() => done(new Error(`baton: pull from ${next}: no answer in ${this.#cfg.timeout}ms`)), this.#cfg.timeout);
      this.#pulls.set(token, take);
      this.#pulls.set(key, take);
      try {
        /** @type {{batch: number, no_wait: boolean, expires?: number}} */
        const req = { batch: n, no_wait: true };
        if (this.#cfg.takeWait > 0) req.expires = Math.round(this.#cfg.takeWait * 1e6);
        nc.publish(next, enc.encode(JSON.stringify(req)), { reply: this.#pullInbox + token });
      } catch (err) {
        done(/** @type {Error} */ (err));
      }
    });
  }

  /**
   * Hands a message arriving on the pull inbox to the pull waiting for it.
   * @param {import('nats').Msg} msg
   */
  #routePull(msg) {
    const info = msg.reply ? parseAckSubject(msg.reply) : undefined;
    const key = info ? `${info.stream}.${info.consumer}` : msg.subject.slice(this.#pullInbox.length);
    const take = this.#pulls.get(key);
    if (take) {
      take(msg);
      return;
    }
    // A late delivery to a pull that gave up: give it back now rather
    // than after the ack wait.
    if (info && msg.reply) this.#publish(msg.reply, NAK);
  }

  /**
   * Turns a delivery into work to run, or dead-letters it: work that is
   * not a message, that expired, or that was delivered more than
   * maxDeliveries times (its takers died).
   * @param {string} agent @param {Mailbox} mb @param {import('nats').Msg} msg
   * @returns {Promise<Delivery | undefined>}
   */
  async #admit(agent, mb, msg) {
    const info = parseAckSubject(msg.reply ?? '');
    if (!info) {
      this.#log.error('baton: worker: delivery without metadata', { agent, reply: msg.reply });
      return undefined;
    }
    const base = { reply: /** @type {string} */ (msg.reply), stream: info.stream, seq: info.streamSeq, delivered: info.delivered };
    /** @type {Record<string, any>} */
    let m;
    try {
      m = JSON.parse(dec.decode(msg.data));
      if (!isObject(m)) throw new Error('not a JSON object');
    } catch (err) {
      await this.#deadLetter({
        ...base,
        m: { message_id: '', message_type: 'HANDOFF', from_agent: '', to_agent: agent, priority: 'NORMAL', content: null, timestamp: '' },
        reason: 'rejected', attempts: info.delivered,
        lastErr: `natsbus: work is not a message: ${/** @type {Error} */ (err).message}`, termWhy: 'natsbus: not a message',
      });
      return undefined;
    }
    /** @type {Delivery} */
    const d = { ...base, m, ackWait: ackWaitOf(mb, info.delivered) };
    if (Date.now() >= expiresAt(m)) {
      await this.#deadLetter({ ...d, reason: 'ttl_expired', attempts: info.delivered, lastErr: 'natsbus: ttl expired before delivery', termWhy: 'natsbus: ttl_expired' });
      return undefined;
    }
    if (m.requires_ack && info.delivered > this.#cfg.maxDeliveries) {
      const n = info.delivered - 1;
      await this.#deadLetter({ ...d, reason: 'max_retries', attempts: n, lastErr: `natsbus: not acknowledged after ${n} deliveries (ack wait)`, termWhy: 'natsbus: max_retries' });
      return undefined;
    }
    if (!m.requires_ack) this.#publish(d.reply, ACK);
    return d;
  }

  /** @param {string} agent @param {Delivery} d */
  #startRun(agent, d) {
    const ac = new AbortController();
    /** @type {() => void} */
    let closeNow = () => {};
    /** @type {Run} */
    const run = {
      abort: (why) => ac.abort(new Error(why)),
      signal: ac.signal,
      closing: false,
      closed: new Promise((resolve) => { closeNow = () => resolve(undefined); }),
      close: () => {
        run.closing = true;
        run.abort('the worker is closing: its grace period is over');
        closeNow();
      },
      done: Promise.resolve(),
    };
    this.#running.set(agent, /** @type {number} */ (this.#running.get(agent)) + 1);
    this.#runs.add(run);
    run.done = this.#run(agent, d, run)
      .catch((err) => { this.#log.error('baton: worker: run', { agent, error: String(err) }); })
      .finally(() => {
        this.#runs.delete(run);
        this.#running.set(agent, /** @type {number} */ (this.#running.get(agent)) - 1);
        this.#slotWaiters.get(agent)?.();
      });
  }

  /**
   * Handles one delivery of agent's.
   * @param {string} agent @param {Delivery} d @param {Run} run
   */
  async #run(agent, d, run) {
    /** @type {import('../index.js').Work} */
    let work;
    try {
      work = decodeWork(d.m);
    } catch (err) {
      // Work no handler can read: no retry will fix it.
      await this.#reject(d, `natsbus: worker cannot read the work: ${/** @type {Error} */ (err).message}`);
      return;
    }
    work.deliveryCount = d.delivered;
    if (work.notice) {
      // A final notice asks for no run; the report settles it.
      if (this.#opts.onNotice) {
        try {
          await this.#opts.onNotice(work);
        } catch (err) {
          this.#log.warn('baton: worker: onNotice', { key: work.idempotencyKey, error: String(err) });
        }
      }
      await this.#finish(d, work, reportOutcome(work, 'noticed'), undefined);
      return;
    }
    const handler = /** @type {import('../index.js').Handler} */ (this.#handlers.get(agent));
    const end = await this.#handleBeating(d, work, handler, run);
    if (run.closing) {
      // The drain's grace ran out: the run is abandoned, and its work
      // goes back for another worker.
      await this.#nack(d);
      return;
    }
    const report = reportOf(work, end);
    await this.#finish(d, work, report, report.reject);
  }

  /**
   * Runs the handler, sending an in-progress ack at a third of the ack wait
   * (two may be late before the work is delivered again) or at the work's
   * heartbeat interval, with a heartbeat report, when it asks
   * for one) until it returns or the run is aborted.
   * @param {Delivery} d @param {import('../index.js').Work} work
   * @param {import('../index.js').Handler} handler @param {Run} run
   * @returns {Promise<{outcome?: unknown, thrown?: unknown, threw: boolean}>}
   */
  async #handleBeating(d, work, handler, run) {
    let every = d.ackWait / 3;
    if (work.heartbeat !== undefined && work.heartbeat > 0 && work.heartbeat * 1000 < every) every = work.heartbeat * 1000;
    every = Math.max(every, 1);
    const beat = () => {
      this.#publish(d.reply, WPI);
      if (work.heartbeat !== undefined && work.heartbeat > 0) {
        this.#request(REPORTS_SUBJECT, JSON.stringify(reportHeartbeat(work)), this.#cfg.reportTimeout).catch(() => {});
      }
    };
    const tick = setInterval(beat, every);
    /** @type {ReturnType<typeof setTimeout> | undefined} */
    let deadlineTimer;
    const signal = run.signal;
    if (work.deadline) {
      // The run is over for the engine at its deadline: tell the handler.
      const left = work.deadline.getTime() - Date.now();
      const over = () => run.abort('the run passed its deadline');
      if (left <= 0) over();
      else if (left < 2 ** 31) deadlineTimer = setTimeout(over, left);
    }
    /** @type {import('../index.js').HandlerContext} */
    const ctx = {
      signal, traceparent: work.traceparent, deliveryCount: d.delivered,
      heartbeat: () => this.#publish(d.reply, WPI),
      progress: (p) => this.#progress(work, p),
    };
    /** @type {Promise<{outcome?: unknown, thrown?: unknown, threw: boolean}>} */
    const handled = (async () => {
      try {
        return { outcome: await handler(work, ctx), threw: false };
      } catch (thrown) {
        return { thrown, threw: true };
      }
    })();
    // A handler that ignores its signal is not waited for once the drain's
    // grace is over.
    handled.catch(() => {});
    try {
      return await Promise.race([handled, run.closed.then(() => ({ threw: true, thrown: run.signal.reason }))]);
    } finally {
      clearInterval(tick);
      clearTimeout(deadlineTimer);
    }
  }

  /**
   * Sends a run's progress on the report subject and returns the engine's
   * answer. It is sent once: progress that comes late is worth nothing.
   * @param {import('../index.js').Work} work
   * @param {import('../index.js').Progress | undefined} progress
   * @returns {Promise<import('../index.js').Answer>}
   */
  async #progress(work, progress) {
    const report = reportProgress(work, progress);
    return decodeAnswer(await this.#request(REPORTS_SUBJECT, JSON.stringify(report), this.#cfg.reportTimeout));
  }

  /**
   * Reports, waits for the answer, and settles the delivery: acked once the
   * engine answered ok or stale (or invalid: sending it again cannot help),
   * terminated with the reason for a rejection, given back when no answer
   * came or the instance is unknown (its engine may not have resumed it yet),
   * after a pause that grows with its deliveries.
   * @param {Delivery} d @param {import('../index.js').Work} work
   * @param {import('../index.js').Report} report @param {string | undefined} reject
   */
  async #finish(d, work, report, reject) {
    /** @type {import('../index.js').Answer} */
    let ans;
    try {
      ans = decodeAnswer(await this.#request(REPORTS_SUBJECT, JSON.stringify(report), this.#cfg.reportTimeout));
    } catch (err) {
      this.#log.warn('baton: worker: report', { key: work.idempotencyKey, error: String(err) });
      await this.#nack(d, true);
      return;
    }
    if (!ans.ok && ans.code === CODE_UNKNOWN_INSTANCE) {
      this.#log.warn('baton: worker: report refused', { key: work.idempotencyKey, code: ans.code, message: ans.message });
      await this.#nack(d, true);
      return;
    }
    if (!ans.ok && ans.code !== CODE_STALE) {
      this.#log.warn('baton: worker: report refused', { key: work.idempotencyKey, code: ans.code, message: ans.message });
    }
    if (reject !== undefined) {
      await this.#reject(d, reject);
      return;
    }
    try {
      await this.#request(d.reply, ACK, this.#cfg.timeout);
      this.#log.debug('baton: worker: acked', { key: work.idempotencyKey, answer: ans.code ?? 'ok' });
    } catch (err) {
      this.#log.warn('baton: worker: ack', { key: work.idempotencyKey, error: String(err) });
    }
  }

  /**
   * Gives a delivery back for redelivery: at once, or with later (for work
   * whose report no engine took) after a pause that doubles with its
   * deliveries (100 ms after the first, at most the ack wait), so that its
   * deliveries last through an instance's takeover by another engine. On
   * its last delivery it is dead-lettered max_retries instead.
   * @param {Delivery} d @param {boolean} [later]
   */
  async #nack(d, later = false) {
    if (d.delivered >= this.#cfg.maxDeliveries) {
      await this.#deadLetter({ ...d, reason: 'max_retries', attempts: d.delivered, lastErr: `natsbus: not acknowledged after ${d.delivered} deliveries (nack)`, termWhy: 'natsbus: max_retries' });
      return;
    }
    if (!later) {
      this.#publish(d.reply, NAK);
      return;
    }
    const pauseMs = Math.min(100 * 2 ** Math.max(0, d.delivered - 1), d.ackWait);
    this.#publish(d.reply, `${NAK} ${JSON.stringify({ delay: Math.round(pauseMs * 1e6) })}`);
  }

  /**
   * Dead-letters a delivery "rejected" with the reason and terminates it.
   * When the dead letter cannot be stored, terminating with the bare
   * reason lets the engine dead-letter it from the server's advisory.
   * @param {Delivery | Omit<Delivery, 'ackWait'>} d @param {string} reason
   */
  async #reject(d, reason) {
    await this.#deadLetter({ ...d, reason: 'rejected', attempts: d.delivered, lastErr: reason, termWhy: `natsbus: rejected: ${reason}` });
  }

  /**
   * Publishes a dead letter to the dead-letter stream, then takes its
   * message out of its work stream (terminating the delivery and deleting
   * it by sequence). Its Nats-Msg-Id is the stream and sequence, so that
   * two processes giving up on one message record it once. When the dead
   * letter cannot be stored, the delivery is terminated with the plain
   * reason instead (the rejection's reason, ttl_expired or max_retries), and
   * an engine dead-letters it from JetStream's advisory, as it does for any
   * agent on a plain NATS client.
   * @param {{m: Record<string, any>, reason: string, attempts: number, lastErr: string, reply: string, stream: string, seq: number, termWhy: string}} dl
   * @returns {Promise<boolean>} whether the dead letter was stored
   */
  async #deadLetter(dl) {
    const js = /** @type {import('nats').JetStreamClient} */ (this.#js);
    const body = {
      message: dl.m, reason: dl.reason, at: new Date().toISOString(), attempts: Math.max(dl.attempts, 1),
      last_error: dl.lastErr, stream: dl.stream, seq: dl.seq,
    };
    const agent = typeof dl.m.to_agent === 'string' ? dl.m.to_agent : '';
    const h = natsHeaders();
    h.set('Baton-Origin', this.#id);
    h.set('Baton-Reason', dl.reason);
    try {
      await js.publish(`${DEAD_PREFIX}${token(agent)}.${dl.reason}`, enc.encode(JSON.stringify(body)), {
        headers: h, msgID: `dead.${dl.stream}.${dl.seq}`, timeout: this.#cfg.timeout,
      });
    } catch (err) {
      this.#log.error('baton: worker: dead letter not stored', { agent, reason: dl.reason, error: String(err) });
      // A reason starting "natsbus: " would read as following a dead letter.
      this.#publish(dl.reply, TERM + (dl.reason === 'rejected' ? dl.lastErr.replace(/^natsbus: /, '') : dl.reason));
      return false;
    }
    this.#publish(dl.reply, TERM + dl.termWhy);
    try {
      await /** @type {import('nats').JetStreamManager} */ (this.#jsm).streams.deleteMessage(dl.stream, dl.seq, false);
    } catch (err) {
      const code = /** @type {any} */ (err)?.api_error?.err_code;
      if (code !== MSG_NOT_FOUND && code !== SEQ_NOT_FOUND) {
        this.#log.error('baton: worker: dead letter left in its work stream', { agent, error: String(err) });
      }
    }
    this.#log.info('baton: worker: dead-lettered', { agent, reason: dl.reason, last_error: dl.lastErr });
    return true;
  }

  /** @param {string} subject @param {string} body */
  #publish(subject, body) {
    try {
      /** @type {import('nats').NatsConnection} */ (this.#nc).publish(subject, enc.encode(body));
    } catch (err) {
      this.#log.warn('baton: worker: publish', { subject, error: String(err) });
    }
  }

  /** @param {string} subject @param {string} body @param {number} timeout @returns {Promise<Uint8Array>} */
  async #request(subject, body, timeout) {
    const msg = await /** @type {import('nats').NatsConnection} */ (this.#nc).request(subject, enc.encode(body), { timeout });
    return msg.data;
  }
}

/** @param {number} ns */
function nanosToMillis(ns) {
  return Math.max(Math.round(ns / 1e6), 1);
}

/**
 * The ack wait of the n-th delivery: the consumer's backoff entry for it
 * (the last one repeating) or its ack wait.
 * @param {Mailbox} mb @param {number} delivered
 */
function ackWaitOf(mb, delivered) {
  if (mb.backoff.length === 0) return mb.ackWait;
  const i = Math.min(Math.max(delivered, 1), mb.backoff.length) - 1;
  return mb.backoff[i];
}

/**
 * @typedef {{stream: string, next: string[], ackWait: number, backoff: number[]}} Mailbox
 * @typedef {{m: Record<string, any>, reply: string, stream: string, seq: number, delivered: number, ackWait: number}} Delivery
 * @typedef {{abort: (why: string) => void, signal: AbortSignal, closing: boolean, closed: Promise<unknown>, close: () => void, done: Promise<void>}} Run
 */
