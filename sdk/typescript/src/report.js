// Reports (agent to engine) and answers (engine to agent), built and
// checked as the Go codec (package wire) checks them.

import { AgentError, FieldError, Reject } from './errors.js';
import { isObject } from './work.js';

/** The codes of an answer that refuses a report. */
export const CODE_STALE = 'stale';
export const CODE_INVALID = 'invalid';
export const CODE_UNKNOWN_INSTANCE = 'unknown_instance';

/** The largest report, in bytes, the engine reads. */
export const MAX_REPORT = 1 << 20;

const REPORT_KEYS = new Set(['instance_id', 'step', 'agent', 'trigger', 'result', 'error', 'reject', 'handoff', 'heartbeat', 'usage', 'progress']);
const USAGE_KEYS = new Set(['input_tokens', 'output_tokens', 'cost', 'model']);
const PROGRESS_KEYS = new Set(['message', 'delta', 'data']);
/** The usage members of a handler's outcome, and their names in a report. */
const USAGE_NAMES = Object.freeze({ inputTokens: 'input_tokens', outputTokens: 'output_tokens', cost: 'cost', model: 'model' });
/** The largest token count the engine holds (an int64). */
const MAX_TOKENS = 2 ** 63;
const ERROR_KEYS = new Set(['message', 'retryable', 'kind']);
const HANDOFF_KEYS = new Set(['to', 'reason', 'explanation', 'task', 'payload', 'return_control']);

/**
 * @param {import('../index.js').WorkIdentity} work
 * @returns {{instance_id: string, step: number, agent: string}}
 */
function identity(work) {
  return { instance_id: work.instanceId, step: work.step, agent: work.agent };
}

/**
 * The report's usage member of what a handler says its run used
 * (`{inputTokens, outputTokens, cost, model}`): the members that are set,
 * under their report names; undefined when none is. validateReport checks
 * the values.
 * @param {import('../index.js').Usage | undefined | null} usage
 * @returns {import('../index.js').ReportUsage | undefined}
 */
export function usageOf(usage) {
  if (usage === undefined || usage === null) return undefined;
  if (!isObject(usage)) throw new FieldError('usage', 'must be an object');
  /** @type {Record<string, unknown>} */
  const out = {};
  for (const [k, v] of Object.entries(usage)) {
    const name = /** @type {Record<string, string>} */ (USAGE_NAMES)[k];
    if (name === undefined) throw new FieldError(`usage.${k}`, `is unknown (use ${Object.keys(USAGE_NAMES).join(', ')})`);
    // Zero is what the engine reads for a member left out.
    if (v !== undefined && v !== null && v !== 0 && v !== '') out[name] = v;
  }
  return Object.keys(out).length === 0 ? undefined : /** @type {import('../index.js').ReportUsage} */ (out);
}

/**
 * The report of a run that ended with `trigger` (and its result), with
 * what the run used.
 * @param {import('../index.js').WorkIdentity} work
 * @param {string} trigger
 * @param {Record<string, unknown>} [result]
 * @param {import('../index.js').Usage} [usage]
 * @returns {import('../index.js').Report}
 */
export function reportOutcome(work, trigger, result, usage) {
  /** @type {import('../index.js').Report} */
  const r = { ...identity(work), trigger };
  if (result !== undefined && result !== null) r.result = result;
  return withUsage(r, usage);
}

/**
 * @param {import('../index.js').Report} r
 * @param {import('../index.js').Usage | undefined} usage
 */
function withUsage(r, usage) {
  const u = usageOf(usage);
  if (u !== undefined) r.usage = u;
  return validateReport(r);
}

/**
 * The report of a failed run: retryable unless `retryable: false`; `kind`
 * names the failure for the workflow's rules (`rate_limited`, say).
 * @param {import('../index.js').WorkIdentity} work
 * @param {string} message
 * @param {{retryable?: boolean, kind?: string, usage?: import('../index.js').Usage}} [options]
 * @returns {import('../index.js').Report}
 */
