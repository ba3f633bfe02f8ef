// The five agents of Baton's refund example (examples/refund/workflow.yaml)
// in one Node process, with the same logic as the Go agents of
// examples/refund/handlers: the customer agent accepts orders under 500,
// the seller approves amounts up to 200, payment and notification always
// succeed, and the supervisor rejects what is escalated to it.
//
//   node examples/refund-agents.mjs [nats://127.0.0.1:4222]
//
// The NATS URL is the first argument, else $NATS_URL, else the default of
// `wfrun serve`'s embedded server. It prints "ready" once it takes work and
// drains on SIGTERM or Ctrl-C: runs under way finish and report, then it
// exits 0.
import { Worker } from '@batonhq/agent';

const servers = process.argv[2] ?? process.env.NATS_URL ?? 'nats://127.0.0.1:4222';

const worker = new Worker({
  servers,
  agents: {
    // Is the order eligible for a refund?
    customer: async (work) => ({
      trigger: 'validated',
      result: { refund_eligible: work.input.amount < 500, order_id: work.input.order_id },
    }),
    // Approve or reject it.
    seller: async (work) => ({
      trigger: 'reviewed',
      result: { approval: work.context.amount > 200 ? 'REJECTED' : 'APPROVED' },
    }),
    // Pay it back.
    payment: async (work) => ({
      trigger: 'refunded',
      result: { transaction_id: `tx-${work.context.order_id}` },
    }),
    // Tell the customer the refund is done.
    notification: async (work) => {
      console.log(`order ${work.context.order_id}: refunded (${work.context.transaction_id})`);
      return { trigger: 'sent' };
    },
    // Decide what was escalated: here, always a rejection.
    supervisor: async () => ({ trigger: 'reject', result: { reason: 'escalated' } }),
  },
  // A rejected refund ends with a final notice to the notification agent:
  // no run, nothing to report.
  onNotice: (work) => {
    console.log(`order ${work.input.order_id}: rejected (${work.context.rejection_reason})`);
  },
});

await worker.start();
console.log(`ready: the refund agents take work from ${servers}`);
await worker.closed;
