// What createOpenAIToolkit adds per call over a bare dispatch, for a turn of 8 tool calls.
//
//   npx tsx bench/integrations-openai.ts            full run (about 15 s), prints a table and the ratios
//   npx tsx bench/integrations-openai.ts --quick    shorter rounds (about 6 s)
//
// One operation is one turn of 8 parallel calls to an in-memory tool:
// - bare: `Promise.all` of 8 `dispatcher.dispatch(name, args, { callId })` with args already parsed;
// - dispatchJson: the same with the args as JSON text, parsed inside the stack;
// - chat / responses: the toolkit's `runChatToolCalls` / `runResponsesCalls` on an assistant
//   message / output with those 8 calls (parse, name map, options, `toToolMessage`, the replies).
// The target is on `chat / parse`: the toolkit's turn against the floor any toolkit has, the same 8
// dispatches with each argument text parsed first. Exit code 1 when it is above `target`, measured
// in the same run.

import { pathToFileURL } from 'node:url';
import {
  pairedRatio,
  runGroup,
  type BenchCase,
  type GroupOptions,
  type GroupResult,
  type Ratio,
} from './harness.js';
import { loadIntegration, loadLibrary, loadOptionsFromArgv, type LoadedLibrary } from './library.js';
import { consoleTable, formatRatio } from './report.js';
import { argsSchema, immediateHandler, smallArgs } from './stacks.js';

/**
 * The most a toolkit turn may cost, as a multiple of its floor `8 × (JSON.parse + dispatch)`
 * measured in the same run (issue 20; it was 1.5× the bare dispatches, below the floor itself).
 */
export const target = 1.25;

const callsPerTurn = 8;
const toolName = 'bench.immediate';
const wireName = 'bench__immediate';

const settings: Record<'full' | 'quick', GroupOptions> = {
  full: { rounds: 30, warmupRounds: 5, warmupMs: 2_000, batchMs: 25 },
  quick: { rounds: 15, warmupRounds: 3, warmupMs: 1_000, batchMs: 10 },
};

/** What `runOpenAIToolkitBench` measured. */
export interface OpenAIToolkitBenchResult {
  group: GroupResult;
  /** `runChatToolCalls` / bare dispatches, per turn of 8. */
  chatVsBare: Ratio;
  /** `runResponsesCalls` / bare dispatches. */
  responsesVsBare: Ratio;
  /** `dispatchJson` / `dispatch`: what parsing inside the stack costs. */
  jsonVsBare: Ratio;
  /** `runChatToolCalls` / `JSON.parse` + `dispatch`: the toolkit's own share beyond the parse any loop does. */
  chatVsParsed: Ratio;
  /**
   * `JSON.parse` + `dispatch` / bare dispatches: the floor of any toolkit, which must parse the
   * model's argument text before (or while) it dispatches.
   */
  parsedVsBare: Ratio;
  /** Whether `chatVsParsed.median` (the toolkit over its floor) is within `target`. */
  withinTarget: boolean;
}

/**
 * Runs the group and returns the ratios; prints the table when `log` is given. The toolkit and
 * the stack come from `library` (by default the tsc build, as the main bench measures it).
 */
export async function runOpenAIToolkitBench(
  options: { quick?: boolean; log?: (line: string) => void; library?: LoadedLibrary } = {},
): Promise<OpenAIToolkitBenchResult> {
  const log = options.log ?? (() => {});
  const library = options.library ?? (await loadLibrary({ prebuilt: true }));
  const { createDispatcher, defaultStack, ToolRegistry } = library.lib;
  const { createOpenAIToolkit } = await loadIntegration(library, 'openai');
  const registry = new ToolRegistry().register({
    name: toolName,
    inputSchema: argsSchema,
    handler: immediateHandler,
  });
  const dispatcher = createDispatcher(defaultStack({ registry }));
  const kit = createOpenAIToolkit({ registry, dispatcher });
  const json = JSON.stringify(smallArgs);
  const ids = Array.from({ length: callsPerTurn }, (_, i) => `call_${i}`);
  const assistant = {
    tool_calls: ids.map((id) => ({
      id,
      type: 'function' as const,
      function: { name: wireName, arguments: json },
    })),
  };
  const output = ids.map((id) => ({
    type: 'function_call' as const,
    call_id: id,
    name: wireName,
    arguments: json,
  }));

  const turns = (id: string, label: string, turn: () => Promise<unknown>): BenchCase => ({
    id,
    label,
    unitsPerOp: callsPerTurn,
    async batch(n) {
      for (let i = 0; i < n; i++) await turn();
    },
  });
  const check = (outcomes: ReadonlyArray<{ ok: boolean }>) => {
    if (!outcomes.every((outcome) => outcome.ok)) throw new Error('a benchmark call failed');
  };

  const group = await runGroup(
    [
      turns('bare', `${callsPerTurn} × dispatch (args parsed)`, async () =>
        check(await Promise.all(ids.map((callId) => dispatcher.dispatch(toolName, smallArgs, { callId })))),
      ),
      turns('json', `${callsPerTurn} × dispatchJson`, async () =>
        check(await Promise.all(ids.map((callId) => dispatcher.dispatchJson(toolName, json, { callId })))),
      ),
      turns('parse', `${callsPerTurn} × JSON.parse + dispatch`, async () =>
        check(
          await Promise.all(ids.map((callId) => dispatcher.dispatch(toolName, JSON.parse(json), { callId }))),
        ),
      ),
      turns('chat', `runChatToolCalls (${callsPerTurn} calls)`, async () =>
        check((await kit.runChatToolCalls(assistant)).outcomes),
      ),
      turns('responses', `runResponsesCalls (${callsPerTurn} calls)`, async () =>
        check((await kit.runResponsesCalls(output)).outcomes),
      ),
    ],
    settings[options.quick === true ? 'quick' : 'full'],
  );
  log(
    consoleTable(`OpenAI toolkit, one turn of ${callsPerTurn} calls to an in-memory tool`, group, [
      'wall',
      'cpu',
    ]),
  );
  const chatVsBare = pairedRatio(group, 'chat', 'bare');
  const responsesVsBare = pairedRatio(group, 'responses', 'bare');
  const jsonVsBare = pairedRatio(group, 'json', 'bare');
  const chatVsParsed = pairedRatio(group, 'chat', 'parse');
  const parsedVsBare = pairedRatio(group, 'parse', 'bare');
  const withinTarget = chatVsParsed.median <= target;
  log(
    `   runChatToolCalls / parse + dispatch: ${formatRatio(chatVsParsed)}   (target ≤ ${target}×: the toolkit over its floor)${withinTarget ? '' : '  MISSED'}`,
  );
  log(
    `   JSON.parse + dispatch / bare:        ${formatRatio(parsedVsBare)}   (the floor: no toolkit, only the parse)`,
  );
  log(`   runChatToolCalls / bare dispatch:    ${formatRatio(chatVsBare)}`);
  log(`   runResponsesCalls / bare dispatch:   ${formatRatio(responsesVsBare)}`);
  log(`   dispatchJson / dispatch:             ${formatRatio(jsonVsBare)}   (parsing inside the stack)`);
  return { group, chatVsBare, responsesVsBare, jsonVsBare, chatVsParsed, parsedVsBare, withinTarget };
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const result = await runOpenAIToolkitBench({
    quick: process.argv.includes('--quick'),
    log: (line) => console.log(line),
    library: await loadLibrary(loadOptionsFromArgv(process.argv.slice(2))),
  });
  if (!result.withinTarget) process.exitCode = 1;
}
