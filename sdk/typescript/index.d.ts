// Types of @batonhq/agent, the TypeScript SDK of Baton's agent protocol.

import type { ConnectionOptions, NatsConnection } from 'nats';

/** A work priority, highest first: CRITICAL, HIGH, NORMAL, LOW. */
export type Priority = 'CRITICAL' | 'HIGH' | 'NORMAL' | 'LOW';

/** What identifies a run in a report. */
export interface WorkIdentity {
  instanceId: string;
  step: number;
  agent: string;
}

/** One piece of work: a HANDOFF message, decoded. */
export interface Work extends WorkIdentity {
  /** The message id (a new one for every send of the work). */
  messageId: string;
  /** The agent that handed over; undefined for the engine's own dispatches (start, retry, resume). */
  from?: string;
  priority: Priority;
  /** "run" for work to do, "notice" for a final notice (nothing to report). */
  action: 'run' | 'notice';
  notice: boolean;
  workflow: string;
  version: number;
  attempt: number;
  /** The state the instance is in. */
  state: string;
  /** Set for an agent-to-agent hand-off; "" for the engine's own dispatches. */
  handoffId: string;
  /** `<instanceId>:<step>`: the same on every delivery of the work. */
  idempotencyKey: string;
  /** W3C trace context: continue your own trace from it. */
  traceparent: string;
  /** What to do (task_description). */
  description: string;
  /** Why the work was sent: for a hand-off, in words; for the engine's own dispatches start, retry, resume, on_limit or return_control. */
  reason: string;
  /** For an agent-to-agent hand-off, its kind (rule, plan_step, capability_match, ...); "" otherwise. */
  kind: string;
  input: Record<string, any>;
  context: Record<string, any>;
  previousResult: Record<string, any>;
  constraints: Record<string, any>;
  /** Data a dynamic hand-off carries. */
  payload?: Record<string, any>;
  /** True when the result goes back to the delegating agent. */
  returnControl: boolean;
  /** For a run over one item of a list: the item and its index. */
  item?: unknown;
  index?: number;
  /** When the run times out, if it has a timeout. */
  deadline?: Date;
  /** How often, in seconds, the state asks for heartbeats. */
  heartbeat?: number;
  /** How many times this work was delivered (1 the first time); set by the Worker. */
  deliveryCount?: number;
}

export interface ReportError {
  message: string;
  retryable: boolean;
  kind?: string;
}

export interface ReportHandoff {
  to: string;
  reason?: string;
  explanation?: string;
  task?: string;
  payload?: Record<string, unknown>;
  return_control?: boolean;
}

/**
 * What a run used, as a handler says it: every member optional. Token
 * counts are integers >= 0; cost a finite number >= 0, in the unit the
 * workflow's budgets use; model the model that answered.
 */
export interface Usage {
  inputTokens?: number;
  outputTokens?: number;
  cost?: number;
  model?: string;
}

/** What a run used, as a report (and an agent_reported event) carries it: the members that are set. */
export interface ReportUsage {
  input_tokens?: number;
  output_tokens?: number;
  cost?: number;
  model?: string;
}

/**
 * What a run says while it works: a message for the person watching, the
 * next piece of a streamed answer (watchers append the deltas), data of its
 * own. Every member optional.
 */
export interface Progress {
  message?: string;
  delta?: string;
  data?: Record<string, unknown>;
}

/**
 * A report, as JSON: the run's identity and exactly one of trigger (with
 * result), error, reject, handoff, heartbeat or progress; a report that
 * ends the run may carry its usage.
 */
export interface Report {
  instance_id: string;
  step: number;
  agent: string;
  trigger?: string;
  result?: Record<string, unknown>;
  error?: ReportError;
  reject?: string;
  handoff?: ReportHandoff;
  heartbeat?: boolean;
  usage?: ReportUsage;
  progress?: Progress;
}

/** The engine's answer to a report. */
export interface Answer {
  ok: boolean;
  code?: 'stale' | 'invalid' | 'unknown_instance' | string;
  message?: string;
}

/** A dynamic hand-off a handler asks for. */
export interface Handoff {
  to: string;
  reason?: string;
  explanation?: string;
  task?: string;
  payload?: Record<string, unknown>;
  returnControl?: boolean;
}

/** What a handler returns: a trigger with its result, or a hand-off; with what the run used. */
export type Outcome =
  | { trigger: string; result?: Record<string, unknown>; usage?: Usage }
  | { handoff: Handoff; result?: Record<string, unknown>; usage?: Usage };

