// A client of the HTTP API of `wfrun serve`: instances, reports, events,
// workflows and dead letters, with the API's errors as typed exceptions.

/** The server a client talks to when neither its option nor BATON_SERVER names one. */
export const DEFAULT_SERVER = 'http://127.0.0.1:8080';

/** The statuses, and the event types, of an instance that has ended. */
export const FINISHED = Object.freeze(['completed', 'failed', 'cancelled']);

/** The server could not be reached, or its answer could not be read. */
export class TransportError extends Error {
  /** @param {string} message @param {unknown} [cause] */
  constructor(message, cause) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = 'TransportError';
  }
}

/** `Client.wait` gave up before the instance finished. */
export class WaitTimeout extends Error {
  /** @param {string} message */
  constructor(message) {
    super(message);
    this.name = 'WaitTimeout';
  }
}

/**
 * An error answer of the API, `{"error": {"code", "message", "field"}}`:
 * `status` is the HTTP status, `code` the API's code, `field` the field,
 * query parameter or header at fault (when named), `retryAfter` the seconds
 * of a Retry-After header. Each status and the common codes have their own
 * subclass.
 */
export class APIError extends Error {
  /**
   * @param {number} status @param {string} code @param {string} message
   * @param {string} [field] @param {number} [retryAfter]
   */
  constructor(status, code, message, field, retryAfter) {
    super(code ? `${code}: ${message}` : message);
    this.name = new.target.name;
    this.status = status;
    this.code = code;
    this.apiMessage = message;
    this.field = field;
    this.retryAfter = retryAfter;
  }
}

/** 400: a malformed body or a wrong field (`invalid_json`, `invalid_field`). */
export class InvalidRequestError extends APIError {}
/** 401 `unauthorized`. */
export class UnauthorizedError extends APIError {}
/** 403: a cross-site request or a Host the server does not answer. */
export class ForbiddenError extends APIError {}
/** 404: no such route, workflow, version or instance. */
export class NotFoundError extends APIError {}
/** 404 `unknown_workflow`. */
export class UnknownWorkflowError extends NotFoundError {}
/** 404 `unknown_version`. */
export class UnknownVersionError extends NotFoundError {}
/** 404 `unknown_instance`. */
export class UnknownInstanceError extends NotFoundError {}
/** 405 `method_not_allowed`. */
export class MethodNotAllowedError extends APIError {}
/** 409: the instance is not in a state that allows the request; nothing changed. */
export class ConflictError extends APIError {}
/** 409 `id_taken`. */
export class IdTakenError extends ConflictError {}
/** 409 `not_waiting`: the instance does not wait for that signal. */
export class NotWaitingError extends ConflictError {}
/** 409 `finished`: the instance has already ended. */
export class FinishedError extends ConflictError {}
/** 409 `refused`: the hand-off checks refused a selection. */
export class RefusedError extends ConflictError {}
/** 409 `no_active_run`: no run is under way to hand over. */
export class NoActiveRunError extends ConflictError {}
/** 413 `too_large`. */
export class TooLargeError extends APIError {}
/** 415 `unsupported_media_type`. */
export class UnsupportedMediaTypeError extends APIError {}
/** 503 `unavailable`: try again (after `retryAfter` seconds when set). */
export class UnavailableError extends APIError {}

/** @type {Record<string, typeof APIError>} */
const BY_CODE = {
  unknown_workflow: UnknownWorkflowError, unknown_version: UnknownVersionError,
  unknown_instance: UnknownInstanceError, id_taken: IdTakenError, not_waiting: NotWaitingError,
  finished: FinishedError, refused: RefusedError, no_active_run: NoActiveRunError,
};

/** @type {Record<number, typeof APIError>} */
const BY_STATUS = {
  400: InvalidRequestError, 401: UnauthorizedError, 403: ForbiddenError, 404: NotFoundError,
  405: MethodNotAllowedError, 409: ConflictError, 413: TooLargeError, 415: UnsupportedMediaTypeError,
  503: UnavailableError,
};

/**
 * The exception of an error answer: by its code, else by its status.
 * @param {number} status @param {string} code @param {string} message
 * @param {string} [field] @param {number} [retryAfter]
 * @returns {APIError}
 */
export function apiError(status, code, message, field, retryAfter) {
  let cls = BY_CODE[code];
  const family = BY_STATUS[status];
  if (!cls || !family || !(cls.prototype instanceof family)) cls = family ?? APIError;
  return new cls(status, code, message, field, retryAfter);
}

const q = encodeURIComponent;

/**
 * A client of Baton's HTTP API. `server` defaults to BATON_SERVER, else
 * http://127.0.0.1:8080; `token` to BATON_TOKEN (sent as a bearer token);
 * `timeout` bounds each request, in milliseconds.
 */
