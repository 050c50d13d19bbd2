// A tool that prints too much, and a secret: the model gets a cut copy with a notice and a handle,
// the whole (redacted) result stays in the outcome and in the spill store.

import { z } from 'zod';
import {
  createDispatcher,
  createRedactor,
  defaultStack,
  memorySpillStore,
  outputGuard,
  toToolMessage,
  ToolRegistry,
} from '../index.js';

const registry = new ToolRegistry().register({
  name: 'logs.tail',
  description: 'The last lines of a service log',
  inputSchema: z.object({ service: z.string() }),
  annotations: { readOnlyHint: true },
  handler: ({ service }) =>
    Array.from({ length: 400 }, (_, i) =>
      i === 3
        ? `${service}: loaded OPENAI_API_KEY=sk-proj-Zx81nQwErTyUiOp0123456789`
        : `${service}: request ${i} ok`,
    ).join('\n'),
});

const spill = memorySpillStore({ ttlMs: 600_000 });
const dispatcher = createDispatcher(
  defaultStack({ registry, output: outputGuard({ maxChars: 600, spill }) }),
  {
    redact: createRedactor(),
  },
);

const outcome = await dispatcher.dispatch('logs.tail', { service: 'billing' });
if (!outcome.ok) throw new Error(outcome.message);
const text = toToolMessage(outcome);
console.log(`the model reads ${text.length} characters:\n${text}\n`);
const whole = String(spill.get(outcome.modelCopy?.handle ?? ''));
console.log(
  `original: ${outcome.modelCopy?.originalChars} characters; spilled as ${outcome.modelCopy?.handle}`,
);
console.log(
  `secret in the result: ${String(outcome.result).includes('sk-proj')}; in the spill: ${whole.includes('sk-proj')}`,
);
console.log(`line 3 now reads: ${whole.split('\n')[3]}`);