export interface HandlerContext {
  /** Aborted when the run's deadline passes, or when a drain's grace period is over. */
  signal: AbortSignal;
  /** The work's W3C trace context. */
  traceparent: string;
  /** How many times this work was delivered (1 the first time). */
  deliveryCount: number;
  /** Sends an in-progress ack now (the worker also sends them on its own, at a third of the ack wait). */
  heartbeat(): void;
  /**
   * Tells the engine how the run is going, without ending it: a progress
   * report on the report subject. Resolves to the engine's answer (ok, or
   * code stale once the run is over); counts as a heartbeat. Rejects with a
   * FieldError for progress the engine would refuse (nothing is sent), and
   * when no answer comes within reportTimeout.
   */
  progress(progress: Progress): Promise<Answer>;
}

/**
 * Does one piece of work. Return the outcome; throw a Reject to refuse the
 * work, an AgentError for a failure of some kind, anything else for a
 * retryable failure.
 */
export type Handler = (work: Work, ctx: HandlerContext) => Outcome | Promise<Outcome>;

export interface Logger {
  debug(msg: string, fields: Record<string, unknown>): void;
  info(msg: string, fields: Record<string, unknown>): void;
  warn(msg: string, fields: Record<string, unknown>): void;
  error(msg: string, fields: Record<string, unknown>): void;
}

export interface WorkerOptions {
  /** NATS server URLs; or pass `connection`. */
  servers?: string | string[];
  /** A connection of yours to use; the worker does not close it. */
  connection?: NatsConnection;
  /** More options for the connection the worker opens (auth, name, ...). */
  connectOptions?: Omit<ConnectionOptions, 'servers'>;
  /** Handlers by agent id. */
  agents: Record<string, Handler>;
  /** Runs of each agent's handler at once (default 16). */
  concurrency?: number;
  /** How long a drain waits for running handlers before aborting them, in ms (default 10000). */
  grace?: number;
  /** The pause between looks at an empty work stream starts at pollMin and doubles up to pollMax, in ms (defaults 1 and 50). */
  pollMin?: number;
  pollMax?: number;
  /** How long to wait for the engine's answer to a report, in ms (default 10000). */
  reportTimeout?: number;
  /** How long to wait for the NATS server on other calls, in ms (default 5000). */
  timeout?: number;
  /** How long, in ms, a look at a priority level that seems empty waits for news of work sent an instant before (default 0: take what the consumers know of, as the Go worker does). */
  takeWait?: number;
  /** Deliveries of a message before it is dead-lettered max_retries: set it to the engine's (default 5). */
  maxDeliveries?: number;
  /** Drain on SIGTERM and SIGINT (default true). */
  signals?: boolean;
  /** Called with each final notice before it is taken. */
  onNotice?: (work: Work) => void | Promise<void>;
  /** Receives what the worker cannot return as an error (default: nothing is logged). */
  logger?: Logger;
}

export declare class Worker {
  constructor(options: WorkerOptions);
  /** Connects and starts taking work. */
  start(): Promise<void>;
  /** Stops taking work, waits for running handlers (up to the grace period), then closes. Safe to call twice. */
  drain(): Promise<void>;
  /** Resolves once the worker has drained and closed. */
  readonly closed: Promise<void>;
}

/** A field of a work message or report is wrong. */
export declare class FieldError extends Error {
  constructor(field: string, reason: string);
  readonly field: string;
  readonly reason: string;
}

/** Thrown by a handler to refuse the work, with what the run used. */
export declare class Reject extends Error {
  constructor(reason: string, options?: { usage?: Usage });
  readonly reason: string;
  readonly usage?: Usage;
}

/** Thrown by a handler for a failed run of some kind; retryable unless `retryable: false`; with what the run used. */
export declare class AgentError extends Error {
  constructor(message: string, options?: { retryable?: boolean; kind?: string; cause?: unknown; usage?: Usage });
  readonly retryable: boolean;
  readonly kind: string;
  readonly usage?: Usage;
}

/** The from_agent of the engine's own dispatches. */
export declare const ENGINE: 'engine';
export declare const CODE_STALE: 'stale';
export declare const CODE_INVALID: 'invalid';
export declare const CODE_UNKNOWN_INSTANCE: 'unknown_instance';
export declare const MAX_REPORT: number;
export declare const WORK_PREFIX: string;
export declare const DEAD_PREFIX: string;
export declare const REPORTS_SUBJECT: string;
export declare const WORK_STREAM_PREFIX: string;
export declare const LEVELS: readonly ['critical', 'high', 'normal', 'low'];

