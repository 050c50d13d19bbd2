// The Promise.withResolvers the Restate SDK needs, present on Node 20 once tool-dispatcher/restate loads.

import { describe, expect, it } from 'vitest';
import '../../../integrations/restate/index.js';

type WithResolvers = <T>() => {
  promise: Promise<T>;
  resolve: (value: T) => void;
  reject: (reason: unknown) => void;
};

describe('Promise.withResolvers after importing tool-dispatcher/restate', () => {
  const withResolvers = (Promise as unknown as { withResolvers: WithResolvers }).withResolvers;

  it('settles the promise it returns through its resolve and reject', async () => {
    const resolved = withResolvers.call(Promise) as ReturnType<WithResolvers>;
    resolved.resolve(42);
    expect(await resolved.promise).toBe(42);
    const rejected = withResolvers.call(Promise) as ReturnType<WithResolvers>;
    rejected.reject(new Error('no'));
    await expect(rejected.promise).rejects.toThrow('no');
  });

  it('builds the subclass it is called on, as the native one does', () => {
    class Tracked<T> extends Promise<T> {}
    expect((withResolvers.call(Tracked) as ReturnType<WithResolvers>).promise).toBeInstanceOf(Tracked);
  });
});
