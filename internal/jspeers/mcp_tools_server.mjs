// An MCP tool server built with the official SDK, the peer Baton's MCP
// agents call in tests. Over stdio by default; with --http ADDR it serves
// streamable HTTP at http://ADDR/mcp and prints "listening <url>" when
// ready. MCP_TOKEN, when set, is the bearer token HTTP requests must carry.
//
// Its tools answer in every shape a tool may: structured content, JSON in
// text, plain text, isError, usage in _meta; and process misbehaves on
// request: it exits in the middle of a call, never answers, or writes a
// line that is not JSON on stdout before answering.
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const open = { type: 'object' };
let lists = 0; // tools/list requests answered, for the tests of the client's cache

const tools = [
  {
    name: 'search',
    description: 'Looks a query up and answers structured hits.',
    inputSchema: {
      type: 'object',
      properties: { query: { type: 'string', minLength: 1 }, limit: { type: 'integer', minimum: 1, maximum: 10 } },
      required: ['query'],
      additionalProperties: false,
    },
    outputSchema: { type: 'object', properties: { query: { type: 'string' }, hits: { type: 'array' } } },
  },
  { name: 'text_json', description: 'Answers a JSON object as text.', inputSchema: open },
  { name: 'text', description: 'Answers plain words.', inputSchema: open },
  { name: 'fail', description: 'Answers isError.', inputSchema: open },
  { name: 'usage', description: 'Answers with usage in _meta.', inputSchema: open },
  { name: 'echo', description: 'Answers its arguments as structured content.', inputSchema: open },
  { name: 'throw', description: 'Answers a JSON-RPC error, with the code given.', inputSchema: open },
  {
    name: 'process',
    description: 'Answers the process id and how many tools/list requests it answered; exit: true exits in the middle of the call, hang: true never answers, garbage: true writes a line that is not JSON on stdout first.',
    inputSchema: open,
  },
];

function call(name, args) {
  switch (name) {
    case 'search': {
      const hits = Array.from({ length: args.limit ?? 2 }, (_, i) => ({ title: `${args.query} ${i + 1}` }));
      const out = { query: args.query, hits };
      return { content: [{ type: 'text', text: JSON.stringify(out) }], structuredContent: out };
    }
    case 'text_json':
      return { content: [{ type: 'text', text: '{"answer": 42, "unit": "widgets"}' }] };
    case 'text':
      return { content: [{ type: 'text', text: 'plain words' }] };
    case 'fail':
      return { content: [{ type: 'text', text: 'the index is down' }], isError: true };
    case 'usage':
      return {
        content: [{ type: 'text', text: '{"summary": "short"}' }],
        _meta: { usage: { input_tokens: 120, output_tokens: 30, cost: 0.25 } },
      };
    case 'echo':
      return { content: [], structuredContent: args };
    case 'throw': {
      const e = new Error(args.message ?? 'the tool threw');
      if (args.code) e.code = args.code;
      throw e;
    }
    case 'process':
      if (args.exit) process.exit(3);
      if (args.hang) return new Promise(() => {});
      if (args.garbage) process.stdout.write('this is not JSON\n');
      return { content: [], structuredContent: { pid: process.pid, lists } };
  }
  throw new Error(`unknown tool ${name}`);
}

function newServer() {
  const server = new Server({ name: 'baton-test-tools', version: '1.0.0' }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async () => {
    lists++;
    return { tools };
  });
  server.setRequestHandler(CallToolRequestSchema, async (req) => call(req.params.name, req.params.arguments ?? {}));
  return server;
}

const at = process.argv.indexOf('--http');
if (at < 0) {
  console.error(`mcp tools server ${process.pid} on stdio`); // for the tests of the client's log
  await newServer().connect(new StdioServerTransport());
} else {
  const [host, port] = process.argv[at + 1].split(':');
  const token = process.env.MCP_TOKEN;
  const sessions = new Map();
  const httpServer = http.createServer(async (req, res) => {
    if (token && req.headers.authorization !== `Bearer ${token}`) {
      res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"unauthorized"}');
      return;
    }
    if (!req.url.startsWith('/mcp')) {
      res.writeHead(404).end();
      return;
    }
    let body;
    if (req.method === 'POST') {
      const chunks = [];
      for await (const c of req) chunks.push(c);
      try {
        body = JSON.parse(Buffer.concat(chunks).toString());
      } catch {
        res.writeHead(400).end();
        return;
      }
    }
    const id = req.headers['mcp-session-id'];
    let transport = id && sessions.get(id);
    if (!transport) {
      if (id || req.method !== 'POST') {
        res.writeHead(404).end();
        return;
      }
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        enableJsonResponse: process.env.MCP_JSON === '1',
        onsessioninitialized: (sid) => sessions.set(sid, transport),
      });
      transport.onclose = () => transport.sessionId && sessions.delete(transport.sessionId);
      await newServer().connect(transport);
    }
    await transport.handleRequest(req, res, body);
  });
  httpServer.listen(Number(port), host, () => console.log(`listening http://${host}:${port}/mcp`));
  const stop = () => {
    httpServer.close(() => process.exit(0));
    httpServer.closeAllConnections();
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}