/** Reads the work a HANDOFF message carries (its JSON, or the parsed object); throws a FieldError naming the field. */
export declare function decodeWork(message: string | Uint8Array | object): Work;
export declare function reportOutcome(work: WorkIdentity, trigger: string, result?: Record<string, unknown>, usage?: Usage): Report;
export declare function reportError(work: WorkIdentity, message: string, options?: { retryable?: boolean; kind?: string; usage?: Usage }): Report;
export declare function reportReject(work: WorkIdentity, reason: string, usage?: Usage): Report;
export declare function reportHandoff(work: WorkIdentity, handoff: Handoff, result?: Record<string, unknown>, usage?: Usage): Report;
export declare function reportHeartbeat(work: WorkIdentity): Report;
/** A progress report: the run goes on, and says how. */
export declare function reportProgress(work: WorkIdentity, progress?: Progress): Report;
/** Checks a report as the engine does; returns it or throws a FieldError. */
export declare function validateReport<R extends object>(report: R): R;
export declare function decodeAnswer(answer: string | Uint8Array | object): Answer;
/** Checks a `Baton-Signature` header against the exact body bytes, in constant time. */
export declare function verifySignature(secret: string | Uint8Array, body: string | Uint8Array, header: string | string[] | undefined | null): boolean;
/** The `Baton-Signature` value for a body. */
export declare function sign(secret: string | Uint8Array, body: string | Uint8Array): string;
/** An agent id as a subject token. */
export declare function token(agent: string): string;
export declare function workStream(agent: string): string;
export declare function workSubject(agent: string, level: string): string;

// The API client (src/client.js).

/** What a start, a signal, a selection or a cancel answers. */
export interface Summary {
  id: string;
  workflow: string;
  version: number;
  status: string;
}

/** Usage totals: tokens is input_tokens + output_tokens. */
export interface Totals {
  input_tokens: number;
  output_tokens: number;
  tokens: number;
  cost: number;
}

/** What an instance's runs used (its child workflows' included), and each agent's; all zero when no run said. */
export interface InstanceUsage extends Totals {
  agents: Record<string, Totals>;
}

/** An instance: status is running, waiting, completed, failed or cancelled. */
export interface Instance extends Summary {
  state: string;
  step: number;
  /** The terminal state of a completed instance. */
  outcome: string;
  /** Why a failed instance failed; null for any other. */
  error: string | null;
  /** The reason given with the cancel of a cancelled instance. */
  cancel_reason?: string;
  /** What its runs used. */
  usage: InstanceUsage;
  context: Record<string, any>;
  created: string;
  updated: string;
  [member: string]: unknown;
}

/** A page of instances; `next` is null on the last page. */
export interface InstancePage {
  instances: Instance[];
  next: string | null;
}

/** One engine event of GET /v1/events. */
export interface Event {
  id?: number;
  type: string;
  instance?: string;
  workflow?: string;
  version?: number;
  step?: number;
  state?: string;
  agent?: string;
  time?: string;
  /** What the run used (agent_reported), when its agent said. */
  usage?: ReportUsage;
  /** What a run under way said (agent_progress). */
  progress?: Progress;
  /** The limit or budget hit (limit_hit), with the count and the maximum. */
  limit?: string;
  count?: number;
  max?: number;
  [member: string]: unknown;
}

export interface EventsOptions {
  workflow?: string;
  instance?: string;
  /** Start after this event id (the server sends the kept events after it first). */
  lastEventId?: string;
  /** Times in a row a dropped stream is opened again (default 10). */
  retries?: number;
  /** A stream idle this long, in ms, counts as dropped (default 60000; the server sends a comment every 15 s). */
  readTimeout?: number;
  /** A Date.now() value after which the iteration throws WaitTimeout. */
  deadline?: number;
}

export interface VersionInfo {
  version: number;
  hash: string;
  file: string;
  current: boolean;
}

export interface WorkflowInfo {
  name: string;
  description: string;
  versions: VersionInfo[];
}

export interface Graph {
  workflow: string;
  version: number;
  hash: string;
  format: 'mermaid' | 'dot';
  graph: string;
}

export interface DeadLetterPage {
  dead_letters: Array<Record<string, any>>;
  next: string | null;
}

