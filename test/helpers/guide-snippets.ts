// Type-checks the ```ts snippets of a docs page against the package's sources, as a user pasting
// them would compile them: `tool-dispatcher/…` imports point at the sources, and the names a
// snippet uses without making (`registry`, `dispatcher`, `info`, …) come from a prelude.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';

const root = join(import.meta.dirname, '../..');
// Beside the tests, so that the package's `type: module` makes each snippet an ES module.
const dir = join(root, 'test/.guide-snippets');

// The names snippets use without making them, and where they come from.
const prelude = `
import type { Client } from '@modelcontextprotocol/client';
import { z } from 'zod';
import type { Dispatcher, ToolRegistry } from '../../index.js';
import type { redisIdempotencyStore } from '../../integrations/redis/index.js';
export { createDispatcher, defaultStack } from '../../index.js';
export { createMcpServerFactory } from '../../integrations/mcp/index.js';
export declare const registry: ToolRegistry;
export declare const dispatcher: Dispatcher;
export declare const info: { name: string; version: string };
export declare const client: Client;
export const inputSchema = z.object({ month: z.string() });
export declare const handler: (args: { month: string }) => unknown;
export declare const redis: Parameters<typeof redisIdempotencyStore>[0];
`;
const preludeNames = [
  'createDispatcher',
  'defaultStack',
  'createMcpServerFactory',
  'registry',
  'dispatcher',
  'info',
  'client',
  'inputSchema',
  'handler',
  'redis',
];

/** One compile error in a snippet: the snippet's number (-1: the prelude), its line and the message. */
export interface SnippetError {
  snippet: number;
  line: number;
  message: string;
}

/** The ```ts blocks of a docs page, in order. */
export function snippetsOf(page: string): string[] {
  const text = readFileSync(join(root, page), 'utf8');
  return [...text.matchAll(/```ts\n([\s\S]*?)```/g)].map((match) => match[1] as string);
}

// A snippet as a module: package imports pointed at the sources, the prelude's names it uses and
// does not make imported; its own lines keep their numbers after the one import line.
function moduleOf(snippet: string): string {
  const code = snippet.replace(/from 'tool-dispatcher(\/[\w-]+)?'/g, (_all, sub: string | undefined) => {
    if (sub === undefined) return `from '../../index.js'`;
    if (sub === '/middleware') return `from '../../middleware/index.js'`;
    return `from '../../integrations${sub}/index.js'`;
  });
  const made = new Set(
    [...code.matchAll(/\b(?:const|let|function|class)\s+(\w+)|import\s*\{([^}]*)\}/g)].flatMap((match) =>
      match[1] !== undefined
        ? [match[1]]
        : (match[2] as string).split(',').map((name) => name.replace(/^\s*type\s+/, '').trim()),
    ),
  );
  const used = preludeNames.filter((name) => !made.has(name) && new RegExp(`\\b${name}\\b`).test(code));
  const header = used.length === 0 ? 'export {};' : `import { ${used.join(', ')} } from './prelude.js';`;
  return `${header}\n${code}`;
}

/**
 * Compiles every snippet of `page` with the repository's compiler options; resolves to the errors,
 * less "Cannot find name" (a snippet may use a name an earlier one made).
 */
export function typeCheckSnippets(page: string): SnippetError[] {
  const files = new Map<string, string>([[join(dir, 'prelude.ts'), prelude]]);
  snippetsOf(page).forEach((snippet, index) => {
    files.set(join(dir, `snippet-${index}.ts`), moduleOf(snippet));
  });
  const config = ts.getParsedCommandLineOfConfigFile(
    join(root, 'tsconfig.json'),
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (diagnostic) => {
        throw new Error(ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'));
      },
    },
  );
  if (config === undefined) throw new Error('tsconfig.json cannot be read');
  const options = { ...config.options, noEmit: true };
  const host = ts.createCompilerHost(options);
  const { getSourceFile, fileExists, readFile, directoryExists } = host;
  host.directoryExists = (name) => name === dir || (directoryExists?.call(host, name) ?? true);
  host.fileExists = (name) => files.has(name) || fileExists.call(host, name);
  host.readFile = (name) => files.get(name) ?? readFile.call(host, name);
  host.getSourceFile = (name, language, ...rest) => {
    const text = files.get(name);
    return text === undefined
      ? getSourceFile.call(host, name, language, ...rest)
      : ts.createSourceFile(name, text, language);
  };
  const program = ts.createProgram([...files.keys()], options, host);
  const errors: SnippetError[] = [];
  // Only the snippets are checked: what they use of the package is checked as far as they use it.
  const checked = [...files.keys()].flatMap((name) => {
    const file = program.getSourceFile(name);
    return file === undefined
      ? []
      : [...program.getSyntacticDiagnostics(file), ...program.getSemanticDiagnostics(file)];
  });
  for (const diagnostic of checked) {
    const name = diagnostic.file?.fileName ?? '';
    const snippet = /(?:snippet-(\d+)|prelude)\.ts$/.exec(name);
    if (snippet === null || !name.startsWith(dir) || diagnostic.code === 2304) continue;
    const { line } = (diagnostic.file as ts.SourceFile).getLineAndCharacterOfPosition(diagnostic.start ?? 0);
    errors.push({
      snippet: snippet[1] === undefined ? -1 : Number(snippet[1]),
      line,
      message: ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'),
    });
  }
  return errors;
}
