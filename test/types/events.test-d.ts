import { describe, expectTypeOf, it } from 'vitest';
import type {
  CustomDispatchEvent,
  DispatchContext,
  DispatchError,
  DispatchErrorKind,
  DispatchEvent,
} from '../../index.js';

// A third-party layer declares its own event, as docs/writing-middleware.md shows.
declare module '../../index.js' {
  interface DispatchEventDetails {
    /** A test layer waited `waitedMs`. */
    'test_layer.waited': { readonly waitedMs: number };
  }
}

declare const event: DispatchEvent;
declare const ctx: DispatchContext;

describe('events narrow on type', () => {
  it('types a library event’s details once its type is checked, with no cast', () => {
    if (event.type === 'dispatch.retry') {
      expectTypeOf(event.delayMs).toEqualTypeOf<number>();
      expectTypeOf(event.kind).toEqualTypeOf<DispatchErrorKind>();
    }
    switch (event.type) {
      case 'dispatch.attempt_failed':
        expectTypeOf(event.error).toEqualTypeOf<DispatchError>();
        break;
      case 'idempotency.hit':
        expectTypeOf(event.source).toEqualTypeOf<'cache' | 'in_flight'>();
        break;
    }
    ctx.listen((heard) => {
      if (heard.type === 'circuit.open') expectTypeOf(heard.cooldownMs).toEqualTypeOf<number>();
    });
  });

  it('narrows a declared third-party event the same way', () => {
    if (event.type === 'test_layer.waited') expectTypeOf(event.waitedMs).toEqualTypeOf<number>();
    ctx.emit('test_layer.waited', { waitedMs: 5 });
    // @ts-expect-error -- a declared event's details are checked
    ctx.emit('test_layer.waited', { waitedMs: '5' });
  });

  it('still emits an undeclared type, and a listener that asks for one reads it by name', () => {
    ctx.emit('cache.hit', { key: 'k' });
    ctx.emit('cache.miss');
    const dynamic: string = 'layer.whatever';
    ctx.emit(dynamic, { note: 1 });
    const onEvent = (heard: DispatchEvent | CustomDispatchEvent) => {
      if (heard.type === 'cache.hit') expectTypeOf(heard.key).toEqualTypeOf<unknown>();
      expectTypeOf(heard.type).toExtend<string>();
    };
    onEvent(event);
  });

  it('checks the details of a library event whoever emits it', () => {
    ctx.emit('dispatch.attempt');
    ctx.emit('dispatch.retry', { delayMs: 100, kind: 'transient' });
    // @ts-expect-error -- `delayMs` is missing
    ctx.emit('dispatch.retry', { kind: 'transient' });
    // @ts-expect-error -- a library type cannot slip through the undeclared overload
    ctx.emit('dispatch.retry', { note: 'spoof' });
    // @ts-expect-error -- its details are required
    ctx.emit('dispatch.timeout');
  });

  it('keeps an event’s type a string', () => {
    expectTypeOf(event.type).toExtend<string>();
  });
});
