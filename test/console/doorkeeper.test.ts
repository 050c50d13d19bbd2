// The console's keys without a server: sessions bounded in number (least recently used first),
// failed logins counted per address in a sliding minute, and ids drawn from the injected randomness.

import { describe, expect, it } from 'vitest';
import { Doorkeeper, maxSessions } from '../../integrations/console/auth.js';
import { HttpProblem } from '../../integrations/console/http.js';
import { manualClock, token } from './room.js';

function counterRandom() {
  let drawn = 0;
  return (bytes: number) => {
    drawn += 1;
    const out = new Uint8Array(bytes);
    new DataView(out.buffer).setUint32(0, drawn);
    return out;
  };
}

describe('the console doorkeeper', () => {
  it('keeps at most 1 000 sessions, dropping the least recently used', () => {
    const clock = manualClock();
    const keys = new Doorkeeper(token, clock.now, counterRandom());
    const ids = Array.from({ length: maxSessions }, (_, i) => keys.open(`p${i}`).id);
    clock.at += 1;
    expect(keys.session(ids[0] as string)?.name).toBe('p0');
    keys.open('late');
    expect(keys.session(ids[0] as string)?.name).toBe('p0');
    expect(keys.session(ids[1] as string)).toBeUndefined();
    expect(keys.session(ids[2] as string)?.name).toBe('p2');
  });

  it('counts failed logins per address over a sliding minute', () => {
    const clock = manualClock();
    const keys = new Doorkeeper(token, clock.now, counterRandom());
    for (let i = 0; i < 5; i++) {
      keys.checkLoginAllowed('10.0.0.1');
      keys.loginFailed('10.0.0.1');
      clock.at += 10_000;
    }
    expect(() => keys.checkLoginAllowed('10.0.0.1')).toThrow(HttpProblem);
    keys.checkLoginAllowed('10.0.0.2');
    // The first failure leaves the window 60 s after it: one more attempt is let in.
    clock.at += 10_001;
    keys.checkLoginAllowed('10.0.0.1');
  });

  it('draws session ids and CSRF tokens from the injected randomness, and refuses a short draw', () => {
    const keys = new Doorkeeper(token, Date.now, counterRandom());
    const first = keys.open('ana');
    expect(first.id).toBe(Buffer.from([0, 0, 0, 1, ...new Array(28).fill(0)]).toString('base64url'));
    expect(first.session.csrf).not.toBe(first.id);
    const short = new Doorkeeper(token, Date.now, () => new Uint8Array(4));
    expect(() => short.open('ana')).toThrow(
      new TypeError('random(bytes) must return a Uint8Array of that many bytes'),
    );
  });

  it('tells the token from anything else, whatever its length', () => {
    const keys = new Doorkeeper(token, Date.now, counterRandom());
    expect(keys.isToken(token)).toBe(true);
    for (const other of ['', 'x', `${token}x`, token.slice(0, -1), 42, undefined]) {
      expect(keys.isToken(other)).toBe(false);
    }
  });
});
