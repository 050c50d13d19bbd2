// toObjectSchema: every tool schema becomes one a provider accepts as a tool's parameters.

import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { toObjectSchema } from '../src/object-schema.js';

// What `registry.list()` gives for a zod schema.
function listed(schema: z.ZodType): Record<string, unknown> {
  return z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
}

describe('toObjectSchema', () => {
  it('drops $schema and keeps an object schema as it is', () => {
    const schema = listed(z.object({ query: z.string(), limit: z.number().optional() }));
    expect(schema['$schema']).toBeDefined();
    expect(toObjectSchema(schema)).toEqual({
      type: 'object',
      properties: { query: { type: 'string' }, limit: { type: 'number' } },
      required: ['query'],
    });
  });

  it('turns {} (a validator that cannot describe itself) into an empty object schema', () => {
    expect(toObjectSchema({})).toEqual({ type: 'object', properties: {} });
    expect(toObjectSchema({ $schema: 'x' })).toEqual({ type: 'object', properties: {} });
  });

  it('adds properties to an object schema without them', () => {
    expect(toObjectSchema({ type: 'object', additionalProperties: { type: 'string' } })).toEqual({
      type: 'object',
      properties: {},
      additionalProperties: { type: 'string' },
    });
  });

  it('gives a non-object root an object schema, keeping its description', () => {
    expect(toObjectSchema({ type: 'string', description: 'a name' })).toEqual({
      type: 'object',
      properties: {},
      description: 'a name',
    });
    expect(toObjectSchema({ type: ['object', 'null'], properties: { a: { type: 'string' } } })).toEqual({
      type: 'object',
      properties: { a: { type: 'string' } },
    });
  });

  it('merges a discriminated union into one object with an enum discriminator', () => {
    const schema = listed(
      z.discriminatedUnion('kind', [
        z.object({ kind: z.literal('card'), number: z.string() }),
        z.object({ kind: z.literal('bank'), iban: z.string() }),
      ]),
    );
    expect(schema['type']).toBeUndefined();
    expect(toObjectSchema(schema)).toEqual({
      type: 'object',
      properties: {
        kind: { type: 'string', enum: ['card', 'bank'] },
        number: { type: 'string' },
        iban: { type: 'string' },
      },
      required: ['kind'],
    });
  });

  it('merges a union whose shared property differs into its anyOf, dropping non-object branches', () => {
    expect(
      toObjectSchema({
        anyOf: [
          { type: 'object', properties: { a: { type: 'string' } }, required: ['a'] },
          {
            type: 'object',
            properties: { a: { type: 'number' }, b: { type: 'string' } },
            required: ['a', 'b'],
          },
          { type: 'string' },
        ],
        description: 'either',
      }),
    ).toEqual({
      type: 'object',
      properties: { a: { anyOf: [{ type: 'string' }, { type: 'number' }] }, b: { type: 'string' } },
      required: ['a'],
      description: 'either',
    });
  });

  it('merges an intersection, requiring what any part requires', () => {
    const schema = listed(z.intersection(z.object({ a: z.string() }), z.object({ b: z.number() })));
    expect(toObjectSchema(schema)).toEqual({
      type: 'object',
      properties: { a: { type: 'string' }, b: { type: 'number' } },
      required: ['a', 'b'],
    });
  });

  it('gives a union with no object branch an empty object schema', () => {
    expect(toObjectSchema({ oneOf: [{ type: 'string' }, { type: 'number' }] })).toEqual({
      type: 'object',
      properties: {},
    });
  });

  it('resolves a root $ref into its own $defs, keeping the definitions', () => {
    const schema = {
      $ref: '#/$defs/Node',
      $defs: { Node: { type: 'object', properties: { next: { $ref: '#/$defs/Node' } } } },
    };
    expect(toObjectSchema(schema)).toEqual({
      type: 'object',
      properties: { next: { $ref: '#/$defs/Node' } },
      $defs: schema.$defs,
    });
  });

  it('never throws and never shares objects with its input', () => {
    const input = { type: 'object', properties: { a: { type: 'string' } } };
    const out = toObjectSchema(input);
    (out.properties['a'] as { type: string }).type = 'number';
    expect(input.properties.a.type).toBe('string');
    expect(toObjectSchema(null as never)).toEqual({ type: 'object', properties: {} });
    expect(toObjectSchema([] as never)).toEqual({ type: 'object', properties: {} });
    expect(toObjectSchema({ type: 'object', properties: { f: () => 1 } } as never)).toEqual({
      type: 'object',
      properties: {},
    });
  });

  it('keeps a "__proto__" property a plain field', () => {
    const input = JSON.parse(
      '{"anyOf":[{"type":"object","properties":{"__proto__":{"type":"string"}}}]}',
    ) as Record<string, unknown>;
    const out = toObjectSchema(input);
    expect(Object.keys(out.properties)).toEqual(['__proto__']);
    expect(Object.getPrototypeOf(out.properties)).toBe(Object.prototype);
  });
});
