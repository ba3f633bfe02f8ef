// The responder, in JavaScript on Baton's TypeScript SDK: it takes its
// work over NATS and reports how each run ended. SIGTERM drains it.
import { Worker } from '@batonhq/agent';

const worker = new Worker({
  servers: process.env.NATS_URL ?? 'nats://127.0.0.1:4222',
  agents: {
    responder: async (work) => ({
      trigger: 'answered',
      result: { reply: `Thanks for writing about ${work.context.topic}: we are on it.` },
    }),
  },
});
await worker.start();
console.log('responder: taking work');
await worker.closed;
