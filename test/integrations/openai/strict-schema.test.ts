// toStrictSchema: a tool schema rewritten to OpenAI's strict subset, or a TypeError naming the tool.

import { describe, expect, it } from 'vitest';
import { stripOptionalNulls, toStrictSchema } from '../../../integrations/openai/strict-schema.js';

describe('toStrictSchema', () => {
  it('closes objects, requires every property, makes optional ones nullable and turns oneOf into anyOf', () => {
    const { schema, plan } = toStrictSchema(
      {
        type: 'object',
        properties: {
          a: { type: 'string', default: 'x', format: 'uri' },
          b: { oneOf: [{ type: 'string' }, { type: 'number' }] },
          c: { $ref: '#/$defs/C' },
          d: { type: 'string', format: 'email' },
        },
        required: ['d'],
        $defs: { C: { type: 'object', properties: { z: { type: 'boolean' } } } },
      },
      'tool',
    );
    expect(schema).toEqual({
      type: 'object',
      additionalProperties: false,
      required: ['a', 'b', 'c', 'd'],
      properties: {
        a: { type: ['string', 'null'] },
        b: { anyOf: [{ type: 'string' }, { type: 'number' }, { type: 'null' }] },
        c: { anyOf: [{ $ref: '#/$defs/C' }, { type: 'null' }] },
        d: { type: 'string', format: 'email' },
      },
      $defs: {
        C: {
          type: 'object',
          additionalProperties: false,
          required: ['z'],
          properties: { z: { type: ['boolean', 'null'] } },
        },
      },
    });
    expect(stripOptionalNulls({ a: null, b: 1, c: null, d: 'e' }, plan!)).toEqual({ b: 1, d: 'e' });
  });

  it('throws a TypeError naming the tool and the place for what the subset cannot say', () => {
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [
        { type: 'object', properties: { m: { type: 'object', additionalProperties: { type: 'string' } } } },
        /"kv__put": 'additionalProperties' other than false .* at \/properties\/m/,
      ],
      [{ type: 'object', properties: { m: { allOf: [{ type: 'string' }] } } }, /'allOf' at \/properties\/m/],
      [
        { type: 'object', properties: { t: { type: 'array', prefixItems: [{ type: 'string' }] } } },
        /'prefixItems'/,
      ],
      [{ type: 'object', properties: {}, additionalProperties: {} }, /at the root/],
    ];
    for (const [schema, message] of cases) {
      expect(() => toStrictSchema(schema as never, 'kv__put')).toThrow(message);
    }
  });

  it('leaves nulls alone where the schema had no optional field', () => {
    const { plan } = toStrictSchema({ type: 'object', properties: { a: { type: ['string', 'null'] } } }, 't');
    expect(plan).toBeUndefined();
  });
});
