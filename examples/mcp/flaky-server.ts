// A deliberately unreliable MCP server, bundled for the mcp-proxy demo and benchmark. It crashes
// on the first call of `fetchPage` for each URL, never answers `slowReport` unless cancelled, and
// counts charges, so the proxy in front of it has something to fix. Its crash memory lives in
// the file named by FLAKY_SERVER_STATE (a temp file by default), so it survives its own crashes.

import { readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';

interface State {
  fetched: string[];
  charges: number;
  cancelled: string[];
}

const stateFile = process.env['FLAKY_SERVER_STATE'] ?? join(tmpdir(), `flaky-server-${process.ppid}.json`);
const load = (): State => {
  try {
    return JSON.parse(readFileSync(stateFile, 'utf8')) as State;
  } catch {
    return { fetched: [], charges: 0, cancelled: [] };
  }
};
const save = (state: State): void => writeFileSync(stateFile, JSON.stringify(state));
const json = (value: unknown) => ({ content: [{ type: 'text' as const, text: JSON.stringify(value) }] });

const server = new McpServer({ name: 'flaky-server', version: '1.0.0' });

server.registerTool(
  'searchDocs',
  {
    description: 'Search the docs (fast, reliable).',
    inputSchema: { query: z.string() },
    annotations: { readOnlyHint: true },
  },
  async ({ query }) => json({ hits: [`${query}: getting started`, `${query}: reference`] }),
);

server.registerTool(
  'fetchPage',
  {
    description: 'Fetch a page. Crashes the whole server the first time it sees a URL.',
    inputSchema: { url: z.string() },
  },
  async ({ url }) => {
    const state = load();
    if (!state.fetched.includes(url)) {
      state.fetched.push(url);
      save(state);
      process.stderr.write(`flaky-server: crashing on ${url}\n`);
      process.exit(1);
    }
    return json({ url, bytes: 1024 });
  },
);

server.registerTool(
  'slowReport',
  { description: 'Build a report; it never finishes on its own.', inputSchema: {} },
  async (_args, extra) => {
    const token = extra._meta?.progressToken;
    if (token !== undefined) {
      await extra.sendNotification({
        method: 'notifications/progress',
        params: { progressToken: token, progress: 0, message: 'building' },
      });
    }
    await new Promise<void>((resolve) => {
      const cancelled = () => {
        const state = load();
        state.cancelled.push(String(extra.signal.reason));
        save(state);
        process.stderr.write(`flaky-server: slowReport cancelled (${String(extra.signal.reason)})\n`);
        resolve();
      };
      if (extra.signal.aborted) cancelled();
      else extra.signal.addEventListener('abort', cancelled, { once: true });
    });
    return json({ report: 'never' });
  },
);

server.registerTool(
  'chargeCard',
  { description: 'Charge a card (not idempotent).', inputSchema: { cents: z.number() } },
  async ({ cents }) => {
    const state = load();
    state.charges += 1;
    save(state);
    return json({ charged: cents, chargesSoFar: state.charges });
  },
);

server.registerTool(
  'wait',
  { description: 'Answers after ms milliseconds (for benchmarks).', inputSchema: { ms: z.number().min(0) } },
  async ({ ms }) => {
    if (ms > 0) await new Promise((resolve) => setTimeout(resolve, ms));
    return { content: [{ type: 'text', text: 'ok' }] };
  },
);

await server.connect(new StdioServerTransport());
