// The cost of `tool-dispatcher mcp-proxy`: the median tools/call round trip through the proxy
// against calling the same upstream directly over stdio, in one run, for an instant tool and for
// a tool that takes 10 ms.
//
//   npx tsx bench/mcp-proxy.ts            prints the medians and the two ratios
//   npx tsx bench/mcp-proxy.ts --check    also exits 1 when a ratio misses its target
//   --prebuilt                            reuses bench/.build instead of compiling it again
//   --dist                                runs dist/integrations/mcp/cli.js (npm run build first)
//   --source                              runs integrations/mcp/cli.ts through tsx
//
// The proxy runs as users run it: compiled JavaScript (tsc into bench/.build, as library.ts
// builds it), not the TypeScript source through tsx, whose esbuild transform wraps every closure
// in a `__name` call and which turns source maps on (measured: about 3% slower a round trip).
// Both sides are real processes talking stdio; the only difference is the proxy hop. Rounds of
// direct and proxied calls alternate, so drift in the machine's speed hits both alike. A third
// column, the floor, runs the same hop through a bare SDK pass-through (a low-level Server whose
// tools/call handler awaits client.callTool, nothing else): what any MCP-in-MCP proxy costs. It
// is this file re-run through tsx, but all it runs per call is the SDK's own JavaScript, which
// tsx leaves as it is (through tsx or as plain JS, the floor measured the same).
// Each process hop needs a wake-up of another process, so on a busy machine with few cores the
// ratios grow for every proxy alike; compare ours with the floor in the same run.

import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import {
  CallToolRequestSchema,
  ListToolsRequestSchema,
  type CallToolResult,
} from '@modelcontextprotocol/sdk/types.js';
import { buildDir, buildLibrary } from './library.js';

const passThroughFlag = '--pass-through-child';
if (process.argv[2] === passThroughFlag) {
  // The floor: this same file, re-run as the bare pass-through proxy in front of the upstream.
  const [command = '', ...args] = process.argv.slice(3);
  const upstreamClient = new Client({ name: 'pass-through', version: '1.0.0' });
  await upstreamClient.connect(new StdioClientTransport({ command, args, stderr: 'ignore' }));
  const server = new Server({ name: 'pass-through', version: '1.0.0' }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, () => upstreamClient.listTools());
  server.setRequestHandler(
    CallToolRequestSchema,
    async (request) => (await upstreamClient.callTool(request.params)) as CallToolResult,
  );
  process.stdin.once('end', () => process.exit(0));
  await server.connect(new StdioServerTransport());
} else {
  await main();
}

async function main(): Promise<void> {
  const root = fileURLToPath(new URL('..', import.meta.url));
  const upstream = [process.execPath, '--import', 'tsx', `${root}examples/mcp/flaky-server.ts`];
  const { entry, origin } = proxyEntry(root);
  const cases = [
    { name: 'instant tool', ms: 0, rounds: 40, perRound: 25, target: 2.2 },
    { name: '10 ms tool', ms: 10, rounds: 20, perRound: 10, target: 1.05 },
  ] as const;

  const sides = {
    direct: await connect(upstream),
    proxy: await connect([
      process.execPath,
      ...entry,
      'mcp-proxy',
      '--log-level',
      'silent',
      '--',
      ...upstream,
    ]),
    floor: await connect([
      process.execPath,
      '--import',
      'tsx',
      fileURLToPath(import.meta.url),
      passThroughFlag,
      ...upstream,
    ]),
  };
  let missed = false;
  try {
    console.log(`MCP proxy round trip: median tools/call over stdio (${origin}, Node ${process.version})\n`);
    for (const { name, ms, rounds, perRound, target } of cases) {
      const times = { direct: [] as number[], proxy: [] as number[], floor: [] as number[] };
      // Warm every path (JIT, the proxy's stack), then alternate rounds.
      for (const side of ['direct', 'proxy', 'floor'] as const)
        await roundTrips(sides[side], ms, perRound * 2, []);
      for (let round = 0; round < rounds; round++) {
        for (const side of ['direct', 'proxy', 'floor'] as const)
          await roundTrips(sides[side], ms, perRound, times[side]);
      }
      const [direct, proxy, floor] = [median(times.direct), median(times.proxy), median(times.floor)];
      const ratio = proxy / direct;
      if (ratio > target) missed = true;
      console.log(
        `${name.padEnd(13)} direct ${direct.toFixed(3).padStart(7)} ms  proxy ${proxy.toFixed(3).padStart(7)} ms  ` +
          `ratio ${ratio.toFixed(3)}× (target ≤ ${target}×, ${ratio <= target ? 'ok' : 'MISSED'})  ` +
          `floor: SDK pass-through ${floor.toFixed(3)} ms = ${(floor / direct).toFixed(3)}×`,
      );
    }
  } finally {
    await Promise.all(Object.values(sides).map((client) => client.close()));
  }
  if (missed && process.argv.includes('--check')) process.exitCode = 1;
}

// How to start the proxy: the tsc build by default, or dist/, or the source through tsx.
function proxyEntry(root: string): { entry: string[]; origin: string } {
  const argv = process.argv;
  if (argv.includes('--source')) {
    return {
      entry: ['--import', 'tsx', `${root}integrations/mcp/cli.ts`],
      origin: 'proxy from source via tsx',
    };
  }
  if (argv.includes('--dist')) {
    const cli = `${root}dist/integrations/mcp/cli.js`;
    if (!existsSync(cli)) {
      console.error('bench/mcp-proxy.ts --dist: run `npm run build` first');
      process.exit(2);
    }
    return { entry: [cli], origin: 'proxy built in dist/' };
  }
  const cli = `${buildDir}/integrations/mcp/cli.js`;
  if (!argv.includes('--prebuilt') || !existsSync(cli)) buildLibrary();
  if (!existsSync(cli)) throw new Error(`tsc produced no ${cli}`);
  return { entry: [cli], origin: 'proxy built by tsc' };
}

async function connect([command = '', ...args]: string[]): Promise<Client> {
  const client = new Client({ name: 'bench', version: '1.0.0' });
  await client.connect(new StdioClientTransport({ command, args, stderr: 'ignore' }));
  return client;
}

async function roundTrips(client: Client, ms: number, count: number, into: number[]): Promise<void> {
  for (let i = 0; i < count; i++) {
    const start = performance.now();
    await client.callTool({ name: 'wait', arguments: { ms } });
    into.push(performance.now() - start);
  }
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 === 1
    ? (sorted[middle] ?? NaN)
    : ((sorted[middle - 1] ?? NaN) + (sorted[middle] ?? NaN)) / 2;
}
