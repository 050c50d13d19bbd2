// The core values: registry, errors and budgets.

import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createBudget, DispatchError, isDispatchError, ToolRegistry, TransientError } from '../index.js';
import { jsonRpcCodeFor } from '../middleware/index.js';

const tool = { name: 'search.web', inputSchema: z.object({ query: z.string() }), handler: () => 'r' };

describe('ToolRegistry', () => {
  it('registers, gets, has and lists tools with JSON Schema and defaults', () => {
    const registry = new ToolRegistry().register({
      ...tool,
      description: 'Search the web',
      idempotent: true,
      timeoutMs: 5_000,
    });
    registry.register({ name: 'db.write', inputSchema: z.object({ row: z.string() }), handler: () => 1 });
    expect(registry.has('search.web')).toBe(true);
    expect(registry.get('search.web')?.idempotent).toBe(true);
    expect(registry.list()).toEqual([
      {
        name: 'search.web',
        description: 'Search the web',
        inputSchema: expect.objectContaining({
          type: 'object',
          properties: { query: { type: 'string' } },
          required: ['query'],
        }),
        idempotent: true,
        timeoutMs: 5_000,
      },
      expect.objectContaining({ name: 'db.write', description: '', idempotent: false, timeoutMs: undefined }),
    ]);
  });

  it('throws on a duplicate name unless override is set', () => {
    const registry = new ToolRegistry().register(tool);
    expect(() => registry.register(tool)).toThrow(/already registered/);
    registry.register({ ...tool, description: 'v2' }, { override: true });
    expect(registry.get('search.web')?.description).toBe('v2');
  });

  it.each(['__proto__', 'constructor', 'toString', 'hasOwnProperty'])(
    'does not find %s on Object.prototype',
    (name) => {
      const registry = new ToolRegistry().register(tool);
      expect(registry.get(name)).toBeUndefined();
      expect(registry.has(name)).toBe(false);
    },
  );

  it.each([
    ['a bad name', { ...tool, name: 'Search Web' }, /name/],
    ['an empty name', { ...tool, name: '' }, /name/],
    ['no handler', { ...tool, handler: undefined }, /handler/],
    ['no schema', { ...tool, inputSchema: {} }, /inputSchema/],
    ['a zero timeout', { ...tool, timeoutMs: 0 }, /timeoutMs/],
    ['a non-boolean idempotent', { ...tool, idempotent: 'yes' }, /idempotent/],
  ])('rejects %s with a TypeError', (_label, definition, message) => {
    expect(() => new ToolRegistry().register(definition as never)).toThrow(message);
  });

  it('removes a tool with unregister', () => {
    const registry = new ToolRegistry().register(tool);
    expect(registry.unregister('search.web')).toBe(true);
    expect(registry.has('search.web')).toBe(false);
  });
});

describe('DispatchError', () => {
  it.each([
    ['not_found', -32601],
    ['schema', -32602],
    ['idempotency_conflict', -32602],
    ['timeout', -32603],
    ['transient', -32603],
    ['internal', -32603],
    ['budget_exceeded', -32603],
    ['circuit_open', -32603],
    ['cancelled', -32603],
    ['something_new', -32603],
    ['constructor', -32603],
  ])('maps %s to %i', (kind, code) => {
    expect(jsonRpcCodeFor(kind)).toBe(code);
    expect(new DispatchError(kind, 'm').jsonrpcCode).toBe(code);
  });

  it('is an Error with ok: false, converts to JSON-RPC and serialises without its cause', () => {
    const error = new DispatchError('timeout', 'too slow', { attempts: 3, cause: new Error('inner') });
    expect(error).toBeInstanceOf(Error);
    expect(error.ok).toBe(false);
    expect(error.toJsonRpcError()).toEqual({
      code: -32603,
      message: 'too slow',
      data: { kind: 'timeout', attempts: 3 },
    });
    expect(JSON.parse(JSON.stringify(error))).toEqual({
      ok: false,
      kind: 'timeout',
      message: 'too slow',
      attempts: 3,
      jsonrpcCode: -32603,
    });
  });

  it('is recognised by isDispatchError, and other values are not', () => {
    expect(isDispatchError(new DispatchError('schema', 'x'))).toBe(true);
    expect(isDispatchError(new Error('x'))).toBe(false);
    expect(isDispatchError({ ok: false, kind: 'schema' })).toBe(false);
    expect(isDispatchError(null)).toBe(false);
  });
});

describe('TransientError', () => {
  it('carries retryAfterMs and rejects a negative one', () => {
    expect(new TransientError('x', { retryAfterMs: 10 }).retryAfterMs).toBe(10);
    expect(() => new TransientError('x', { retryAfterMs: -1 })).toThrow(TypeError);
  });
});

describe('createBudget', () => {
  it('consumes units and never goes below zero', () => {
    const budget = createBudget(3);
    expect(budget.tryConsume()).toBe(true);
    expect(budget.tryConsume(2)).toBe(true);
    expect(budget.tryConsume()).toBe(false);
    expect([budget.remaining, budget.limit]).toEqual([0, 3]);
  });

  it.each([[-1], [Number.NaN], ['3']])('rejects %s with a TypeError', (count) => {
    expect(() => createBudget(count as never)).toThrow(TypeError);
  });

  it('rejects a bad unit count', () => {
    expect(() => createBudget(3).tryConsume(0)).toThrow(TypeError);
  });
});

describe('DispatchError retryAfterMs', () => {
  it('travels in toJSON and in the JSON-RPC data when set', () => {
    const error = new DispatchError('circuit_open', 'open', { retryAfterMs: 1_500 });
    expect(error.toJsonRpcError().data).toEqual({ kind: 'circuit_open', attempts: 0, retryAfterMs: 1_500 });
    expect(error.toJSON()).toMatchObject({ retryAfterMs: 1_500 });
  });
});