export class Client {
  /** @param {{server?: string, token?: string, timeout?: number}} [options] */
  constructor(options = {}) {
    const server = options.server || process.env.BATON_SERVER || DEFAULT_SERVER;
    let url;
    try {
      url = new URL(server);
    } catch {
      throw new TypeError(`baton: server ${JSON.stringify(server)} is not an http or https URL`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw new TypeError(`baton: server ${JSON.stringify(server)} is not an http or https URL`);
    }
    this.server = server.replace(/\/+$/, '');
    this.token = options.token ?? (process.env.BATON_TOKEN || undefined);
    this.timeout = options.timeout ?? 30_000;
  }

  /**
   * Starts an instance; with `id`, a start sent again returns the instance the first made.
   * @param {string} workflow
   * @param {{input?: Record<string, unknown>, id?: string, version?: number}} [options]
   */
  async start(workflow, options = {}) {
    /** @type {Record<string, unknown>} */
    const body = { input: options.input ?? {} };
    if (options.id !== undefined) body.id = options.id;
    if (options.version !== undefined) body.version = options.version;
    return this._call('POST', `/v1/workflows/${q(workflow)}/instances`, { body });
  }

  /**
   * One page of instances, newest first; pass `next` as `cursor` (null on the last page).
   * @param {{workflow?: string, status?: string, state?: string, limit?: number, cursor?: string}} [filter]
   */
  async list(filter = {}) {
    return this._call('GET', '/v1/instances', { query: filter });
  }

  /**
   * Every instance the filter selects, newest first, page by page.
   * @param {{workflow?: string, status?: string, state?: string, pageSize?: number}} [filter]
   */
  async *instances(filter = {}) {
    const { pageSize, ...rest } = filter;
    /** @type {string | undefined} */
    let cursor;
    for (;;) {
      const page = await this.list({ ...rest, limit: pageSize, cursor });
      yield* page.instances;
      if (!page.next) return;
      cursor = page.next;
    }
  }

  /** The instance; UnknownInstanceError when there is none. @param {string} id */
  async get(id) {
    return this._call('GET', `/v1/instances/${q(id)}`);
  }

  /** The instance's history, in the JSON `wfrun replay` reads. @param {string} id */
  async history(id) {
    return this._call('GET', `/v1/instances/${q(id)}/history`);
  }

  /**
   * Sends a signal to an instance waiting for it; NotWaitingError when it is not.
   * @param {string} id @param {string} name @param {Record<string, unknown>} [data]
   */
  async signal(id, name, data) {
    return this._call('POST', `/v1/instances/${q(id)}/signals/${q(name)}`, { body: data === undefined ? {} : { data } });
  }

  /**
   * Hands the current step to a `selectable` agent.
   * @param {string} id @param {string} agent @param {string} [explanation]
   */
  async select(id, agent, explanation) {
    return this._call('POST', `/v1/instances/${q(id)}/select`, { body: explanation === undefined ? { agent } : { agent, explanation } });
  }

  /**
   * Cancels the instance, for reason (kept as its cancel_reason); FinishedError when it had ended.
   * @param {string} id @param {string} [reason]
   */
  async cancel(id, reason) {
    return this._call('POST', `/v1/instances/${q(id)}/cancel`, reason === undefined ? {} : { body: { reason } });
  }

  /**
   * Sends an agent's report; the engine's answer: {ok: true} or {ok: false, code, message}.
   * @param {import('../index.js').Report} report
   */
  async report(report) {
    return this._call('POST', '/v1/reports', { body: report });
  }

  /**
   * Opens the server's event stream (filtered by workflow and instance). It
   * is open when the promise resolves; a stream that drops is opened again
   * with the last event's id (Last-Event-ID), up to `retries` times in a row.
   * @param {import('../index.js').EventsOptions} [options]
   */
  async events(options = {}) {
    const stream = new EventStream(this, this._path('/v1/events', { workflow: options.workflow, instance: options.instance }), options);
    await stream._connect();
    return stream;
  }

  /**
   * Waits until the instance ends and returns it; WaitTimeout after `timeout` ms.
   * @param {string} id @param {{timeout?: number}} [options]
   */
  async wait(id, options = {}) {
    const deadline = options.timeout === undefined ? undefined : Date.now() + options.timeout;
    for (;;) {
      const stream = await this.events({ instance: id, deadline });
      try {
        // The stream is open before the first look: an end between the two is seen.
        let inst = await this.get(id);
        if (FINISHED.includes(inst.status)) return inst;
        let reconnects = stream.reconnects;
        for await (const ev of stream) {
          if (FINISHED.includes(ev.type) || ev.type === 'gap' || stream.reconnects !== reconnects) {
            reconnects = stream.reconnects;
            inst = await this._settled(id, deadline);
            if (FINISHED.includes(inst.status)) return inst;
          }
        }
        inst = await this.get(id);
        if (FINISHED.includes(inst.status)) return inst;
      } finally {
        stream.close();
      }
    }
  }

  /** @param {string} id @param {number | undefined} deadline */
  async _settled(id, deadline) {
    // The event of an end may overtake the instance's answer by a moment.
    let pause = 5;
    let inst;
    for (let k = 0; k < 12; k++) {
      inst = await this.get(id);
      if (FINISHED.includes(inst.status) || (deadline !== undefined && Date.now() >= deadline)) return inst;
      await new Promise((r) => setTimeout(r, pause));
      pause = Math.min(pause * 2, 500);
    }
    return inst;
  }

  /** The hosted workflows and their versions. */
  async workflows() {
    return (await this._call('GET', '/v1/workflows')).workflows;
  }

  /**
   * A workflow version's state diagram.
   * @param {string} name @param {{format?: 'mermaid' | 'dot', version?: number}} [options]
   */
  async graph(name, options = {}) {
    return this._call('GET', `/v1/workflows/${q(name)}/graph`, { query: { format: options.format, version: options.version } });
  }

  /** Every agent of every hosted workflow: its kind, queue, in-flight work, dead letters and liveness. */
  async agents() {
    return (await this._call('GET', '/v1/agents')).agents;
  }

  /** One page of dead letters, newest first. @param {{limit?: number, cursor?: string}} [page] */
  async deadLetters(page = {}) {
    return this._call('GET', '/v1/dead-letters', { query: page });
  }

  /** @param {string} path @param {Record<string, unknown>} [query] */
  _path(path, query) {
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(query ?? {})) {
      if (v !== undefined && v !== null) params.set(k, String(v));
    }
    const s = params.toString();
    return s ? `${path}?${s}` : path;
  }

