export { AgentError, FieldError, Reject } from './errors.js';
export { ENGINE, decodeWork } from './work.js';
export {
  CODE_INVALID, CODE_STALE, CODE_UNKNOWN_INSTANCE, MAX_REPORT,
  decodeAnswer, reportError, reportHandoff, reportHeartbeat, reportOutcome, reportProgress, reportReject,
  validateReport,
} from './report.js';
export { sign, verifySignature } from './signature.js';
export {
  DEAD_PREFIX, LEVELS, REPORTS_SUBJECT, WORK_PREFIX, WORK_STREAM_PREFIX, token, workStream, workSubject,
} from './names.js';
export { Worker } from './worker.js';
export {
  APIError, Client, ConflictError, DEFAULT_SERVER, EventStream, FINISHED, FinishedError, ForbiddenError,
  IdTakenError, InvalidRequestError, MethodNotAllowedError, NoActiveRunError, NotFoundError, NotWaitingError,
  RefusedError, TooLargeError, TransportError, UnauthorizedError, UnavailableError, UnknownInstanceError,
  UnknownVersionError, UnknownWorkflowError, UnsupportedMediaTypeError, WaitTimeout, apiError,
} from './client.js';
