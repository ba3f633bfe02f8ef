// The research example's MCP tool server, on the official MCP SDK, over
// stdio: the engine starts it once (mcp: {command: [node, tools.mjs]}) and
// calls its one tool, lookup, for each question.
//
// lookup {topic} answers {facts: [...]}, the facts of a small table whose
// keyword the topic contains (none: an empty list).
//
// For the example's crash test: when RESEARCH_TOOLS_GATE names a file, a
// topic containing "hold facts" is held until that file exists, and each
// held call is first noted, one line, in that file's name + ".calls".
import fs from 'node:fs';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const table = {
  sky: ['Air scatters light in inverse proportion to the fourth power of its wavelength.', 'Blue light is scattered about five times more than red.'],
  glacier: ['Most valley glaciers move between 10 and 100 metres a year.', 'A surging glacier can move 100 times faster for a few months.'],
  'black hole': ['Nothing, not even light, leaves the event horizon.', 'The first image of a black hole was published in 2019.'],
};

const tools = [
  {
    name: 'lookup',
    description: 'Looks up facts about a topic.',
    inputSchema: {
      type: 'object',
      properties: { topic: { type: 'string', minLength: 1 } },
      required: ['topic'],
      additionalProperties: false,
    },
    outputSchema: {
      type: 'object',
      properties: { facts: { type: 'array', items: { type: 'string' } } },
      required: ['facts'],
    },
  },
];

const gate = process.env.RESEARCH_TOOLS_GATE;

// held waits until the gate file exists (checked every 10 ms).
async function held(topic) {
  fs.appendFileSync(`${gate}.calls`, `${process.pid} ${topic}\n`);
  while (!fs.existsSync(gate)) await new Promise((r) => setTimeout(r, 10));
}

async function lookup({ topic }) {
  if (gate && topic.includes('hold facts')) await held(topic);
  const facts = Object.entries(table).filter(([k]) => topic.includes(k)).flatMap(([, v]) => v);
  const out = { facts };
  return { content: [{ type: 'text', text: JSON.stringify(out) }], structuredContent: out };
}

const server = new Server({ name: 'research-tools', version: '1.0.0' }, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }));
server.setRequestHandler(CallToolRequestSchema, async (req) => {
  if (req.params.name !== 'lookup') throw new Error(`unknown tool ${req.params.name}`);
  return lookup(req.params.arguments ?? {});
});
// The engine that started this server is its only client: when its end of
// stdin closes (the engine stopped, or was killed), so does this server,
// held calls and all.
process.stdin.on('end', () => process.exit(0));
await server.connect(new StdioServerTransport());
