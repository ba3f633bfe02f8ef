// Helpers of the tests that need the engine: the Go test (sdk_test.go)
// runs an engine on an embedded NATS server and gives its URL in
// BATON_NATS_URL, with a control service on sdktest.* to start instances
// and read what became of them.

import { connect, StringCodec } from 'nats';

export const url = process.env.BATON_NATS_URL;

/** Options of a test that needs the engine: skipped without it. */
export const needsEngine = url ? {} : { skip: 'BATON_NATS_URL is not set (go test ./sdk/typescript runs these tests)' };

const sc = StringCodec();

/** A NATS connection for a test; closed by the returned close. */
export async function connection() {
  return connect({ servers: url });
}

/**
 * Asks the control service; throws its error.
 * @param {import('nats').NatsConnection} nc @param {string} what @param {object} req
 */
export async function control(nc, what, req = {}) {
  const msg = await nc.request(`sdktest.${what}`, sc.encode(JSON.stringify(req)), { timeout: 35_000 });
  const ans = JSON.parse(sc.decode(msg.data));
  if (ans.error) throw new Error(`control ${what}: ${ans.error}`);
  return ans;
}

/** Starts an instance of the scenario; the Go test checks it ends in expect. */
export async function start(nc, input, expect) {
  return (await control(nc, 'start', { input, expect })).id;
}

/** Waits for an instance to finish and returns its result. */
export async function wait(nc, id) {
  return control(nc, 'wait', { id });
}

/** Polls cond every 2ms for up to 10s. */
export async function waitFor(what, cond) {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const v = await cond();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

/** A promise and its resolver. */
export function deferred() {
  let resolve;
  const promise = new Promise((r) => { resolve = r; });
  return { promise, resolve };
}

/** A logger that keeps warnings and errors, for the tests to show. */
export function testLogger() {
  const lines = [];
  const keep = (level) => (msg, fields) => lines.push(`${level} ${msg} ${JSON.stringify(fields)}`);
  return { lines, debug() {}, info() {}, warn: keep('warn'), error: keep('error') };
}
