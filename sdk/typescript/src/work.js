// The work an agent receives: a HANDOFF message, read as the Go codec
// (package wire) reads it, field by field and in the same order, so that
// both refuse the same messages with the same field named.

import { FieldError } from './errors.js';

/** The `from_agent` of the work the engine dispatches itself. */
export const ENGINE = 'engine';

/** @type {Record<string, import('../index.js').Priority>} */
const PRIORITIES = {
  CRITICAL: 'CRITICAL', URGENT: 'CRITICAL', HIGH: 'HIGH', NORMAL: 'NORMAL', MEDIUM: 'NORMAL', LOW: 'LOW',
};

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

/**
 * Reads the work a HANDOFF message carries. `input` is the message's JSON
 * (a string, a Buffer or Uint8Array) or the object JSON.parse made of it.
 * A message that is not such work throws a FieldError naming the first
 * field that is wrong.
 *
 * @param {string | Uint8Array | object} input
 * @returns {import('../index.js').Work}
 */
export function decodeWork(input) {
  const m = parseMessage(input);
  if (m.message_type !== 'HANDOFF') {
    throw new FieldError('message_type', `is ${JSON.stringify(String(m.message_type ?? ''))}, not HANDOFF`);
  }
  const c = objectField(m, '', 'content') ?? {};
  const md = objectField(m, '', 'metadata') ?? {};
  const action = c.action;
  if (action !== 'run' && action !== 'notice') {
    throw new FieldError('content.action', 'must be "run" or "notice"');
  }
  const instanceId = str(md, 'metadata.', 'instance_id', true);
  const step = integer(md, 'metadata.', 'step', true);
  if (step < 1) throw new FieldError('metadata.step', 'must be 1 or more');
  const attempt = integer(md, 'metadata.', 'attempt', false);
  const version = integer(md, 'metadata.', 'version', false);
  const workflow = str(md, 'metadata.', 'workflow', false);
  const state = str(md, 'metadata.', 'state', false);
  const handoffId = str(md, 'metadata.', 'handoff_id', false);
  let idempotencyKey = str(md, 'metadata.', 'idempotency_key', false);
  const traceparent = str(md, 'metadata.', 'traceparent', false);
  const description = str(c, 'content.', 'task_description', false);
  let reason = str(c, 'content.', 'reason', false);
  const explanation = str(c, 'content.', 'explanation', false);
  let kind = '';
  if (handoffId !== '') {
    // An agent-to-agent hand-off: the reason is its kind, the explanation
    // its words. The engine's own dispatches carry no words.
    kind = reason;
    reason = explanation;
  }
  if (idempotencyKey === '') idempotencyKey = `${instanceId}:${step}`;
  const input_ = objectField(c, 'content.', 'input');
  const context = objectField(c, 'content.', 'context');
  const previousResult = objectField(c, 'content.', 'previous_result');
  const constraints = objectField(c, 'content.', 'constraints');
  const payload = objectField(c, 'content.', 'payload');
  let returnControl = false;
  if ('return_control' in c) {
    if (typeof c.return_control !== 'boolean') throw new FieldError('content.return_control', 'must be a boolean');
    returnControl = c.return_control;
  }
  const hasItem = 'item' in c;
  let index;
  if (hasItem) index = integer(c, 'content.', 'index', true);
  let deadline;
  const d = str(md, 'metadata.', 'deadline', false);
  if (d !== '') deadline = parseTime(d, 'metadata.deadline');
  let heartbeat;
  if ('heartbeat' in md) {
    const v = md.heartbeat;
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0 || v * 1e9 >= 2 ** 63) {
      throw new FieldError('metadata.heartbeat', 'must be a number of seconds');
    }
    heartbeat = v;
  }
  /** @type {import('../index.js').Priority} */
  let priority = 'NORMAL';
  if (m.priority !== undefined && m.priority !== null && m.priority !== '') {
    const p = typeof m.priority === 'string' ? PRIORITIES[m.priority.trim().toUpperCase()] : undefined;
    if (p === undefined) throw new FieldError('priority', 'must be CRITICAL, HIGH, NORMAL or LOW');
    priority = p;
  }
  const from = typeof m.from_agent === 'string' && m.from_agent !== ENGINE ? m.from_agent : undefined;
  /** @type {import('../index.js').Work} */
  const work = {
    messageId: typeof m.message_id === 'string' ? m.message_id : '',
    agent: typeof m.to_agent === 'string' ? m.to_agent : '',
    priority,
    action,
    notice: action === 'notice',
    workflow,
    version,
    instanceId,
    step,
    attempt,
    state,
    handoffId,
    idempotencyKey,
    traceparent,
    description,
    reason,
    kind,
    input: input_ ?? {},
    context: context ?? {},
    previousResult: previousResult ?? {},
    constraints: constraints ?? {},
    returnControl,
  };
  if (from !== undefined) work.from = from;
  if (payload !== undefined) work.payload = payload;
  if (hasItem) {
    work.item = c.item;
    work.index = index;
  }
  if (deadline !== undefined) work.deadline = deadline;
  if (heartbeat !== undefined) work.heartbeat = heartbeat;
  return work;
}

