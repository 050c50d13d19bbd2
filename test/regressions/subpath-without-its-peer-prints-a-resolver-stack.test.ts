// Regression (issue 19, item 1): importing a subpath whose optional peer was not installed (say
// `tool-dispatcher/ai-sdk` without `ai`) died with Node's raw ERR_MODULE_NOT_FOUND stack from deep
// inside the package. It now fails with one line naming the package and the command that
// installs it; Node frames that line with its own notice and version, never with a stack.
import { spawnSync } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));
const hider = fileURLToPath(new URL('../helpers/hidden-packages.ts', import.meta.url));

it.each([
  ['ai-sdk', 'ai'],
  ['langchain', 'langchain'],
  ['langchain', '@langchain/core'],
  ['openai-agents', '@openai/agents'],
  // Since issue 23 the MCP subpath runs on its dependencies; only a broken install lacks one.
  ['mcp', '@modelcontextprotocol/server'],
  ['otel', '@opentelemetry/api'],
])('prints one line and no stack when tool-dispatcher/%s is imported without %s', (subpath, peer) => {
  const entry = pathToFileURL(`${root}integrations/${subpath}/entry.ts`).href;
  const answer = spawnSync(
    process.execPath,
    ['--import', 'tsx', '--import', hider, '--input-type=module', '--eval', `import '${entry}';`],
    { cwd: root, encoding: 'utf8', env: { ...process.env, HIDDEN_PACKAGES: peer } },
  );
  expect(answer.status).toBe(1);
  const lines = answer.stderr.split('\n');
  const named = lines.filter((line) => line.includes(`tool-dispatcher/${subpath} needs`));
  expect(named).toHaveLength(1);
  expect(named[0]).toMatch(`needs the package "${peer}": npm install "${peer}@`);
  expect(lines.filter((line) => /^\s+at /.test(line))).toEqual([]);
  expect(answer.stderr).not.toMatch(/ERR_MODULE_NOT_FOUND|Cannot find package|cause/);
});