  /** @param {Record<string, string>} [extra] */
  _headers(extra) {
    /** @type {Record<string, string>} */
    const h = { Accept: 'application/json', ...extra };
    if (this.token) h.Authorization = `Bearer ${this.token}`;
    return h;
  }

  /**
   * Sends a request; an error answer throws its APIError.
   * @param {string} method @param {string} path
   * @param {{body?: string, headers?: Record<string, string>, signal?: AbortSignal}} [init]
   */
  async _fetch(method, path, init = {}) {
    let res;
    try {
      res = await fetch(this.server + path, { method, body: init.body, headers: this._headers(init.headers), signal: init.signal, redirect: 'manual' });
    } catch (err) {
      if (init.signal?.aborted) throw err;
      throw new TransportError(`baton: ${method} ${this.server}${path}: ${/** @type {Error} */ (err).message}`, err);
    }
    if (res.status >= 400) {
      const text = await res.text().catch(() => '');
      let code = '';
      let message = text.trim() || `HTTP ${res.status}`;
      let field;
      try {
        const e = JSON.parse(text).error;
        code = String(e.code ?? '');
        message = String(e.message ?? '');
        field = e.field || undefined;
      } catch { /* not the API's error shape: the text is the message */ }
      const after = Number(res.headers.get('Retry-After'));
      throw apiError(res.status, code, message, field, Number.isFinite(after) && res.headers.has('Retry-After') ? after : undefined);
    }
    return res;
  }

  /**
   * @param {string} method @param {string} path
   * @param {{query?: Record<string, unknown>, body?: unknown}} [options]
   */
  async _call(method, path, options = {}) {
    const p = this._path(path, options.query);
    const signal = AbortSignal.timeout(this.timeout);
    const init = options.body === undefined
      ? { signal }
      : { signal, body: JSON.stringify(options.body), headers: { 'Content-Type': 'application/json' } };
    let text;
    try {
      const res = await this._fetch(method, p, init);
      text = await res.text();
    } catch (err) {
      if (err instanceof APIError || err instanceof TransportError) throw err;
      throw new TransportError(`baton: ${method} ${this.server}${p}: ${/** @type {Error} */ (err).message}`, err);
    }
    try {
      return JSON.parse(text);
    } catch (err) {
      throw new TransportError(`baton: ${method} ${this.server}${p} answered with a body that is not JSON`, err);
    }
  }
}

/**
 * The server's events as an async iterator, resumed where it dropped.
 * `lastEventId` is the id of the last event received, `reconnects` the
 * number of times the stream was opened again. An `end` event ends it.
 */
