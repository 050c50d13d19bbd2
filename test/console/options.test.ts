// controlRoom's options, checked once: a TypeError naming the option, an unknown key naming the
// nearest known one, and the token never in any message.

import { describe, expect, it } from 'vitest';
import { createRedactor } from '../../index.js';
import { controlRoom, type ControlRoomOptions } from '../../integrations/console/index.js';
import { refunds, token } from './room.js';

const make = (options: unknown) => () => controlRoom(options as ControlRoomOptions);

describe('controlRoom() options', () => {
  it('takes a token, the sources, a redactor, a base path, a clock and randomness', async () => {
    const { gate, dispatcher, registry } = refunds();
    const room = controlRoom({
      token,
      gate,
      dispatcher,
      registry,
      redact: createRedactor(),
      basePath: '/ops/console',
      now: () => 0,
      random: (bytes) => new Uint8Array(bytes).fill(7),
    });
    expect(room.basePath).toBe('/ops/console');
    expect(typeof room.handler).toBe('function');
    await room.close();
  });

  it('refuses a missing, short or non-string token without ever showing it', () => {
    const short = 'sk-short-secret';
    expect(make(undefined)).toThrow(new TypeError('controlRoom() needs options with a token'));
    expect(make({})).toThrow(new TypeError('token must be a string, got undefined'));
    expect(make({ token: 42 })).toThrow(new TypeError('token must be a string, got number'));
    expect(make({ token: short })).toThrow(new TypeError('token must be at least 16 characters long'));
    expect(make({ token: 'with a space in the token' })).toThrow(/token must not contain whitespace/);
    for (const options of [{ token: short }, { token: 'with a space in the token' }, { token, tokne: 1 }]) {
      try {
        make(options)();
      } catch (error) {
        expect(String((error as Error).message)).not.toContain(options.token);
      }
    }
  });

  it('rejects an unknown option naming the nearest known one', () => {
    expect(make({ token, bassPath: '/c' })).toThrow(
      new TypeError('controlRoom() got an unknown option "bassPath"; did you mean "basePath"?'),
    );
    expect(make({ token, gates: {} })).toThrow(/did you mean "gate"\?/);
  });

  it('names the option of a bad source, redactor, base path, clock or randomness', () => {
    expect(make({ token, gate: {} })).toThrow(/^gate must have approve\(\), deny\(\), subscribe\(\)/);
    expect(make({ token, health: { report: () => ({}) } })).toThrow(
      /^health must have .* it lacks subscribe$/,
    );
    expect(make({ token, inDoubt: 1 })).toThrow(/^inDoubt must be an object/);
    expect(make({ token, receipts: {} })).toThrow(/^receipts must have/);
    expect(make({ token, dispatcher: {} })).toThrow(/^dispatcher must have dispatch\(\)/);
    expect(make({ token, registry: null })).toThrow(/^registry must be an object/);
    expect(make({ token, redact: {} })).toThrow(/^redact must have/);
    expect(make({ token, now: 5 })).toThrow(new TypeError('now must be a function, got number'));
    expect(make({ token, random: 'x' })).toThrow(new TypeError('random must be a function, got string'));
    for (const basePath of ['console', '/console/', '/', '/a b', '/a/../b', 5]) {
      expect(make({ token, basePath })).toThrow(/^basePath must be a path such as '\/console'/);
    }
  });
});
