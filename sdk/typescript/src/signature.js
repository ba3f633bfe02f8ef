import { createHmac, timingSafeEqual } from 'node:crypto';

const PREFIX = 'sha256=';

/**
 * Checks the `Baton-Signature` header of an HTTP agent's request:
 * `sha256=<lowercase hex HMAC-SHA256 of the exact body bytes>` with the
 * agent's secret. Pass the body exactly as received (before any JSON
 * parsing). Compares in constant time; a missing or malformed header is
 * false.
 *
 * @param {string | Uint8Array} secret
 * @param {string | Uint8Array} body
 * @param {string | string[] | undefined | null} header
 * @returns {boolean}
 */
export function verifySignature(secret, body, header) {
  if (Array.isArray(header)) header = header.length === 1 ? header[0] : undefined;
  if (typeof header !== 'string' || !header.startsWith(PREFIX)) return false;
  const hex = header.slice(PREFIX.length);
  if (!/^[0-9a-f]{64}$/.test(hex)) return false;
  const want = createHmac('sha256', secret).update(body).digest();
  return timingSafeEqual(Buffer.from(hex, 'hex'), want);
}

/**
 * The `Baton-Signature` header value the engine sends for `body`.
 * @param {string | Uint8Array} secret
 * @param {string | Uint8Array} body
 * @returns {string}
 */
export function sign(secret, body) {
  return PREFIX + createHmac('sha256', secret).update(body).digest('hex');
}
