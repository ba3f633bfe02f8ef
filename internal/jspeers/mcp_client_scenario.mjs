// An MCP client built with the official SDK, driving Baton's workflows
// served as MCP tools: over streamable HTTP (--url URL [--token T]) or
// over stdio (--stdio COMMAND ARGS..., the rest of the line). It runs one
// scenario against the workflow "approval" (input {amount, note?}; a check,
// then a wait for approve or reject) and prints each step's answer as a
// JSON line {"step", ...}; the Go test judges them. With --changes it then
// prints {"step":"awaiting_change"} and waits (at most 60 s) for
// notifications/tools/list_changed, and lists the tools again.
//
// The SDK checks each result's structured content against the tool's
// output schema: a result that breaks it is a failed step.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

const argv = process.argv.slice(2);
let url, token, stdio, changes = false;
for (let i = 0; i < argv.length; i++) {
  switch (argv[i]) {
    case '--url': url = argv[++i]; break;
    case '--token': token = argv[++i]; break;
    case '--changes': changes = true; break;
    case '--stdio': stdio = argv.slice(i + 1); i = argv.length; break;
    default: console.error(`unknown argument ${argv[i]}`); process.exit(2);
  }
}

const out = (step, v) => process.stdout.write(JSON.stringify({ step, ...v }) + '\n');

let transport;
if (stdio) {
  transport = new StdioClientTransport({ command: stdio[0], args: stdio.slice(1), env: process.env, stderr: 'inherit' });
} else {
  const headers = token ? { Authorization: `Bearer ${token}` } : {};
  transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
}
const client = new Client({ name: 'baton-test', version: '1.0.0' });
let changed;
const listChanged = new Promise((resolve) => { changed = resolve; });
client.setNotificationHandler(ToolListChangedNotificationSchema, () => changed());

// call answers a tool call as {isError, text, structured}; a protocol
// error (or a result the SDK refuses) as {protocolError}.
async function call(name, args) {
  try {
    const r = await client.callTool({ name, arguments: args });
    return { isError: !!r.isError, text: r.content?.[0]?.text, structured: r.structuredContent ?? null };
  } catch (e) {
    return { protocolError: String(e.message ?? e) };
  }
}

try {
  await client.connect(transport);
  out('connected', { server: client.getServerVersion(), capabilities: client.getServerCapabilities() });

  const { tools } = await client.listTools();
  out('tools', { tools: tools.map((t) => ({ name: t.name, description: t.description, inputSchema: t.inputSchema, hasOutputSchema: !!t.outputSchema })) });

  out('start_wait', await call('start_approval', { amount: 12.5, note: 'taxi', id: 'js-1', wait: 30 }));
  out('start_again', await call('start_approval', { amount: 12.5, note: 'taxi', id: 'js-1' }));
  out('get', await call('get_instance', { id: 'js-1' }));
  out('list', await call('list_instances', { workflow: 'approval', limit: 10 }));
  out('signal', await call('signal_instance', { id: 'js-1', signal: 'approve', data: { by: 'ana' } }));
  let after;
  for (let i = 0; i < 500; i++) { // bounded: the signal is taken at once
    after = await call('get_instance', { id: 'js-1' });
    if (after.structured?.status !== 'waiting' && after.structured?.status !== 'running') break;
    await new Promise((r) => setTimeout(r, 10));
  }
  out('after_signal', after);
  out('start2', await call('start_approval', { amount: 1, id: 'js-2' }));
  out('cancel', await call('cancel_instance', { id: 'js-2', reason: 'a duplicate' }));
  out('list_workflows', await call('list_workflows', {}));

  out('err_missing', await call('start_approval', { note: 'no amount' }));
  out('err_wait', await call('start_approval', { amount: 1, wait: 600 }));
  out('err_unknown', await call('get_instance', { id: 'nope' }));
  out('err_finished', await call('cancel_instance', { id: 'js-2' }));
  out('err_not_waiting', await call('signal_instance', { id: 'js-2', signal: 'approve' }));
  out('err_no_tool', await call('no_such_tool', {}));

  const { resources } = await client.listResources();
  const { resourceTemplates } = await client.listResourceTemplates();
  out('resources', { resources: resources.map((r) => r.uri), templates: resourceTemplates.map((t) => t.uriTemplate) });
  for (const uri of ['baton://workflows/approval', 'baton://instances/js-1', 'baton://instances/js-1/history']) {
    const r = await client.readResource({ uri });
    out('read', { uri, mimeType: r.contents[0].mimeType, text: r.contents[0].text });
  }
  try {
    await client.readResource({ uri: 'baton://instances/nope' });
    out('read_missing', { found: true });
  } catch (e) {
    out('read_missing', { error: String(e.message ?? e) });
  }

  if (changes) {
    out('awaiting_change', {});
    const timeout = new Promise((_, reject) => setTimeout(() => reject(new Error('no notifications/tools/list_changed within 60 s')), 60000));
    await Promise.race([listChanged, timeout]);
    const again = await client.listTools();
    out('tools_after_change', { names: again.tools.map((t) => t.name) });
  }
  out('done', {});
  await client.close();
  process.exit(0);
} catch (e) {
  out('failed', { error: String(e.stack ?? e) });
  process.exit(1);
}
