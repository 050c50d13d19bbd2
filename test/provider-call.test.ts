import { describe, expect, it } from 'vitest';
import { providerCallOptions } from '../middleware/index.js';

describe('providerCallOptions', () => {
  it('uses the provider id as the call id and scopes the key', () => {
    const signal = new AbortController().signal;
    expect(
      providerCallOptions({
        providerId: 'call_0',
        signal,
        idempotencyScope: 'run-1',
        idPrefix: 'host',
        base: { timeoutMs: 5 },
      }),
    ).toEqual({
      timeoutMs: 5,
      callId: 'call_0',
      idempotencyKey: 'run-1:call_0',
      signal,
    });
  });

  it('passes no key without a scope unless keyByCallId, and cleans host quirks', () => {
    expect(providerCallOptions({ providerId: 7, signal: null, idPrefix: 'host' })).toEqual({ callId: '7' });
    expect(providerCallOptions({ providerId: 7, keyByCallId: true, idPrefix: 'host' })).toEqual({
      callId: '7',
      idempotencyKey: '7',
    });
    const generated = providerCallOptions({ providerId: '', idempotencyScope: 'run-1', idPrefix: 'host' });
    expect(generated.callId).toMatch(/^host-[0-9a-f-]{36}$/);
    expect(generated.idempotencyKey).toBeUndefined();
  });

  it("lets the call's own id, key, signal and display name win over the shared base", () => {
    const shared = new AbortController().signal;
    const own = new AbortController().signal;
    const options = providerCallOptions({
      providerId: 'call_1',
      signal: own,
      idempotencyScope: 'run-2',
      idPrefix: 'host',
      displayName: 'search__web',
      base: { callId: 'base', idempotencyKey: 'base', signal: shared, displayName: 'base', budget: 3 },
    });
    expect(options).toEqual({
      callId: 'call_1',
      idempotencyKey: 'run-2:call_1',
      signal: own,
      displayName: 'search__web',
      budget: 3,
    });
  });
});