export class EventStream {
  /**
   * @param {Client} client @param {string} path
   * @param {import('../index.js').EventsOptions} options
   */
  constructor(client, path, options) {
    this._client = client;
    this._path = path;
    this.lastEventId = options.lastEventId;
    this.reconnects = 0;
    this.deadline = options.deadline;
    this._retries = options.retries ?? 10;
    this._readTimeout = options.readTimeout ?? 60_000;
    this._closed = false;
    /** @type {AbortController | undefined} */
    this._abort = undefined;
    /** @type {ReadableStreamDefaultReader<Uint8Array> | undefined} */
    this._reader = undefined;
    this._buf = '';
    this._decoder = new TextDecoder();
    this._connectedAt = 0;
    this._gotEvent = false;
    this._pause = 50;
  }

  async _connect() {
    this._checkDeadline();
    this._abort = new AbortController();
    /** @type {Record<string, string>} */
    const headers = { Accept: 'text/event-stream' };
    if (this.lastEventId !== undefined) headers['Last-Event-ID'] = this.lastEventId;
    const res = await this._client._fetch('GET', this._path, { headers, signal: this._abort.signal });
    if (!res.body) throw new TransportError('baton: the event stream has no body');
    this._reader = res.body.getReader();
    this._buf = '';
    this._decoder = new TextDecoder();
    this._connectedAt = Date.now();
    this._gotEvent = false;
  }

  async _reconnect() {
    this._drop();
    let pause = 50;
    for (let attempt = 0; ; attempt++) {
      this._checkDeadline();
      try {
        await this._connect();
        this.reconnects++;
        return;
      } catch (err) {
        if (!(err instanceof TransportError || err instanceof UnavailableError) || attempt >= this._retries) throw err;
      }
      await new Promise((r) => setTimeout(r, pause));
      pause = Math.min(pause * 2, 2000);
    }
  }

  _checkDeadline() {
    if (this.deadline !== undefined && Date.now() >= this.deadline) throw new WaitTimeout('baton: gave up waiting');
  }

  _drop() {
    this._abort?.abort();
    this._reader = undefined;
  }

  /** Closes the stream; the iteration ends. */
  close() {
    this._closed = true;
    this._drop();
  }

  [Symbol.asyncIterator]() {
    return this;
  }

  /** @returns {Promise<IteratorResult<import('../index.js').Event>>} */
  async next() {
    while (!this._closed) {
      const ev = await this._read();
      if (ev) {
        this._gotEvent = true;
        this._pause = 50;
        if (ev.type === 'end') break;
        return { value: ev, done: false };
      }
      if (this._closed) break;
      if (!this._gotEvent && Date.now() - this._connectedAt < 1000) {
        // A stream that ends as soon as it opens, again and again, is
        // opened again less and less often.
        this._checkDeadline();
        await new Promise((r) => setTimeout(r, this._pause));
        this._pause = Math.min(this._pause * 2, 2000);
      }
      await this._reconnect();
    }
    this.close();
    return { value: undefined, done: true };
  }

  async return() {
    this.close();
    return { value: undefined, done: /** @type {const} */ (true) };
  }

  /** The next line; undefined when the stream dropped. */
  async _line() {
    for (;;) {
      const nl = this._buf.indexOf('\n');
      if (nl >= 0) {
        const line = this._buf.slice(0, nl).replace(/\r$/, '');
        this._buf = this._buf.slice(nl + 1);
        return line;
      }
      const reader = this._reader;
      if (!reader) return undefined;
      let wait = this._readTimeout;
      if (this.deadline !== undefined) wait = Math.max(1, Math.min(wait, this.deadline - Date.now()));
      const abort = this._abort;
      const timer = setTimeout(() => abort?.abort(), wait);
      try {
        const { value, done } = await reader.read();
        if (done) return undefined;
        this._buf += this._decoder.decode(value, { stream: true });
      } catch {
        this._checkDeadline();
        return undefined;
      } finally {
        clearTimeout(timer);
      }
    }
  }

  /** The next event; undefined when the stream dropped. */
  async _read() {
    let name = '';
    /** @type {string[]} */
    let data = [];
    /** @type {string | undefined} */
    let id;
    for (;;) {
      this._checkDeadline();
      const line = await this._line();
      if (line === undefined) return undefined;
      if (line === '') {
        if (id !== undefined) this.lastEventId = id;
        if (data.length === 0) {
          name = '';
          id = undefined;
          continue;
        }
        return eventOf(name, data.join('\n'));
      }
      if (line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const key = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? '' : line.slice(colon + 1);
      if (value.startsWith(' ')) value = value.slice(1);
      if (key === 'event') name = value;
      else if (key === 'data') data.push(value);
      else if (key === 'id' && !value.includes('\0')) id = value;
    }
  }
}

/** @param {string} name @param {string} data @returns {import('../index.js').Event} */
function eventOf(name, data) {
  let v;
  try {
    v = JSON.parse(data);
  } catch {
    v = undefined;
  }
  const ev = v && typeof v === 'object' && !Array.isArray(v) ? v : { data };
  if (ev.type === undefined) ev.type = name || 'message';
  return ev;
}