export function reportError(work, message, options = {}) {
  /** @type {import('../index.js').ReportError} */
  const error = { message, retryable: options.retryable !== false };
  if (options.kind !== undefined && options.kind !== '' && options.kind !== 'error') error.kind = options.kind;
  return withUsage({ ...identity(work), error }, options.usage);
}

/**
 * The report of a refused run.
 * @param {import('../index.js').WorkIdentity} work
 * @param {string} reason
 * @param {import('../index.js').Usage} [usage]
 * @returns {import('../index.js').Report}
 */
export function reportReject(work, reason, usage) {
  return withUsage({ ...identity(work), reject: String(reason) }, usage);
}

/**
 * The report of a run that hands the step to another agent (a dynamic
 * hand-off), with the result so far.
 * @param {import('../index.js').WorkIdentity} work
 * @param {import('../index.js').Handoff} handoff
 * @param {Record<string, unknown>} [result]
 * @param {import('../index.js').Usage} [usage]
 * @returns {import('../index.js').Report}
 */
export function reportHandoff(work, handoff, result, usage) {
  if (!isObject(handoff)) throw new FieldError('handoff', 'must be an object');
  /** @type {import('../index.js').ReportHandoff} */
  const h = { to: handoff.to };
  if (handoff.reason) h.reason = handoff.reason;
  if (handoff.explanation) h.explanation = handoff.explanation;
  if (handoff.task) h.task = handoff.task;
  if (handoff.payload !== undefined && handoff.payload !== null) h.payload = handoff.payload;
  if (handoff.returnControl) h.return_control = true;
  /** @type {import('../index.js').Report} */
  const r = { ...identity(work), handoff: h };
  if (result !== undefined && result !== null) r.result = result;
  return withUsage(r, usage);
}

/**
 * A heartbeat report: the run goes on (a long model call, say).
 * @param {import('../index.js').WorkIdentity} work
 * @returns {import('../index.js').Report}
 */
export function reportHeartbeat(work) {
  return validateReport({ ...identity(work), heartbeat: true });
}

/**
 * A progress report: the run goes on, and says how (`message`), the next
 * piece of its streamed answer (`delta`), data of its own (`data`).
 * @param {import('../index.js').WorkIdentity} work
 * @param {import('../index.js').Progress} [progress]
 * @returns {import('../index.js').Report}
 */
export function reportProgress(work, progress = {}) {
  if (!isObject(progress)) throw new FieldError('progress', 'must be an object');
  /** @type {import('../index.js').Progress} */
  const p = {};
  for (const k of /** @type {const} */ (['message', 'delta', 'data'])) {
    const v = progress[k];
    // The engine leaves empty members out; so does this.
    if (v !== undefined && v !== null && v !== '') p[k] = /** @type {any} */ (v);
  }
  for (const k of Object.keys(progress)) {
    if (!PROGRESS_KEYS.has(k)) throw new FieldError(`progress.${k}`, 'is unknown');
  }
  return validateReport({ ...identity(work), progress: p });
}

/**
 * The report of a run that returned `outcome` or threw `thrown`: a Reject
 * rejects, an AgentError (or any error with `retryable`/`kind`) is a failure
 * of its kind, anything else thrown a retryable failure.
 * @param {import('../index.js').WorkIdentity} work
 * @param {{outcome?: unknown, thrown?: unknown, threw: boolean}} end
 * @returns {import('../index.js').Report}
 */
