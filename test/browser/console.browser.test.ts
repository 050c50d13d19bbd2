// The console page in a real browser, as a reviewer uses it: Chromium from the system's packages
// (/usr/bin/chromium) driven by playwright-core, against a real console over a real dispatcher.
// `npm run test:browser` (or .ci/browser.sh, which installs Chromium when it is missing).

import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type BrowserContext, chromium, type Locator, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Outcome } from '../../index.js';
import { consoleToken, liveKey, startConsole, type ToolRuns } from './console-fixture.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const images = join(root, 'docs/images');
const chromiumPath = process.env['TD_CHROMIUM'] ?? '/usr/bin/chromium';
const soon = { timeout: 10_000, interval: 50 };

const runs: ToolRuns = { refunds: [], bankAnswers: false };
let fixture: Awaited<ReturnType<typeof startConsole>>;
let context: BrowserContext;
let page: Page;
let profile: string;
const tokens = new Map<string, string>();

function tokenOf(outcome: Outcome): string {
  if (outcome.ok || outcome.approval === undefined)
    throw new Error(`expected a pause, got ${JSON.stringify(outcome)}`);
  return outcome.approval.token;
}

async function pauseRefund(callId: string, orderId: string): Promise<void> {
  const args = { orderId, amount: 250, note: `customer key ${liveKey}` };
  const outcome = await fixture.dispatcher.dispatch('payments.refund', args, { callId, tenant: 'acme' });
  tokens.set(callId, tokenOf(outcome));
}

const rowOf = (text: string): Locator => page.getByRole('row').filter({ hasText: text });

async function showsNoSecret(): Promise<void> {
  expect(await page.content()).not.toContain(liveKey.slice(3));
  expect(await page.content()).not.toContain(consoleToken);
}

async function shoot(name: string): Promise<void> {
  await page.screenshot({ path: join(images, `console-${name}.png`), fullPage: false });
}

