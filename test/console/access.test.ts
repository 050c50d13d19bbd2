// Who gets into the console: the token (bearer or one login), sessions with a CSRF token and an idle
// expiry, the limit on failed logins, 401s that say nothing, and the headers on every answer.

import { existsSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { contentSecurityPolicy } from '../../integrations/console/http.js';
import { bearer, manualClock, refunds, serve, type Served, token } from './room.js';

let served: Served | undefined;
afterEach(async () => {
  await served?.stop();
  served = undefined;
});

describe('the console login', () => {
  it('opens a session for the right token: an HttpOnly, SameSite=Strict cookie and a CSRF token', async () => {
    served = await serve({ gate: refunds().gate });
    const answer = await served.call('/console/login', {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: served.origin },
      body: JSON.stringify({ token, name: 'ana' }),
    });
    expect(answer.status).toBe(200);
    expect(answer.json).toEqual({ csrf: expect.any(String), name: 'ana' });
    const cookie = answer.headers.get('set-cookie') as string;
    expect(cookie).toMatch(/^td_console=[A-Za-z0-9_-]{40,}; HttpOnly; SameSite=Strict; Path=\/console$/);
    expect(cookie).not.toContain(token);
    const session = await served.call('/console/api/session', {
      headers: { cookie: cookie.split(';')[0] as string },
    });
    expect(session.json).toEqual({
      csrf: answer.json.csrf,
      name: 'ana',
      panes: { approvals: true, health: false, inDoubt: false },
    });
  });

  it('answers a wrong token 401 with no detail, and sets no cookie', async () => {
    served = await serve();
    const answer = await served.call('/console/login', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ token: 'not-the-token-at-all' }),
    });
    expect(answer.status).toBe(401);
    expect(answer.text).toBe('{"error":"unauthorized"}');
    expect(answer.headers.get('set-cookie')).toBeNull();
  });

  it('refuses a sixth failed login in a minute from one address with 429 and Retry-After, then lets it in after', async () => {
    const clock = manualClock();
    served = await serve({ now: clock.now });
    const attempt = (given: string) =>
      (served as Served).call('/console/login', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ token: given }),
      });
    for (let i = 0; i < 5; i++) {
      expect((await attempt('wrong-token-000000')).status).toBe(401);
      clock.at += 1_000;
    }
    const refused = await attempt(token);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('55');
    expect(refused.json.error).toBe('too_many_attempts');
    clock.at += 55_000;
    expect((await attempt(token)).status).toBe(200);
  });

  it('takes a urlencoded form without JavaScript: 303 back to the page with the cookie, or the page with a notice', async () => {
    served = await serve();
    const form = (given: string) =>
      (served as Served).call('/console/login', {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', origin: (served as Served).origin },
        body: new URLSearchParams({ token: given, name: 'bo' }).toString(),
      });
    const wrong = await form('wrong-token-000000');
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get('content-type')).toContain('text/html');
    expect(wrong.text).toContain('The token was not accepted.');
    const right = await form(token);
    expect(right.status).toBe(303);
    expect(right.headers.get('location')).toBe('/console/');
    const cookie = (right.headers.get('set-cookie') as string).split(';')[0] as string;
    expect((await served.call('/console/api/session', { headers: { cookie } })).json.name).toBe('bo');
  });

  it('ends a session after 12 hours idle, and keeps one in use alive', async () => {
    const clock = manualClock();
    served = await serve({ now: clock.now });
    const idle = await served.login();
    const busy = await served.login();
    for (let hour = 0; hour < 13; hour++) {
      clock.at += 60 * 60 * 1000 - 1;
      expect((await served.call('/console/healthz', { headers: { cookie: busy.cookie } })).status).toBe(200);
    }
    expect((await served.call('/console/healthz', { headers: { cookie: idle.cookie } })).status).toBe(401);
  });

  it('logs out: 204, the cookie cleared and the session gone', async () => {
    served = await serve();
    const session = await served.login();
    const out = await served.call('/console/logout', {
      method: 'POST',
      headers: { cookie: session.cookie, origin: served.origin },
    });
    expect(out.status).toBe(204);
    expect(out.headers.get('set-cookie')).toContain('Max-Age=0');
    expect((await served.call('/console/healthz', { headers: { cookie: session.cookie } })).status).toBe(401);
  });
});

