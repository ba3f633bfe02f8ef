// The support workflow's FAQ agent, in TypeScript: it takes its work from
// Baton over NATS with the SDK's Worker, answers the questions it knows and
// hands any other request back to triage.
//
//   npm install && npm run build && NATS_URL=nats://127.0.0.1:4222 npm start
//
// It drains on SIGTERM or Ctrl-C: runs under way finish and report first.
import { AgentError, Worker, type Handler } from '@batonhq/agent';

// What this agent knows: a keyword of the question, and its answer.
const answers: Array<[string, string]> = [
  ['hours', 'We are open 9:00 to 17:00, Monday to Friday.'],
  ['password', 'Use "Forgot password" on the sign-in page; the link in the email works for an hour.'],
  ['refund', 'Refunds reach your account within 5 working days of our approval.'],
  ['delivery', 'Parcels arrive within 3 working days; the tracking link is in your confirmation email.'],
];

const faq: Handler = async (work) => {
  const message = work.input.message;
  if (typeof message !== 'string') {
    // Not retried: the workflow's faq_failed rule ends the instance.
    throw new AgentError('the request has no message', { kind: 'invalid_request', retryable: false });
  }
  const text = message.toLowerCase();
  for (const [keyword, answer] of answers) {
    if (text.includes(keyword)) {
      return { trigger: 'answered', result: { answer } };
    }
  }
  // Not a question this agent knows: the workflow hands it back to triage.
  return { trigger: 'not_mine' };
};

const servers = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
const worker = new Worker({ servers, agents: { faq } });
await worker.start();
console.log(`faq: taking work from ${servers}`);
await worker.closed;
