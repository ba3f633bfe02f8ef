/**
 * A field of a work message or a report is wrong. The message reads as the
 * Go codec's: `wire: <field> <reason>`.
 */
export class FieldError extends Error {
  /**
   * @param {string} field the field, as a path ("metadata.step", "error.message")
   * @param {string} reason what is wrong with it ("is required")
   */
  constructor(field, reason) {
    super(`wire: ${field} ${reason}`);
    this.name = 'FieldError';
    this.field = field;
    this.reason = reason;
  }
}

/**
 * Thrown by a handler to refuse the work: the worker reports `reject` with
 * the reason and terminates the message, which the engine dead-letters
 * `rejected`. The state's `rejected` rules decide what happens next.
 * `usage` is what the run used deciding so.
 */
export class Reject extends Error {
  /**
   * @param {string} reason
   * @param {{usage?: import('../index.js').Usage}} [options]
   */
  constructor(reason, options = {}) {
    super(reason);
    this.name = 'Reject';
    this.reason = String(reason);
    this.usage = options.usage;
  }
}

/**
 * Thrown by a handler for a failed run with a kind, and whether a retry may
 * help (retryable unless `retryable: false`). Any other thrown value is a
 * retryable failure of kind `error`. `usage` is what the failed run used:
 * it counts as any run's does.
 */
export class AgentError extends Error {
  /**
   * @param {string} message
   * @param {{retryable?: boolean, kind?: string, cause?: unknown, usage?: import('../index.js').Usage}} [options]
   */
  constructor(message, options = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'AgentError';
    this.retryable = options.retryable !== false;
    this.kind = options.kind ?? 'error';
    this.usage = options.usage;
  }
}
