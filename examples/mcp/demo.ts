// `npm run demo:mcp`: starts `tool-dispatcher mcp-proxy` in front of a bundled flaky MCP server
// and prints a timeline of a few calls, the proxy's own log lines (stderr) interleaved.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const here = (file: string) => fileURLToPath(new URL(file, import.meta.url));
const scratch = mkdtempSync(join(tmpdir(), 'mcp-demo-'));
const started = Date.now();
const stamp = () => `${String(Date.now() - started).padStart(5)} ms`;
const say = (line: string) => console.log(`${stamp()}  ${line}`);

// The same command a host would run (`npx tool-dispatcher mcp-proxy …`), here from source.
const command = [
  '--import',
  'tsx',
  here('../../integrations/mcp/cli.ts'),
  'mcp-proxy',
  '--config',
  here('./proxy.config.json'),
  '--log-level',
  'info',
  '--',
  process.execPath,
  '--import',
  'tsx',
  here('./flaky-server.ts'),
];
const shown = (arg: string) =>
  arg === process.execPath ? 'node' : arg.startsWith(process.cwd()) ? relative(process.cwd(), arg) : arg;
console.log(`proxy: node ${command.map(shown).join(' ')}\n`);

const transport = new StdioClientTransport({
  command: process.execPath,
  args: command,
  env: { ...(process.env as Record<string, string>), FLAKY_SERVER_STATE: join(scratch, 'state.json') },
  stderr: 'pipe',
});
let pending = '';
transport.stderr?.on('data', (chunk: Buffer) => {
  pending += chunk.toString();
  const lines = pending.split('\n');
  pending = lines.pop() ?? '';
  for (const line of lines) if (line.trim() !== '') console.log(`${stamp()}      │ ${line}`);
});

const client = new Client({ name: 'mcp-demo', version: '1.0.0' });
const text = (result: unknown): string => {
  const { content, isError } = result as { content: Array<{ text?: string }>; isError?: boolean };
  return `${isError === true ? '✗' : '✓'} ${content.map((block) => block.text ?? '').join(' ')}`;
};

try {
  await client.connect(transport);
  const { tools } = await client.listTools();
  say(`→ tools/list: ${tools.map((tool) => tool.name).join(', ')}`);

  say('→ searchDocs {"query":"retries"}');
  say(`← ${text(await client.callTool({ name: 'searchDocs', arguments: { query: 'retries' } }))}`);

  say('→ fetchPage {"url":"https://example.com"}   (the server crashes on a URL it has not seen)');
  say(`← ${text(await client.callTool({ name: 'fetchPage', arguments: { url: 'https://example.com' } }))}`);
  say('  the proxy restarted the server and retried the call on the new process');

  say('→ slowReport {}   (its timeout in proxy.config.json is 500 ms)');
  say(`← ${text(await client.callTool({ name: 'slowReport', arguments: {} }))}`);

  say('→ chargeCard {"cents":500} twice, same _meta["tool-dispatcher/idempotencyKey"]');
  const charge = () =>
    client.callTool({
      name: 'chargeCard',
      arguments: { cents: 500 },
      _meta: { 'tool-dispatcher/idempotencyKey': 'order-42' },
    });
  const [first, second] = await Promise.all([charge(), charge()]);
  say(`← ${text(first)}`);
  say(`← ${text(second)}   (one charge upstream)`);

  say('→ slowReport {} and the user presses stop at its first progress note');
  const stop = new AbortController();
  await client
    .callTool({ name: 'slowReport', arguments: {} }, undefined, {
      signal: stop.signal,
      onprogress: ({ message }) => {
        say(`  progress: ${message ?? ''}; aborting`);
        stop.abort(new Error('user pressed stop'));
      },
    })
    .catch((error: unknown) => say(`← cancelled: ${(error as Error).message}`));

  say('→ searchDocs {"query":"done"}');
  say(`← ${text(await client.callTool({ name: 'searchDocs', arguments: { query: 'done' } }))}`);
} finally {
  await client.close();
  rmSync(scratch, { recursive: true, force: true });
}
if (pending.trim() !== '') console.log(`${stamp()}      │ ${pending}`);
console.log('\ndone');
