/**
 * `Promise.withResolvers` on Node 20, where it is missing: the Restate SDK (1.15 to 1.17) calls it
 * on every invocation. Installed once, when tool-dispatcher/restate is first imported; a runtime
 * that has it (Node 22 and later) keeps its own.
 * @module
 */

interface Resolvers<T> {
  promise: Promise<T>;
  resolve: (value: T | PromiseLike<T>) => void;
  reject: (reason?: unknown) => void;
}

const promiseConstructor = Promise as PromiseConstructor & { withResolvers?: <T>() => Resolvers<T> };

if (typeof promiseConstructor.withResolvers !== 'function') {
  Object.defineProperty(Promise, 'withResolvers', {
    configurable: true,
    writable: true,
    // Called on a subclass it must build that subclass, as the native one does.
    value: function withResolvers<T>(this: PromiseConstructor): Resolvers<T> {
      let resolve!: Resolvers<T>['resolve'];
      let reject!: Resolvers<T>['reject'];
      const promise = new this<T>((onResolve, onReject) => {
        resolve = onResolve;
        reject = onReject;
      });
      return { promise, resolve, reject };
    },
  });
}

export {};