describe('the console API', () => {
  it('answers 401 with no detail without a token or a session, and with a wrong one', async () => {
    served = await serve({ gate: refunds().gate });
    for (const headers of [
      {},
      { authorization: 'Bearer not-the-console-token' },
      { authorization: `Basic ${token}` },
      { cookie: 'td_console=made-up-session-id' },
    ]) {
      for (const path of [
        '/console/healthz',
        '/console/api/approvals',
        '/console/api/events',
        '/console/api/nope',
      ]) {
        const answer = await served.call(path, { headers });
        expect(answer.status).toBe(401);
        expect(answer.text).toBe('{"error":"unauthorized"}');
      }
    }
  });

  it('lets a script in with the bearer token, without Origin or CSRF', async () => {
    const { gate } = refunds();
    served = await serve({ gate });
    expect((await served.call('/console/healthz', { headers: bearer })).json).toEqual({ ok: true });
    const denied = await served.call('/console/api/approvals/unknown-token/deny', {
      method: 'POST',
      headers: { ...bearer, 'content-type': 'application/json' },
      body: JSON.stringify({ reason: 'no' }),
    });
    expect(denied.status).toBe(404);
  });

  it('refuses a POST with the cookie from another origin, without Origin, or without the CSRF token (403)', async () => {
    const { gate } = refunds();
    served = await serve({ gate });
    const session = await served.login();
    const post = (headers: Record<string, string>) =>
      (served as Served).call('/console/api/approvals/some-token/deny', {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify({ reason: 'no' }),
      });
    const good = served.sessionPost(session);
    const { origin: _origin, ...noOrigin } = good;
    const { 'x-csrf-token': _csrf, ...noCsrf } = good;
    for (const headers of [
      { ...good, origin: 'http://evil.example' },
      noOrigin,
      noCsrf,
      { ...good, 'x-csrf-token': 'x'.repeat(43) },
    ]) {
      const answer = await post(headers);
      expect(answer.status).toBe(403);
      expect(answer.json.error).toBe('forbidden');
    }
    expect((await post(good)).status).toBe(404);
  });

  it('caps bodies at 64 KB (413) and takes only JSON (415)', async () => {
    served = await serve({ gate: refunds().gate });
    const path = '/console/api/approvals/t/deny';
    const big = await served.call(path, {
      method: 'POST',
      headers: { ...bearer, 'content-type': 'application/json' },
      body: JSON.stringify({ reason: 'x'.repeat(70 * 1024) }),
    });
    expect(big.status).toBe(413);
    const plain = await served.call(path, {
      method: 'POST',
      headers: { ...bearer, 'content-type': 'text/plain' },
      body: 'reason',
    });
    expect(plain.status).toBe(415);
    const form = await served.call(path, {
      method: 'POST',
      headers: { ...bearer, 'content-type': 'application/x-www-form-urlencoded' },
      body: 'reason=no',
    });
    expect(form.status).toBe(415);
    const broken = await served.call(path, {
      method: 'POST',
      headers: { ...bearer, 'content-type': 'application/json' },
      body: '{"reason":',
    });
    expect(broken.status).toBe(400);
    expect(broken.json).toEqual({ error: 'bad_json', message: 'the body is not valid JSON' });
  });

  it('puts the security headers on every answer', async () => {
    served = await serve();
    for (const [path, headers] of [
      ['/console', {}],
      ['/console/healthz', bearer],
      ['/console/healthz', {}],
      ['/console/api/nope', bearer],
    ] as const) {
      const answer = await served.call(path, { headers });
      expect(answer.headers.get('cache-control')).toBe('no-store');
      expect(answer.headers.get('x-content-type-options')).toBe('nosniff');
      expect(answer.headers.get('referrer-policy')).toBe('no-referrer');
      expect(answer.headers.get('content-security-policy')).toBe(contentSecurityPolicy);
    }
  });

  it('answers only under its base path: next() for the rest, else 404', async () => {
    served = await serve({ basePath: '/ops/console' });
    expect((await served.call('/console', {})).status).toBe(404);
    expect((await served.call('/ops/consoles', {})).status).toBe(404);
    expect((await served.call('/ops/console/healthz', { headers: bearer })).status).toBe(200);
    let passed = 0;
    served.room.handler({ url: '/elsewhere', headers: {}, method: 'GET' } as never, {} as never, () => {
      passed += 1;
    });
    expect(passed).toBe(1);
  });
});

describe('the console page', () => {
  it('serves the HTML shell: a login form that works without JS, an empty main, the two assets, nothing inline', async () => {
    served = await serve();
    for (const path of ['/console', '/console/']) {
      const page = await served.call(path);
      expect(page.status).toBe(200);
      expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
      expect(page.text).toContain('<form method="post" action="/console/login"');
      expect(page.text).toContain('<main id="app"></main>');
      expect(page.text).toContain('<link rel="stylesheet" href="/console/assets/app.css">');
      expect(page.text).toContain('<script type="module" src="/console/assets/app.js"></script>');
      expect(page.text).not.toMatch(/<script(?![^>]*\ssrc=)[^>]*>|<style|\sstyle=|\son[a-z]+=/i);
    }
  });

  it('serves app.js and app.css when built, else 503 in one line; no other name', async () => {
    served = await serve();
    const built = existsSync(new URL('../../dist/console-page/app.js', import.meta.url));
    const script = await served.call('/console/assets/app.js');
    if (built) {
      expect(script.status).toBe(200);
      expect(script.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    } else {
      expect(script.status).toBe(503);
      expect(script.json).toEqual({
        error: 'not_built',
        message: 'the console page is not built: run npm run build',
      });
    }
    // The URL parser folds `..` first: the path lands outside the assets, behind the token.
    expect((await served.call('/console/assets/../server.ts')).status).toBe(401);
    for (const path of [
      '/console/assets/%2e%2e%2fserver.ts',
      '/console/assets/..%2Fhttp.ts',
      '/console/assets/index.html',
      '/console/assets/app.js.map',
    ]) {
      expect((await served.call(path)).status).toBe(404);
    }
  });
});
