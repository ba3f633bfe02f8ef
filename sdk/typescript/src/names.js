// The NATS names of the agent protocol, as package natsbus defines them.

/** Subjects of work: baton.work.<agent token>.<level>. */
export const WORK_PREFIX = 'baton.work.';
/** Subjects of dead letters: baton.dead.<agent token>.<reason>. */
export const DEAD_PREFIX = 'baton.dead.';
/** Where reports go, by request-reply. */
export const REPORTS_SUBJECT = 'baton.reports';
/** Starts the name of each agent's work stream. */
export const WORK_STREAM_PREFIX = 'BATON_WORK_';
/** The priority levels, highest first: the order work is taken in. Each is a durable pull consumer of the agent's stream. */
export const LEVELS = Object.freeze(['critical', 'high', 'normal', 'low']);

const HEX = '0123456789ABCDEF';

/**
 * The form an agent id takes in subjects and stream names: the id itself
 * when it holds only ASCII letters, digits, '-' and '_'; otherwise every
 * other byte (of its UTF-8) is written '~' and two uppercase hex digits
 * ("billing.eu" is "billing~2Eeu").
 * @param {string} agent
 * @returns {string}
 */
export function token(agent) {
  if (/^[A-Za-z0-9_-]*$/.test(agent)) return agent;
  let out = '';
  for (const b of new TextEncoder().encode(agent)) {
    const c = String.fromCharCode(b);
    out += /[A-Za-z0-9_-]/.test(c) && b < 0x80 ? c : `~${HEX[b >> 4]}${HEX[b & 15]}`;
  }
  return out;
}

/** @param {string} agent @returns {string} the name of agent's work stream */
export function workStream(agent) {
  return WORK_STREAM_PREFIX + token(agent);
}

/** @param {string} agent @param {string} level @returns {string} the subject of agent's work at level */
export function workSubject(agent, level) {
  return `${WORK_PREFIX}${token(agent)}.${level}`;
}

/** @param {string} stream @param {string} consumer @returns {string} the API subject that asks consumer for messages */
export function nextSubject(stream, consumer) {
  return `$JS.API.CONSUMER.MSG.NEXT.${stream}.${consumer}`;
}

/**
 * Reads a JetStream delivery's reply subject:
 * $JS.ACK[.<domain>.<account hash>].<stream>.<consumer>.<delivered>.<stream seq>.<consumer seq>.<time>.<pending>[...]
 * @param {string} reply
 * @returns {{stream: string, consumer: string, delivered: number, streamSeq: number} | undefined}
 */
export function parseAckSubject(reply) {
  const t = reply.split('.');
  if ((t.length !== 9 && t.length < 11) || t[0] !== '$JS' || t[1] !== 'ACK') return undefined;
  const i = t.length === 9 ? 2 : 4;
  const delivered = Number(t[i + 2]);
  const streamSeq = Number(t[i + 3]);
  if (!Number.isInteger(delivered) || !Number.isInteger(streamSeq)) return undefined;
  return { stream: t[i], consumer: t[i + 1], delivered, streamSeq };
}
