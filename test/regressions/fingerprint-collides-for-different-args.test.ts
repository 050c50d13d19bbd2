// Regression (issue 9, items 2 and 3): the idempotency fingerprint was a 64-bit non-cryptographic
// hash, so two different charges could collide (one caller got the other's result), while
// JSON-equal args (-0 and 0, an optional field undefined or absent, a Map or Set in another
// order) were a conflict; and a large Buffer under a key cost one string key per byte.
import { expect, it } from 'vitest';
import { z } from 'zod';
import { createDispatcher, defaultStack, ToolRegistry } from '../../index.js';
import { fingerprint } from '../../src/fingerprint.js';

it('tells apart the charges whose 64-bit hashes collided', async () => {
  expect(fingerprint('payments.charge', { amount: 963.7432379779125 })).not.toBe(
    fingerprint('payments.charge', { amount: 8192.001726311293 }),
  );
  let charges = 0;
  const registry = new ToolRegistry().register({
    name: 'payments.charge',
    inputSchema: z.object({ amount: z.number() }),
    handler: ({ amount }) => ({ charged: amount, n: ++charges }),
  });
  const dispatcher = createDispatcher(defaultStack({ registry }));
  await dispatcher.dispatch('payments.charge', { amount: 963.7432379779125 }, { idempotencyKey: 'k' });
  await expect(
    dispatcher.dispatch('payments.charge', { amount: 8192.001726311293 }, { idempotencyKey: 'k' }),
  ).resolves.toMatchObject({
    kind: 'idempotency_conflict',
  });
});

it('treats JSON-equal args as the same call', async () => {
  const same: Array<[unknown, unknown]> = [
    [{ n: -0 }, { n: 0 }],
    [JSON.parse('{"n": -0}'), { n: 0 }],
    [{ a: 1, b: undefined }, { a: 1 }],
    [
      {
        m: new Map([
          ['x', 1],
          ['y', 2],
        ]),
      },
      {
        m: new Map([
          ['y', 2],
          ['x', 1],
        ]),
      },
    ],
    [{ s: new Set(['a', 'b']) }, { s: new Set(['b', 'a']) }],
    [{ b: Buffer.from('abc') }, { b: Buffer.from('abc') }],
  ];
  for (const [a, b] of same) expect(fingerprint('t.x', a)).toBe(fingerprint('t.x', b));
  const different: Array<[unknown, unknown]> = [
    [{ n: 1 }, { n: '1' }],
    [{ n: 1 }, { n: 1n }],
    [[undefined], [null]],
    [{ b: Buffer.from('abc') }, { b: Buffer.from('abd') }],
    [{ b: Buffer.from('abc') }, { b: new Uint8Array(Buffer.from('abc')) }],
    [{ s: new Set([1]) }, { s: [1] }],
  ];
  for (const [a, b] of different) expect(fingerprint('t.x', a)).not.toBe(fingerprint('t.x', b));

  let runs = 0;
  const registry = new ToolRegistry().register({
    name: 'notes.save',
    inputSchema: z.object({ text: z.string(), tag: z.string().optional() }),
    handler: () => ++runs,
  });
  const dispatcher = createDispatcher(defaultStack({ registry }));
  await dispatcher.dispatch('notes.save', { text: 'x', tag: undefined }, { idempotencyKey: 'n1' });
  await expect(dispatcher.dispatch('notes.save', { text: 'x' }, { idempotencyKey: 'n1' })).resolves.toEqual({
    ok: true,
    result: 1,
    attempts: 0,
  });
});

it('digests binary args as bytes, not one key per byte', () => {
  const big = Buffer.alloc(1_600_000, 7);
  const print = fingerprint('blob.put', { data: big });
  big[1_000_000] = 8;
  expect(fingerprint('blob.put', { data: big })).not.toBe(print);
});