export function reportOf(work, end) {
  if (end.threw) {
    const e = /** @type {any} */ (end.thrown);
    try {
      if (e instanceof Reject) return reportReject(work, e.reason, e.usage);
      if (e instanceof AgentError) return reportError(work, messageOf(e), { retryable: e.retryable, kind: e.kind, usage: e.usage });
    } catch (err) {
      // Usage the engine would refuse: the run failed as an invalid result.
      return reportError(work, `handler threw with invalid usage: ${messageOf(err)}`, { retryable: false, kind: 'invalid_result' });
    }
    if (isObject(e)) {
      return reportError(work, messageOf(e), {
        retryable: e.retryable !== false,
        kind: typeof e.kind === 'string' ? e.kind : undefined,
      });
    }
    return reportError(work, messageOf(e));
  }
  const out = /** @type {any} */ (end.outcome);
  if (!isObject(out)) {
    return reportError(work, 'handler returned no outcome (want {trigger, result} or {handoff, result})', { retryable: false, kind: 'invalid_result' });
  }
  try {
    if (out.handoff !== undefined) return reportHandoff(work, out.handoff, out.result, out.usage);
    return reportOutcome(work, out.trigger, out.result, out.usage);
  } catch (err) {
    return reportError(work, `handler returned an invalid outcome: ${messageOf(err)}`, { retryable: false, kind: 'invalid_result' });
  }
}

/** @param {unknown} e @returns {string} */
function messageOf(e) {
  const m = e instanceof Error ? e.message : isObject(e) && typeof e.message === 'string' ? e.message : String(e);
  return m === '' ? 'error' : m;
}

/**
 * Checks a report as the engine does: its identity, exactly one of
 * trigger, error, reject and handoff (or heartbeat or progress alone), its
 * usage (token counts integers >= 0, a cost a finite number >= 0; only on
 * a report that ends the run), the types of its fields and no unknown
 * field. Returns the report; throws a FieldError naming the field.
 * @template {object} R
 * @param {R} report
 * @returns {R}
 */
export function validateReport(report) {
  /** @type {any} */
  const r = report;
  if (!isObject(r)) throw new FieldError('report', 'must be a JSON object');
  known(r, REPORT_KEYS, '');
  typed(r, 'instance_id', 'string', '');
  typed(r, 'agent', 'string', '');
  typed(r, 'trigger', 'string', '');
  typed(r, 'reject', 'string', '');
  typed(r, 'heartbeat', 'boolean', '');
  if (r.step !== undefined && r.step !== null && (typeof r.step !== 'number' || !Number.isInteger(r.step))) {
    throw new FieldError('step', 'must be an integer');
  }
  for (const k of ['result', 'error', 'handoff', 'usage', 'progress']) {
    if (r[k] !== undefined && r[k] !== null && !isObject(r[k])) throw new FieldError(k, 'must be an object');
  }
  if (isObject(r.error)) {
    known(r.error, ERROR_KEYS, 'error.');
    typed(r.error, 'message', 'string', 'error.');
    typed(r.error, 'retryable', 'boolean', 'error.');
    typed(r.error, 'kind', 'string', 'error.');
  }
  if (isObject(r.handoff)) {
    known(r.handoff, HANDOFF_KEYS, 'handoff.');
    for (const k of ['to', 'reason', 'explanation', 'task']) typed(r.handoff, k, 'string', 'handoff.');
    typed(r.handoff, 'return_control', 'boolean', 'handoff.');
    if (r.handoff.payload !== undefined && r.handoff.payload !== null && !isObject(r.handoff.payload)) {
      throw new FieldError('handoff.payload', 'must be an object');
    }
  }
  if (isObject(r.usage)) {
    known(r.usage, USAGE_KEYS, 'usage.');
    for (const k of ['input_tokens', 'output_tokens']) {
      const v = r.usage[k];
      if (v !== undefined && v !== null && (typeof v !== 'number' || !Number.isInteger(v) || Math.abs(v) >= MAX_TOKENS)) {
        throw new FieldError(`usage.${k}`, 'must be an integer');
      }
    }
    // JSON has no NaN or Infinity: JSON.stringify would send them as null.
    if (r.usage.cost !== undefined && r.usage.cost !== null && (typeof r.usage.cost !== 'number' || !Number.isFinite(r.usage.cost))) {
      throw new FieldError('usage.cost', 'must be a finite number');
    }
    typed(r.usage, 'model', 'string', 'usage.');
  }
  if (isObject(r.progress)) {
    known(r.progress, PROGRESS_KEYS, 'progress.');
    typed(r.progress, 'message', 'string', 'progress.');
    typed(r.progress, 'delta', 'string', 'progress.');
    if (r.progress.data !== undefined && r.progress.data !== null && !isObject(r.progress.data)) {
      throw new FieldError('progress.data', 'must be an object');
    }
  }
  if (!r.instance_id) throw new FieldError('instance_id', 'is required');
  if (!(r.step >= 1)) throw new FieldError('step', 'must be 1 or more');
  if (!r.agent) throw new FieldError('agent', 'is required');
  /** @param {unknown} v @returns {boolean} */
  const set = (v) => v !== undefined && v !== null;
  const n = [!!r.trigger, set(r.error), set(r.reject), set(r.handoff)].filter(Boolean).length;
  const hasResult = set(r.result);
  const u = isObject(r.usage) ? r.usage : {};
  if (u.input_tokens < 0) throw new FieldError('usage.input_tokens', 'must not be negative');
  if (u.output_tokens < 0) throw new FieldError('usage.output_tokens', 'must not be negative');
  if (u.cost < 0) throw new FieldError('usage.cost', 'must not be negative');
  const hasUsage = !!(u.input_tokens || u.output_tokens || u.cost || u.model);
  if (set(r.progress) && (n > 0 || hasResult || r.heartbeat)) {
    throw new FieldError('progress', 'must come without trigger, result, error, reject, handoff or heartbeat: progress does not end the run');
  }
  if ((set(r.progress) || r.heartbeat) && hasUsage) {
    throw new FieldError('usage', 'goes with the report that ends the run, not with progress or a heartbeat');
  }
  if (set(r.progress)) return report;
  if (r.heartbeat && (n > 0 || hasResult)) {
    throw new FieldError('heartbeat', 'must come alone, without trigger, result, error, reject or handoff');
  }
  if (r.heartbeat) return report;
  if (n === 0) throw new FieldError('report', 'needs one of trigger, error, reject, handoff, heartbeat or progress');
  if (n > 1) throw new FieldError('report', 'has more than one of trigger, error, reject and handoff');
  if (set(r.error) && !r.error.message) throw new FieldError('error.message', 'is required');
  if (set(r.handoff) && !r.handoff.to) throw new FieldError('handoff.to', 'is required');
  if (hasResult && !r.trigger && !set(r.handoff)) throw new FieldError('result', 'goes with trigger or handoff');
  return report;
}

