// Over HTTPS the session cookie is also `Secure`, and the origin a POST must come from is https://.
// The certificate is made for the test by openssl (self-signed for 127.0.0.1, trusted as the CA).

import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, request, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { controlRoom, type ControlRoom } from '../../integrations/console/index.js';
import { token } from './room.js';

let dir = '';
let cert = '';
let server: Server;
let room: ControlRoom;
let port = 0;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'td-console-tls-'));
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      join(dir, 'key.pem'),
      '-out',
      join(dir, 'cert.pem'),
      '-days',
      '1',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
    ],
    { stdio: 'ignore' },
  );
  cert = readFileSync(join(dir, 'cert.pem'), 'utf8');
  room = controlRoom({ token });
  server = createServer({ key: readFileSync(join(dir, 'key.pem')), cert }, room.handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});

afterAll(async () => {
  await room?.close();
  server?.closeAllConnections();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  if (dir !== '') rmSync(dir, { recursive: true, force: true });
});

function post(path: string, headers: Record<string, string>, body: string) {
  return new Promise<{
    status: number;
    headers: Record<string, string | string[] | undefined>;
    text: string;
  }>((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method: 'POST', ca: cert, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        text += chunk;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('the console over HTTPS', () => {
  it('marks the session cookie Secure and takes POSTs from its https:// origin only', async () => {
    const origin = `https://127.0.0.1:${port}`;
    const login = await post(
      '/console/login',
      { 'content-type': 'application/json', origin },
      JSON.stringify({ token, name: 'ana' }),
    );
    expect(login.status).toBe(200);
    const [cookie] = login.headers['set-cookie'] as string[];
    expect(cookie).toMatch(/; HttpOnly; SameSite=Strict; Path=\/console; Secure$/);
    const session = (cookie as string).split(';')[0] as string;
    const csrf = (JSON.parse(login.text) as { csrf: string }).csrf;
    const headers = { cookie: session, 'x-csrf-token': csrf, 'content-type': 'application/json' };
    const plain = await post(
      '/console/api/approvals/t/deny',
      { ...headers, origin: `http://127.0.0.1:${port}` },
      '{}',
    );
    expect(plain.status).toBe(403);
    const own = await post('/console/api/approvals/t/deny', { ...headers, origin }, '{}');
    expect(own.status).toBe(501);
  });
});
