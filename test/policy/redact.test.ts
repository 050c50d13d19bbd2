// The redactor: built-in secret shapes, your own patterns, values, and linear time on hostile input.

import { describe, expect, it } from 'vitest';
import { createDispatcher, createRedactor, DispatchError } from '../../index.js';
import { secrets } from '../helpers/secrets.js';

class Credentials {
  readonly kind = 'service-account';
  constructor(
    readonly token: string,
    readonly padding: string,
  ) {}
  describe(): string {
    return this.kind;
  }
}

describe('createRedactor', () => {
  const redactor = createRedactor();

  it.each(Object.entries(secrets))('replaces a %s with its name', (name, secret) => {
    const text = redactor.redact(`before ${secret} after`);
    const shown = name === 'bearer' ? 'Bearer [REDACTED:bearer]' : `[REDACTED:${name}]`;
    expect(text).toBe(`before ${shown} after`);
  });

  it('leaves ordinary text alone, including words that only start like a key', () => {
    const text = 'task-manager skipped sk-short, AKIA in prose, eyJ alone, Bearer';
    expect(redactor.redact(text)).toBe(text);
  });

  it('applies your patterns, named or not, after the built-ins', () => {
    const own = createRedactor({ patterns: [/acme_[a-z0-9]{8}/, { name: 'ticket', pattern: /T-\d{4}/ }] });
    expect(own.redact('acme_abcd1234 T-1234 sk-AbCdEfGhIjKlMnOpQrStUvWx')).toBe(
      '[REDACTED:custom] [REDACTED:ticket] [REDACTED:api_key]',
    );
    expect(createRedactor({ builtins: false }).redact(secrets.aws_key)).toBe(secrets.aws_key);
  });

  it('redacts every string in a value and copies only what changed', () => {
    const untouched = { n: 1, list: ['a'] };
    const value = { untouched, nested: { list: [1, `key ${secrets.aws_key}`] } };
    const redacted = redactor.redactValue(value);
    expect(redacted).toEqual({ untouched, nested: { list: [1, 'key [REDACTED:aws_key]'] } });
    expect(redacted.untouched).toBe(untouched);
    expect(value.nested.list[1]).toContain(secrets.aws_key);
    const plain = { a: 'nothing here' };
    expect(redactor.redactValue(plain)).toBe(plain);
  });

  it('keeps cycles and redacts an envelope message, dropping its cause', () => {
    const cyclic: Record<string, unknown> = { token: secrets.jwt };
    cyclic.self = cyclic;
    const redacted = redactor.redactValue(cyclic);
    expect(redacted.token).toBe('[REDACTED:jwt]');
    const envelope = new DispatchError('internal', `failed with ${secrets.api_key}`, {
      attempts: 2,
      cause: new Error(secrets.api_key),
    });
    const clean = redactor.redactValue(envelope);
    expect(clean.message).toBe('failed with [REDACTED:api_key]');
    expect([clean.kind, clean.attempts, clean.cause]).toEqual(['internal', 2, undefined]);
  });

  it('is refused by createDispatcher when redact is no redactor, with a TypeError naming it', () => {
    for (const redact of ['yes', {}, { redact: (text: string) => text }]) {
      expect(() => createDispatcher([], { redact: redact as never })).toThrow(
        new TypeError(`redact must be a redactor from createRedactor(), got ${String(redact)}`),
      );
    }
    expect(() => createDispatcher([], { redact: createRedactor() })).not.toThrow();
  });

  it('throws a TypeError naming a bad pattern or builtins', () => {
    expect(() => createRedactor({ patterns: ['sk-' as unknown as RegExp] })).toThrow(/patterns\[0\]/);
    expect(() => createRedactor({ builtins: 'yes' as unknown as boolean })).toThrow(/builtins/);
  });

  it('finds a JWT only with its two dots, and one right after a run that is none', () => {
    expect(redactor.redact('eyJhZWFk.cGF5bG9hZA')).toBe('eyJhZWFk.cGF5bG9hZA');
    expect(redactor.redact('eyJhZWFk.cGF5bG9hZA.')).toBe('[REDACTED:jwt]');
    expect(redactor.redact(`eyJ${'a'.repeat(5_000)} eyJh.eyJp.c2ln x`)).toBe(
      `eyJ${'a'.repeat(5_000)} [REDACTED:jwt] x`,
    );
    expect(redactor.redact(`eyJa.${'b'.repeat(5_000)} eyJh.eyJp.c2ln`)).toBe(
      `eyJa.${'b'.repeat(5_000)} [REDACTED:jwt]`,
    );
  });

  it('scans hostile input in linear steps: eyJ and a run of token characters', () => {
    // A quadratic scan of 1 MB would take minutes; this asserts the result, and the test's own
    // timeout guards the time.
    const hostile = `eyJ${'a'.repeat(1_000_000)}`;
    expect(redactor.redact(hostile)).toBe(hostile);
    const halfJwt = `eyJa.${'a'.repeat(1_000_000)}`;
    expect(redactor.redact(halfJwt)).toBe(halfJwt);
    const repeated = 'eyJ'.repeat(300_000);
    expect(redactor.redact(repeated)).toBe(repeated);
    const pem = '-----BEGIN PRIVATE KEY-----'.repeat(30_000);
    expect(redactor.redact(pem)).toContain('[REDACTED:private_key]');
  }, 20_000);

  it('keeps what it can of each value: its class, its kind, and the value itself when nothing matched', () => {
    const redactor = createRedactor();
    const error = new TypeError(`bad key ${secrets.api_key}`);
    const redactedError = redactor.redactValue(error);
    expect(redactedError).toBeInstanceOf(TypeError);
    expect(redactedError.message).toBe('bad key [REDACTED:api_key]');
    expect(String(redactedError.stack)).not.toContain(secrets.api_key);
    const instance = redactor.redactValue(new Credentials(secrets.jwt, ''));
    expect(instance).toBeInstanceOf(Credentials);
    expect([instance.token, instance.describe()]).toEqual(['[REDACTED:jwt]', 'service-account']);
    const map = redactor.redactValue(new Map([['k', secrets.aws_key]]));
    expect(map).toEqual(new Map([['k', '[REDACTED:aws_key]']]));
    expect(redactor.redactValue(new URL(`https://x.test/?k=${secrets.api_key}`))).toBe(
      'https://x.test/?k=[REDACTED:api_key]',
    );
    const clean = [
      new Date(0),
      new URL('https://x.test/'),
      new Map([['a', 1]]),
      new Error('fine'),
      new Credentials('t', ''),
    ];
    for (const value of clean) expect(redactor.redactValue(value)).toBe(value);
  });
});