/** @param {Record<string, any>} o @param {Set<string>} keys @param {string} prefix */
function known(o, keys, prefix) {
  for (const k of Object.keys(o)) {
    if (!keys.has(k)) throw new FieldError(prefix + k, 'is unknown');
  }
}

/** @param {Record<string, any>} o @param {string} k @param {string} type @param {string} prefix */
function typed(o, k, type, prefix) {
  const v = o[k];
  if (v !== undefined && v !== null && typeof v !== type) {
    throw new FieldError(prefix + k, type === 'boolean' ? 'must be a boolean' : `must be a ${type}`);
  }
}

/**
 * Reads the engine's answer to a report.
 * @param {string | Uint8Array | object} input
 * @returns {import('../index.js').Answer}
 */
export function decodeAnswer(input) {
  /** @type {any} */
  let v = input;
  if (typeof v === 'string' || v instanceof Uint8Array) {
    try {
      v = JSON.parse(typeof v === 'string' ? v : new TextDecoder().decode(v));
    } catch (err) {
      throw new FieldError('answer', `is not JSON: ${/** @type {Error} */ (err).message}`);
    }
  }
  if (!isObject(v)) throw new FieldError('answer', 'must be a JSON object');
  if (typeof v.ok !== 'boolean') throw new FieldError('ok', 'must be a boolean');
  /** @type {import('../index.js').Answer} */
  const a = { ok: v.ok };
  if (typeof v.code === 'string' && v.code !== '') a.code = v.code;
  if (typeof v.message === 'string' && v.message !== '') a.message = v.message;
  return a;
}
