// Tool fields a layer declares: the registry accepts, checks and copies them without naming them.

import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ToolRegistry } from '../index.js';
import { declareToolField } from '../middleware/index.js';

const tool = { name: 'search.web', inputSchema: z.object({ query: z.string() }), handler: () => 'r' };
const register = (definition: object) => new ToolRegistry().register(definition as never);

describe('declareToolField', () => {
  it('keeps the built-in layers’ fields: checked at register, on every tool record', () => {
    const plain = register(tool).get('search.web');
    expect(plain).toHaveProperty('settle', undefined);
    expect(plain).toHaveProperty('requiresApproval', undefined);
    const settle = () => 2;
    const gated = register({ ...tool, settle, requiresApproval: true }).get('search.web');
    expect(gated?.settle).toBe(settle);
    expect(gated?.requiresApproval).toBe(true);
    expect(() => register({ ...tool, settle: 2 })).toThrow(
      new TypeError('settle of "search.web" must be a function, got number'),
    );
    expect(() => register({ ...tool, requiresApproval: 'yes' })).toThrow(
      new TypeError('requiresApproval of "search.web" must be a boolean or a function of the args'),
    );
    expect(() => register({ ...tool, requiresAproval: true })).toThrow(
      'register() of "search.web" got an unknown field "requiresAproval"; did you mean "requiresApproval"?',
    );
  });

  it('lets a layer of your own add a field the registry checks and copies', () => {
    expect(() => register({ ...tool, cacheTtlMs: 5 })).toThrow(/unknown field "cacheTtlMs"/);
    declareToolField({
      name: 'cacheTtlMs',
      check: (value, name) => {
        if (typeof value !== 'number') throw new TypeError(`cacheTtlMs of "${name}" must be a number`);
      },
    });
    expect(register({ ...tool, cacheTtlMs: 5 }).get('search.web')).toHaveProperty('cacheTtlMs', 5);
    expect(register(tool).get('search.web')).toHaveProperty('cacheTtlMs', undefined);
    expect(() => register({ ...tool, cacheTtlMs: '5' })).toThrow(
      'cacheTtlMs of "search.web" must be a number',
    );
    expect(() => register({ ...tool, cacheTtlM: 5 })).toThrow('did you mean "cacheTtlMs"?');
  });

  it('rejects a malformed declaration, and a field the core reads itself', () => {
    expect(() => declareToolField(undefined as never)).toThrow(TypeError);
    expect(() => declareToolField({ name: 'not a name', check: () => {} })).toThrow(/must be an identifier/);
    expect(() => declareToolField({ name: 'ttl', check: 'no' as never })).toThrow(
      /check of "ttl" must be a function/,
    );
    expect(() => declareToolField({ name: 'cost', check: () => {} })).toThrow(
      'declareToolField() cannot declare "cost": the core reads that field itself',
    );
  });
});