export declare const DEFAULT_SERVER: string;
export declare const FINISHED: readonly string[];

/** The server could not be reached, or its answer could not be read. */
export declare class TransportError extends Error {
  constructor(message: string, cause?: unknown);
}

/** Client.wait gave up before the instance finished. */
export declare class WaitTimeout extends Error {
  constructor(message: string);
}

/** An error answer of the API: its status, code, message (`apiMessage`), field and Retry-After seconds. */
export declare class APIError extends Error {
  constructor(status: number, code: string, message: string, field?: string, retryAfter?: number);
  readonly status: number;
  readonly code: string;
  readonly apiMessage: string;
  readonly field?: string;
  readonly retryAfter?: number;
}
export declare class InvalidRequestError extends APIError {}
export declare class UnauthorizedError extends APIError {}
export declare class ForbiddenError extends APIError {}
export declare class NotFoundError extends APIError {}
export declare class UnknownWorkflowError extends NotFoundError {}
export declare class UnknownVersionError extends NotFoundError {}
export declare class UnknownInstanceError extends NotFoundError {}
export declare class MethodNotAllowedError extends APIError {}
export declare class ConflictError extends APIError {}
export declare class IdTakenError extends ConflictError {}
export declare class NotWaitingError extends ConflictError {}
export declare class FinishedError extends ConflictError {}
export declare class RefusedError extends ConflictError {}
export declare class NoActiveRunError extends ConflictError {}
export declare class TooLargeError extends APIError {}
export declare class UnsupportedMediaTypeError extends APIError {}
export declare class UnavailableError extends APIError {}
/** The exception of an error answer: by its code, else by its status. */
export declare function apiError(status: number, code: string, message: string, field?: string, retryAfter?: number): APIError;

/** The server's events, resumed with Last-Event-ID where the stream dropped. */
export declare class EventStream implements AsyncIterableIterator<Event> {
  /** The id of the last event received. */
  lastEventId?: string;
  /** How many times the stream was opened again. */
  readonly reconnects: number;
  deadline?: number;
  next(): Promise<IteratorResult<Event>>;
  return(): Promise<IteratorResult<Event>>;
  [Symbol.asyncIterator](): AsyncIterableIterator<Event>;
  /** Closes the stream; the iteration ends. */
  close(): void;
}

/** A client of Baton's HTTP API (server from BATON_SERVER, token from BATON_TOKEN by default). */
export declare class Client {
  constructor(options?: { server?: string; token?: string; timeout?: number });
  readonly server: string;
  start(workflow: string, options?: { input?: Record<string, unknown>; id?: string; version?: number }): Promise<Summary>;
  list(filter?: { workflow?: string; status?: string; state?: string; limit?: number; cursor?: string }): Promise<InstancePage>;
  instances(filter?: { workflow?: string; status?: string; state?: string; pageSize?: number }): AsyncGenerator<Instance, void, undefined>;
  get(id: string): Promise<Instance>;
  history(id: string): Promise<Array<Record<string, any>>>;
  signal(id: string, name: string, data?: Record<string, unknown>): Promise<Summary>;
  select(id: string, agent: string, explanation?: string): Promise<Summary>;
  cancel(id: string, reason?: string): Promise<Summary>;
  report(report: Report): Promise<Answer>;
  events(options?: EventsOptions): Promise<EventStream>;
  wait(id: string, options?: { timeout?: number }): Promise<Instance>;
  workflows(): Promise<WorkflowInfo[]>;
  graph(name: string, options?: { format?: 'mermaid' | 'dot'; version?: number }): Promise<Graph>;
  deadLetters(page?: { limit?: number; cursor?: string }): Promise<DeadLetterPage>;
  /** Every agent of every hosted workflow (`GET /v1/agents`). */
  agents(): Promise<AgentInfo[]>;
}

/** An agent as `GET /v1/agents` describes it. */
export interface AgentInfo {
  id: string;
  /** go, nats, http, a2a, mcp or llm. */
  kind: string;
  workflows: string[];
  queued: number;
  in_flight: number;
  oldest_queued_seconds: number | null;
  dead_letters: number;
  /** NATS agents: the last pull or report, and whether it was recent. */
  seen?: string | null;
  live?: boolean;
  /** HTTP, A2A, MCP and LLM agents: the last run sent, and how it ended. */
  last_call?: string | null;
  last_status?: string;
}
