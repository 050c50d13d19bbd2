// AI SDK 7's per-tool timeout (`timeout: { tools: { <key>Ms } }`) with toAiSdkTools({ hostTimeout }):
// our timer owns the call, capped by the host's, on the real `ai` 7 (npm run test:matrix); under
// `npm test` (`ai` 6, which has no per-tool timeout) the host part is skipped.

import { generateText, stepCountIs } from 'ai';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createDispatcher, defaultStack, ToolRegistry, type DispatchEvent } from '../../../index.js';
import { ToolCallFailed, toAiSdkTools } from '../../../integrations/ai-sdk/index.js';
import { scriptedModel } from './scripted-model.js';

const { default: manifest } = await import('ai/package.json', { with: { type: 'json' } });
const hasPerToolTimeout = Number(manifest.version.split('.')[0]) >= 7;

function setup() {
  const registry = new ToolRegistry().register({
    name: 'reports.build',
    inputSchema: z.object({}),
    // Far longer than the host's: the host's cap must end the attempt.
    timeoutMs: 600_000,
    // Settles only when the dispatcher aborts the attempt.
    handler: (_args, { signal }) =>
      new Promise((_resolve, reject) =>
        signal.addEventListener('abort', () => reject(signal.reason), { once: true }),
      ),
  });
  const events: DispatchEvent[] = [];
  const dispatcher = createDispatcher(defaultStack({ registry }), { onEvent: (event) => events.push(event) });
  return { registry, dispatcher, events };
}

describe('toAiSdkTools({ hostTimeout })', () => {
  it.skipIf(!hasPerToolTimeout)(
    'ends a call at a host per-tool timeout shorter than the tool’s as our timeout, not a host abort',
    async () => {
      const { registry, dispatcher } = setup();
      const { model } = scriptedModel([[{ id: 'c1', name: 'reports__build', input: '{}' }], 'gave up']);
      const timeout = { tools: { reports__buildMs: 30 } };
      // Typed against `ai` 6 by tsc, whose timeout has no per-tool fields: passed as a variable.
      const settings = {
        model,
        tools: toAiSdkTools({ registry, dispatcher, hostTimeout: timeout }),
        timeout,
        stopWhen: stepCountIs(2),
        prompt: 'build the report',
      } as unknown as Parameters<typeof generateText>[0];
      const result = await generateText(settings);
      const errors = result.steps
        .flatMap((step) => step.content)
        .filter((part) => part.type === 'tool-error') as Array<{ error: unknown }>;
      expect(errors).toHaveLength(1);
      const error = errors[0]?.error;
      expect(error).toBeInstanceOf(ToolCallFailed);
      expect((error as ToolCallFailed).outcome.kind).toBe('timeout');
    },
  );

  it('throws a TypeError for a hostTimeout that is not generateText’s timeout', () => {
    const { registry, dispatcher } = setup();
    expect(() => toAiSdkTools({ registry, dispatcher, hostTimeout: 'soon' as never })).toThrow(/hostTimeout/);
  });
});
