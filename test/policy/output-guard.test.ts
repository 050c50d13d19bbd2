// The output guard: the model copy of a long success (head, tail, notice, handle), spills, redaction first.

import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  createDispatcher,
  createRedactor,
  defaultStack,
  errorMapping,
  memorySpillStore,
  outputGuard,
  schemaValidation,
  ToolRegistry,
  toolLookup,
  toToolMessage,
  type Outcome,
  type SpillStore,
} from '../../index.js';

function registryWith(result: unknown) {
  return new ToolRegistry().register({
    name: 'big.read',
    inputSchema: z.object({}),
    requiresApproval: false,
    handler: () => result,
  });
}

const long = `${'h'.repeat(6_000)}${'m'.repeat(6_000)}${'t'.repeat(3_000)}`;

function success(outcome: Outcome) {
  if (!outcome.ok) throw new Error(`expected a success, got ${outcome.kind}: ${outcome.message}`);
  return outcome;
}

describe('outputGuard', () => {
  it('cuts the model copy to maxChars, head two thirds and tail one third, and keeps the result whole', async () => {
    const spill = memorySpillStore();
    const registry = registryWith(long);
    const dispatcher = createDispatcher(
      defaultStack({ registry, output: outputGuard({ maxChars: 1_000, spill }) }),
    );
    const outcome = success(await dispatcher.dispatch('big.read', {}));
    expect(outcome.result).toBe(long);
    const copy = outcome.modelCopy;
    expect(copy?.truncated).toBe(true);
    expect(copy?.originalChars).toBe(15_000);
    expect(copy?.text.length).toBeLessThanOrEqual(1_000);
    expect(copy?.text).toContain('15000 characters');
    expect(copy?.text).toContain('Narrow the query');
    expect(copy?.text).toContain(copy?.handle);
    const [head = '', tail = ''] = (copy?.text ?? '').split(/\n\[…[^\]]*\]\n/);
    expect(head).toMatch(/^h+$/);
    expect(tail).toMatch(/^t+$/);
    expect(head.length).toBe(Math.floor(((head.length + tail.length) * 2) / 3));
    expect(spill.get(copy?.handle ?? '')).toBe(long);
    expect(toToolMessage(outcome)).toBe(copy?.text);
  });

  it('cuts a long array exactly as it cuts the same array rendered as one string', async () => {
    class Stamp {
      constructor(readonly at: number) {}
      toJSON(key: string) {
        return `stamp ${this.at} at ${key}`;
      }
    }
    const rows = Array.from({ length: 3_000 }, (_, i) => ({ id: i, note: `row ${i} 😀`, gone: undefined }));
    const shapes: unknown[][] = [
      rows,
      [...rows, undefined, () => 1, null, new Date(0)],
      // An item whose toJSON reads its index: rendered whole, never guessed.
      [...rows, new Stamp(1)],
      [new Stamp(0), ...rows],
      ['x'.repeat(20_000), 'y'.repeat(20_000)],
    ];
    for (const shape of shapes) {
      const asArray = await createDispatcher(
        defaultStack({ registry: registryWith(shape), output: outputGuard({ maxChars: 1_000 }) }),
      ).dispatch('big.read', {});
      const asText = await createDispatcher(
        defaultStack({
          registry: registryWith(JSON.stringify(shape)),
          output: outputGuard({ maxChars: 1_000 }),
        }),
      ).dispatch('big.read', {});
      expect(success(asArray).modelCopy).toEqual(success(asText).modelCopy);
      expect(success(asArray).result).toBe(shape);
    }
  });

  it('gives a short success no model copy', async () => {
    const dispatcher = createDispatcher(
      defaultStack({ registry: registryWith({ ok: 1 }), output: outputGuard() }),
    );
    expect(success(await dispatcher.dispatch('big.read', {})).modelCopy).toBeUndefined();
  });

  it('redacts before it cuts or spills, so a secret cut in two leaves no prefix', async () => {
    const secret = 'sk-AbCdEfGhIjKlMnOpQrStUvWx0123';
    // Somewhere in this range the head ends in the middle of the secret, were it cut first.
    for (let at = 300; at <= 420; at += 8) {
      const spill = memorySpillStore();
      const result = `${'x'.repeat(at)} ${secret} ${'y'.repeat(2_000)}`;
      const dispatcher = createDispatcher(
        defaultStack({ registry: registryWith(result), output: outputGuard({ maxChars: 700, spill }) }),
        { redact: createRedactor() },
      );
      const outcome = success(await dispatcher.dispatch('big.read', {}));
      expect(outcome.modelCopy?.text).not.toMatch(/sk-[A-Za-z]/);
      expect(outcome.result).toContain('[REDACTED:api_key]');
      expect(String(spill.get(outcome.modelCopy?.handle ?? ''))).not.toContain(secret);
    }
  });

  it('loses only the handle when the spill store fails', async () => {
    const failing: SpillStore = { put: () => Promise.reject(new Error('down')), get: () => undefined };
    const throwing: SpillStore = {
      put: () => {
        throw new Error('down');
      },
      get: () => undefined,
    };
    for (const spill of [failing, throwing]) {
      const dispatcher = createDispatcher(
        defaultStack({ registry: registryWith(long), output: outputGuard({ maxChars: 500, spill }) }),
      );
      const outcome = success(await dispatcher.dispatch('big.read', {}));
      expect(outcome.modelCopy?.truncated).toBe(true);
      expect(outcome.modelCopy?.handle).toBeUndefined();
    }
  });

  it('works as a layer in a hand-made stack', async () => {
    const registry = registryWith({ rows: Array.from({ length: 500 }, (_, i) => ({ i })) });
    const dispatcher = createDispatcher([
      errorMapping(),
      outputGuard({ maxChars: 300 }),
      toolLookup(registry),
      schemaValidation(),
    ]);
    const outcome = success(await dispatcher.dispatch('big.read', {}));
    expect(outcome.modelCopy?.text.length).toBeLessThanOrEqual(300);
    expect(outcome.modelCopy?.text.startsWith('{"rows":[{"i":0}')).toBe(true);
  });

  it('throws a TypeError naming maxChars or spill', () => {
    expect(() => outputGuard({ maxChars: 199 })).toThrow(/maxChars/);
    expect(() => outputGuard({ spill: {} as SpillStore })).toThrow(/spill/);
    expect(() => memorySpillStore({ ttlMs: 0 })).toThrow(/ttlMs/);
  });

  it('forgets a spill after its ttl', () => {
    let now = 0;
    const spill = memorySpillStore({ ttlMs: 1_000, clock: { now: () => now } });
    const handle = spill.put('whole') as string;
    expect(spill.get(handle)).toBe('whole');
    now = 1_000;
    expect(spill.get(handle)).toBeUndefined();
  });
});
