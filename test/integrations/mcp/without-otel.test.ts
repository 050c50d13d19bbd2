// tool-dispatcher/mcp without @opentelemetry/api installed (an optional peer): the subpath loads,
// and a call's trace keys still pass through to an upstream request unchanged.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const hider = fileURLToPath(new URL('../../helpers/hidden-packages.ts', import.meta.url));

const script = `
const mcp = await import('./integrations/mcp/entry.ts');
const trace = await import('./integrations/mcp/trace-context.ts');
const meta = trace.traceMetaOf({
  traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
  tracestate: 'rojo=1',
});
const upstream = trace.withTraceMeta(meta, () => trace.currentTraceMeta());
console.log(JSON.stringify({ importMcpTools: typeof mcp.importMcpTools, upstream }));
`;

it('loads tool-dispatcher/mcp and passes the trace keys through without @opentelemetry/api', () => {
  const answer = spawnSync(
    process.execPath,
    ['--import', 'tsx', '--import', hider, '--input-type=module', '-e', script],
    { cwd: root, encoding: 'utf8', env: { ...process.env, HIDDEN_PACKAGES: '@opentelemetry/api' } },
  );
  expect(answer.stderr).toBe('');
  expect(JSON.parse(answer.stdout)).toEqual({
    importMcpTools: 'function',
    upstream: {
      traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
      tracestate: 'rojo=1',
    },
  });
});