beforeAll(async () => {
  // The page the console serves is the one built from these sources.
  execFileSync(process.execPath, [join(root, 'scripts/build-console.mjs')], { stdio: 'pipe' });
  mkdirSync(images, { recursive: true });
  fixture = await startConsole(runs);
  profile = mkdtempSync(join(tmpdir(), 'td-console-chromium-'));
  context = await chromium.launchPersistentContext(profile, {
    executablePath: chromiumPath,
    headless: true,
    viewport: { width: 1280, height: 800 },
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  page = context.pages()[0] ?? (await context.newPage());
  page.setDefaultTimeout(soon.timeout);
});

afterAll(async () => {
  await context?.close();
  await fixture?.close();
  if (profile !== undefined) rmSync(profile, { recursive: true, force: true });
});

describe('the console page in Chromium', () => {
  it('refuses a wrong token, then logs in through the form and keeps the session across a reload', async () => {
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    // A refused request (the 401s of the first session check and the wrong token) is logged by the
    // browser as a failed resource: those are answers, not errors of the page.
    page.on('console', (message) => {
      if (message.type() === 'error' && !message.text().startsWith('Failed to load resource'))
        errors.push(message.text());
    });
    await page.goto(fixture.url);
    await shoot('login');
    await page.getByLabel('Console token').fill('not-the-console-token-at-all');
    await page.getByRole('button', { name: 'Log in' }).click();
    await expect.poll(() => page.getByRole('alert').first().textContent(), soon).toContain('not right');
    await page.getByLabel('Console token').fill(consoleToken);
    await page.getByLabel('Your name').fill('ana');
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByText('Signed in as ana').waitFor(soon);
    expect(await page.getByLabel('Console token').inputValue()).toBe('');
    // The CSRF token lives in memory only: nothing in storage, nothing in the URL.
    expect(await page.evaluate('localStorage.length + sessionStorage.length')).toBe(0);
    expect(page.url()).toBe(fixture.url);
    await page.reload();
    await page.getByText('Signed in as ana').waitFor(soon);
    await expect.poll(() => page.locator('.live').textContent(), soon).toBe('Live');
    expect(errors).toEqual([]);
  });

  it('shows paused refunds with their args redacted, live as they pause', async () => {
    await pauseRefund('call-approve', 'o-1');
    await pauseRefund('call-deny', 'o-2');
    await pauseRefund('call-edit', 'o-3');
    await rowOf('call-edit').waitFor(soon);
    const row = rowOf('call-approve');
    expect(await row.textContent()).toContain('"orderId": "o-1"');
    expect(await row.textContent()).toContain('[REDACTED');
    expect(await row.textContent()).toContain('acme');
    expect(await page.getByRole('tab', { name: /Approvals/ }).textContent()).toContain('3');
    await showsNoSecret();
    await shoot('approvals');
  });

  it('says it is reconnecting when the stream drops, and shows what paused meanwhile once back', async () => {
    const live = page.locator('.live');
    fixture.dropConnections();
    await expect.poll(() => live.textContent(), soon).toBe('Reconnecting…');
    await pauseRefund('call-while-away', 'o-9');
    await expect.poll(() => live.textContent(), soon).toBe('Live');
    await rowOf('call-while-away').waitFor(soon);
    await rowOf('call-while-away').getByRole('button', { name: /^Deny/ }).click();
    await rowOf('call-while-away').getByLabel('Reason for denying').fill('duplicate of o-1');
    await rowOf('call-while-away').getByRole('button', { name: 'Send denial' }).click();
    await rowOf('call-while-away').waitFor({ state: 'detached', ...soon });
  });

  it('approves a refund once on a double click, and the approved call runs the tool once', async () => {
    const token = tokens.get('call-approve') as string;
    const posts: string[] = [];
    page.on('request', (request) => request.method() === 'POST' && posts.push(request.url()));
    await rowOf('call-approve')
      .getByRole('button', { name: /^Approve/ })
      .dblclick();
    await rowOf('call-approve').waitFor({ state: 'detached', ...soon });
    expect(posts.filter((url) => url.endsWith(`/approvals/${token}/approve`))).toHaveLength(1);
    await expect
      .poll(() => page.locator('#panel-approvals [role=status]').textContent(), soon)
      .toContain('call-approve');
    const args = { orderId: 'o-1', amount: 250, note: `customer key ${liveKey}` };
    const delivered = await Promise.all([
      fixture.dispatcher.dispatch('payments.refund', args, { callId: 'call-approve', approval: token }),
      fixture.dispatcher.dispatch('payments.refund', args, { callId: 'call-approve', approval: token }),
    ]);
    expect(delivered.map((outcome) => outcome.ok)).toEqual([true, true]);
    expect(runs.refunds).toEqual(['o-1']);
    const audit = (await (
      await fetch(`${fixture.url}/api/audit?token=${token}`, {
        headers: { authorization: `Bearer ${consoleToken}` },
      })
    ).json()) as { items: { decision: string; by: string }[] };
    expect(audit.items).toMatchObject([{ decision: 'approved', by: 'ana' }]);
  });

  it('denies a refund with a reason, and the denied call never runs', async () => {
    const row = rowOf('call-deny');
    await row.getByRole('button', { name: /^Deny/ }).click();
    await row.getByLabel('Reason for denying').fill('over the refund limit');
    await row.getByRole('button', { name: 'Send denial' }).click();
    await row.waitFor({ state: 'detached', ...soon });
    const args = { orderId: 'o-2', amount: 250, note: `customer key ${liveKey}` };
    const outcome = await fixture.dispatcher.dispatch('payments.refund', args, {
      callId: 'call-deny',
      approval: tokens.get('call-deny') as string,
    });
    expect(outcome.ok ? 'ran' : outcome.kind).toBe('approval_denied');
    expect(runs.refunds).toEqual(['o-1']);
  });

  it("shows the schema's message on the row when edited args fail it, and approves valid ones", async () => {
    const row = rowOf('call-edit');
    await row.getByRole('button', { name: /^Edit/ }).click();
    const editor = row.getByLabel('Edited args (JSON)');
    expect(JSON.parse(await editor.inputValue())).toMatchObject({ orderId: 'o-3', amount: 250 });
    await editor.fill(JSON.stringify({ orderId: 'o-3', amount: -5, note: 'half' }));
    await row.getByRole('button', { name: 'Approve edited' }).click();
    await expect.poll(() => row.getByRole('alert').textContent(), soon).toMatch(/schema.*amount/i);
    await editor.fill(JSON.stringify({ orderId: 'o-3', amount: 125, note: 'half' }));
    await row.getByRole('button', { name: 'Approve edited' }).click();
    await row.waitFor({ state: 'detached', ...soon });
    const edited = { orderId: 'o-3', amount: 125, note: 'half' };
    const token = tokens.get('call-edit') as string;
    const outcome = await fixture.dispatcher.dispatch('payments.refund', edited, {
      callId: 'call-edit',
      approval: token,
    });
    expect(outcome.ok).toBe(true);
    expect(runs.refunds).toEqual(['o-1', 'o-3']);
    expect(await page.getByText('Nothing awaits approval.').count()).toBe(1);
  });

  // The page's stream would remove such a row before anyone could click: the fixture holds the
  // store's decisions from the stream, so the click reaches the server first.
  it('says "Expired or unknown" on a row whose request expired before the page heard of it', async () => {
    fixture.approvals.hold();
    try {
      await pauseRefund('call-expiring', 'o-4');
      const row = rowOf('call-expiring');
      await row.waitFor(soon);
      // Past the gate's one-hour token: the store forgets the request at its next read.
      fixture.approvals.advance(3_600_001);
      await row.getByRole('button', { name: /^Approve/ }).click();
      await expect
        .poll(() => row.getByRole('alert').textContent(), soon)
        .toBe('Expired or unknown: no request has this token: it is unknown or has expired');
      expect(await row.getByRole('button', { name: /^Approve/ }).isEnabled()).toBe(true);
    } finally {
      fixture.approvals.release();
    }
    // The stream catches up: the expiry removes the row and says so.
    await rowOf('call-expiring').waitFor({ state: 'detached', ...soon });
    await expect
      .poll(() => page.locator('#panel-approvals [role=status]').textContent(), soon)
      .toContain('call-expiring) was expired by store');
    expect(runs.refunds).toEqual(['o-1', 'o-3']);
  });

  it('says "Already answered" on a row denied elsewhere before the page heard of it, and runs nothing', async () => {
    fixture.approvals.hold();
    try {
      await pauseRefund('call-elsewhere', 'o-5');
      const row = rowOf('call-elsewhere');
      await row.waitFor(soon);
      const token = tokens.get('call-elsewhere') as string;
      expect(await fixture.gate.deny(token, 'refunded by phone', { by: 'bo', channel: 'host' })).toBe(true);
      await row.getByRole('button', { name: /^Approve/ }).click();
      await expect
        .poll(() => row.getByRole('alert').textContent(), soon)
        .toBe('Already answered: this request was already denied');
    } finally {
      fixture.approvals.release();
    }
    await rowOf('call-elsewhere').waitFor({ state: 'detached', ...soon });
    await expect
      .poll(() => page.locator('#panel-approvals [role=status]').textContent(), soon)
      .toContain('call-elsewhere) was denied by bo via host');
    const args = { orderId: 'o-5', amount: 250, note: `customer key ${liveKey}` };
    const outcome = await fixture.dispatcher.dispatch('payments.refund', args, {
      callId: 'call-elsewhere',
      approval: tokens.get('call-elsewhere') as string,
    });
    expect(outcome.ok ? 'ran' : outcome.kind).toBe('approval_denied');
    expect(runs.refunds).toEqual(['o-1', 'o-3']);
    expect(await page.getByText('Nothing awaits approval.').count()).toBe(1);
  });

  it('shows tool health after a burst of calls and a tripped breaker', async () => {
    await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        fixture.dispatcher.dispatch(
          'orders.lookup',
          { orderId: `o-${i}` },
          { tenant: i % 2 ? 'globex' : 'acme' },
        ),
      ),
    );
    for (let i = 0; i < 4; i++) await fixture.dispatcher.dispatch('search.web', { q: `query ${i}` });
    await page.getByRole('tab', { name: /Tool health/ }).click();
    const lookups = rowOf('orders.lookup');
    await expect.poll(() => lookups.locator('td').nth(1).textContent(), soon).toBe('20');
    expect(await lookups.textContent()).toMatch(/ok 1\d/);
    expect(await lookups.textContent()).toMatch(/rate_limited \d/);
    expect(await lookups.textContent()).toMatch(/\d+ waits, [1-9]\d* refused/);
    expect(await lookups.textContent()).toMatch(/acme: \d+ spent/);
    await expect.poll(() => rowOf('search.web').locator('.badge').textContent(), soon).toBe('open');
    await showsNoSecret();
    await shoot('health');
  });

  it('reconciles a charge in doubt, and marks a payout without reconcile resolved with a note', async () => {
    const charge = await fixture.dispatcher.dispatch(
      'payments.charge',
      { amount: 25 },
      { idempotencyKey: 'order-1042' },
    );
    const payout = await fixture.dispatcher.dispatch(
      'payments.payout',
      { amount: 40 },
      { idempotencyKey: 'payout-77' },
    );
    expect([charge.ok, payout.ok]).toEqual([false, false]);
    await page.getByRole('tab', { name: /In doubt/ }).click();
    await rowOf('order-1042').waitFor(soon);
    await rowOf('payout-77').waitFor(soon);
    await showsNoSecret();
    await shoot('in-doubt');
    runs.bankAnswers = true;
    await rowOf('order-1042')
      .getByRole('button', { name: /^Reconcile/ })
      .click();
    await rowOf('order-1042').waitFor({ state: 'detached', ...soon });
    const status = page.locator('#panel-in-doubt [role=status]');
    await expect.poll(() => status.textContent(), soon).toContain('committed, now succeeded');
    const payoutRow = rowOf('payout-77');
    await payoutRow.getByRole('button', { name: /^Mark/ }).click();
    await payoutRow.getByLabel('Note (what you checked)').fill('no payout in the bank statement');
    await payoutRow.getByRole('button', { name: 'Resolve', exact: true }).click();
    await payoutRow.waitFor({ state: 'detached', ...soon });
    await expect.poll(() => status.textContent(), soon).toContain('resolved');
    expect((await fixture.receipts.get('order-1042'))?.status).toBe('succeeded');
  });

  it('signs out: the login form again, also after a reload', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('Console token').waitFor(soon);
    expect(await page.getByText('Signed in as ana').count()).toBe(0);
    await page.reload();
    await page.getByLabel('Console token').waitFor(soon);
    expect(await page.locator('#app').textContent()).toBe('');
  });
});