/**
 * @param {string | Uint8Array | object} input
 * @returns {Record<string, any>}
 */
function parseMessage(input) {
  let v = input;
  if (typeof v === 'string' || v instanceof Uint8Array) {
    const text = typeof v === 'string' ? v : new TextDecoder('utf-8', { fatal: true }).decode(v);
    try {
      v = JSON.parse(text);
    } catch (err) {
      throw new FieldError('message', `is not JSON: ${/** @type {Error} */ (err).message}`);
    }
  }
  if (!isObject(v)) throw new FieldError('message', 'must be a JSON object');
  return /** @type {Record<string, any>} */ (v);
}

/** @param {unknown} v @returns {v is Record<string, any>} */
export function isObject(v) {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * @param {Record<string, any>} src @param {string} prefix @param {string} key @param {boolean} required
 * @returns {string}
 */
function str(src, prefix, key, required) {
  const v = src[key];
  if (v === undefined || v === null) {
    if (required) throw new FieldError(prefix + key, 'is required');
    return '';
  }
  if (typeof v !== 'string') throw new FieldError(prefix + key, 'must be a string');
  if (required && v === '') throw new FieldError(prefix + key, 'is required');
  return v;
}

/**
 * @param {Record<string, any>} src @param {string} prefix @param {string} key @param {boolean} required
 * @returns {number}
 */
function integer(src, prefix, key, required) {
  const v = src[key];
  if (v === undefined || v === null) {
    if (required) throw new FieldError(prefix + key, 'is required');
    return 0;
  }
  if (typeof v !== 'number' || !Number.isInteger(v) || Math.abs(v) > 2 ** 53) {
    throw new FieldError(prefix + key, 'must be an integer');
  }
  return v;
}

/**
 * @param {Record<string, any>} src @param {string} prefix @param {string} key
 * @returns {Record<string, any> | undefined}
 */
function objectField(src, prefix, key) {
  const v = src[key];
  if (v === undefined || v === null) return undefined;
  if (!isObject(v)) throw new FieldError(prefix + key, 'must be an object');
  return v;
}

/**
 * Reads an RFC 3339 time whose year stays within 0..9999 in UTC.
 * @param {string} s @param {string} field @returns {Date}
 */
export function parseTime(s, field) {
  const m = RFC3339.exec(s);
  const t = m ? new Date(s.toUpperCase()) : undefined;
  if (!m || !t || Number.isNaN(t.getTime()) || Number(m[2]) > 12 || Number(m[3]) > 31 || Number(m[4]) > 23
    || Number(m[5]) > 59 || Number(m[6]) > 60) {
    throw new FieldError(field, 'must be an RFC 3339 time');
  }
  const y = t.getUTCFullYear();
  if (y < 0 || y > 9999) throw new FieldError(field, 'must be an RFC 3339 time');
  return t;
}

/**
 * When a message expires: its timestamp plus its ttl (seconds, or a Go
 * duration string; one hour when absent), as the bus reads them. A message
 * without a readable timestamp never expires here.
 * @param {Record<string, any>} m @returns {number} milliseconds since the epoch
 */
export function expiresAt(m) {
  const ts = typeof m.timestamp === 'string' ? Date.parse(m.timestamp) : NaN;
  if (Number.isNaN(ts)) return Infinity;
  let ttl = 3600_000;
  if (typeof m.ttl === 'number' && m.ttl !== 0) ttl = m.ttl * 1000;
  if (typeof m.ttl === 'string') {
    const d = parseGoDuration(m.ttl);
    if (d !== undefined && d !== 0) ttl = d;
  }
  return ts + ttl;
}

const UNITS = { ns: 1e-6, us: 1e-3, 'µs': 1e-3, 'μs': 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/**
 * A Go duration string ("1h30m", "250ms") in milliseconds, or undefined.
 * @param {string} s @returns {number | undefined}
 */
export function parseGoDuration(s) {
  const re = /(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)/y;
  let rest = s.trim();
  let sign = 1;
  if (rest.startsWith('-') || rest.startsWith('+')) {
    if (rest[0] === '-') sign = -1;
    rest = rest.slice(1);
  }
  if (rest === '0') return 0;
  if (rest === '') return undefined;
  let total = 0;
  re.lastIndex = 0;
  while (re.lastIndex < rest.length) {
    const m = re.exec(rest);
    if (!m) return undefined;
    total += Number(m[1]) * UNITS[/** @type {keyof typeof UNITS} */ (m[2])];
  }
  return sign * total;
}
