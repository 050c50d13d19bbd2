// The stores contract: one suite every implementation of src/stores.ts must pass (memory, Redis via node-redis, Redis via ioredis).

import { describe, expect, it } from 'vitest';
import type {
  CircuitRecord,
  CircuitStore,
  IdempotencyLease,
  IdempotencyStore,
  SlotPermit,
  SlotStore,
  StoreBudget,
} from '../../index.js';
import { keepLeaseAlive } from '../../src/stores.js';
import type { ApprovalRequest, ApprovalStore } from '../../middleware/index.js';

/** The stores under test and how to move their time. */
export interface StoreSubject {
  /**
   * Two views of one fresh idempotency namespace, as two processes would have them (the memory
   * store: the same instance twice).
   */
  idempotency(options: {
    leaseMs: number;
    onStoreReset?: 'fail' | 'continue';
  }): [IdempotencyStore, IdempotencyStore];
  /** Two views of one fresh pool. */
  slots(options: { max: number; leaseMs: number }): [SlotStore, SlotStore];
  /** Two views of one fresh circuit namespace. */
  circuits(): [CircuitStore, CircuitStore];
  /** Two views of one fresh approval namespace. */
  approvals(): [ApprovalStore, ApprovalStore];
  /** A fresh budget (`id` unique per call unless `join` names one made before). */
  budget(options: { limit: number; join?: string }): Promise<StoreBudget & { id: string }>;
  /** Lets `ms` of the store's time pass (a fake clock, or real time for a server's clock). */
  wait(ms: number): Promise<void>;
  /** The timers `keepLeaseAlive` should use with these stores. */
  timers?: { setTimeout(callback: () => void, ms: number): unknown; clearTimeout(handle: unknown): void };
  /** What this implementation can show (an in-process store cannot lose a lease to a crash, nor be resent). */
  can: {
    /** Idempotency leases of finite `leaseMs` lapse. */
    idempotencyLeases: boolean;
    /** Slot permits lapse after `leaseMs`. */
    slotLeases: boolean;
    /** Operations can be sent twice with the same token or id. */
    resend: boolean;
  };
  /** Restarts the backing store empty (the Redis stores' epoch check). */
  restartEmpty?: () => Promise<void>;
}

const fp = 'v1:1:2';
const other = 'v1:3:4';
const neverAborts = new AbortController().signal;

async function leadOf(store: IdempotencyStore, key: string, print = fp): Promise<IdempotencyLease> {
  const claim = await store.claim(key, print);
  if (claim.kind !== 'lead') throw new Error(`expected a lead, got ${claim.kind}`);
  return claim.lease;
}

async function rejection(promise: () => unknown): Promise<unknown> {
  try {
    await promise();
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

/** Runs the contract against `make()`'s stores. */
export function storeContract(name: string, make: () => StoreSubject): void {
  describe(`${name}: the stores contract`, () => {
    describe('IdempotencyStore', () => {
      it('leads the first claim, follows the next with the same fingerprint, and conflicts on another', async () => {
        const [a, b] = make().idempotency({ leaseMs: 10_000 });
        const lease = await leadOf(a, 'k');
        expect(lease.key).toBe('k');
        const follow = await b.claim('k', fp);
        expect(follow).toMatchObject({ kind: 'follow', fence: lease.fence });
        expect((await b.claim('k', other)).kind).toBe('conflict');
      });

      it('serves a completed result as a hit for its fingerprint and conflicts for another', async () => {
        const [a, b] = make().idempotency({ leaseMs: 10_000 });
        const lease = await leadOf(a, 'k');
        expect(await a.complete(lease, { charged: 42 }, 60_000)).toEqual({ kind: 'stored' });
        const hit = await b.claim('k', fp);
        expect(hit).toMatchObject({ kind: 'hit', result: { charged: 42 } });
        if (hit.kind === 'hit') expect(hit.expiresInMs).toBeGreaterThan(0);
        if (hit.kind === 'hit') expect(hit.expiresInMs).toBeLessThanOrEqual(60_000);
        expect((await b.claim('k', other)).kind).toBe('conflict');
      });

      it('keeps an undefined result as a hit', async () => {
        const [a, b] = make().idempotency({ leaseMs: 10_000 });
        const lease = await leadOf(a, 'k');
        await a.complete(lease, undefined, 60_000);
        expect(await b.claim('k', fp)).toMatchObject({ kind: 'hit', result: undefined });
      });

      it('frees a released key so that the next claim leads with a greater fence', async () => {
        const [a, b] = make().idempotency({ leaseMs: 10_000 });
        const first = await leadOf(a, 'k');
        await a.release(first);
        const second = await leadOf(b, 'k');
        expect(second.fence).toBeGreaterThan(first.fence);
        // The old holder's release never frees the new holder's claim.
        await a.release(first);
        expect((await a.claim('k', fp)).kind).toBe('follow');
      });

      it('wakes a follower when the leader completes, and when it releases', async () => {
        const [a, b] = make().idempotency({ leaseMs: 10_000 });
        const lease = await leadOf(a, 'k');
        const follow = await b.claim('k', fp);
        if (follow.kind !== 'follow') throw new Error('expected follow');
        const woke = Promise.resolve(
          b.changed('k', follow.fence, { signal: neverAborts, timeoutMs: 60_000 }),
        );
        await a.complete(lease, 'done', 60_000);
        await woke;
        expect(await b.claim('k', fp)).toMatchObject({ kind: 'hit', result: 'done' });

        const again = await leadOf(a, 'k2');
        const follow2 = await b.claim('k2', fp);
        if (follow2.kind !== 'follow') throw new Error('expected follow');
        const woke2 = Promise.resolve(
          b.changed('k2', follow2.fence, { signal: neverAborts, timeoutMs: 60_000 }),
        );
        await a.release(again);
        await woke2;
        expect((await b.claim('k2', fp)).kind).toBe('lead');
      });

      it('never misses a change that happened before the follower started waiting', async () => {
        const [a, b] = make().idempotency({ leaseMs: 10_000 });
        const lease = await leadOf(a, 'k');
        const follow = await b.claim('k', fp);
        if (follow.kind !== 'follow') throw new Error('expected follow');
        await a.complete(lease, 1, 60_000);
        await b.changed('k', follow.fence, { signal: neverAborts, timeoutMs: 60_000 });
        expect((await b.claim('k', fp)).kind).toBe('hit');
      });

      it('stops waiting when the signal aborts', async () => {
        const [a, b] = make().idempotency({ leaseMs: 10_000 });
        await leadOf(a, 'k');
        const follow = await b.claim('k', fp);
        if (follow.kind !== 'follow') throw new Error('expected follow');
        const controller = new AbortController();
        const waiting = Promise.resolve(
          b.changed('k', follow.fence, { signal: controller.signal, timeoutMs: 60_000 }),
        );
        controller.abort();
        await waiting;
        expect((await b.claim('k', fp)).kind).toBe('follow');
      });

      it('answers every resend as the first send: claim, renew, complete and release', async ({ skip }) => {
        const subject = make();
        if (!subject.can.resend) skip();
        const [a] = subject.idempotency({ leaseMs: 10_000 });
        const first = await a.claim('k', fp, { token: 't-1' });
        const again = await a.claim('k', fp, { token: 't-1' });
        expect(first.kind).toBe('lead');
        expect(again.kind).toBe('lead');
        if (first.kind !== 'lead' || again.kind !== 'lead') return;
        expect(again.lease.fence).toBe(first.lease.fence);
        expect(await a.renew(first.lease)).toBe(true);
        expect(await a.renew(again.lease)).toBe(true);
        expect((await a.complete(first.lease, 'r', 60_000)).kind).toBe('stored');
        expect((await a.complete(again.lease, 'r', 60_000)).kind).toBe('stored');
        await a.release(first.lease);
        expect(await a.claim('k', fp)).toMatchObject({ kind: 'hit', result: 'r' });
      });

      it('frees a key whose lease lapsed, refuses the old holder renewal and completion, and aborts its signal', async ({
        skip,
      }) => {
        const subject = make();
        if (!subject.can.idempotencyLeases) skip();
        const [a, b] = subject.idempotency({ leaseMs: 300 });
        const old = await leadOf(a, 'k');
        await subject.wait(450);
        const taker = await leadOf(b, 'k');
        expect(taker.fence).toBeGreaterThan(old.fence);
        expect(await a.renew(old)).toBe(false);
        expect(old.signal.aborted).toBe(true);
        expect((old.signal.reason as { kind?: string }).kind).toBe('lease_lost');
        expect(await a.complete(old, 'stale', 60_000)).toEqual({ kind: 'lost' });
        expect((await b.complete(taker, 'fresh', 60_000)).kind).toBe('stored');
        // Once the winner has stored, a stale completion learns the winner's result.
        expect(await a.complete(old, 'stale', 60_000)).toEqual({ kind: 'lost', winner: { result: 'fresh' } });
        expect(await a.claim('k', fp)).toMatchObject({ kind: 'hit', result: 'fresh' });
      });

      it('keeps a renewed lease past its first end', async ({ skip }) => {
        const subject = make();
        if (!subject.can.idempotencyLeases) skip();
        const [a, b] = subject.idempotency({ leaseMs: 300 });
        const lease = await leadOf(a, 'k');
        expect(lease.renewEveryMs).toBe(100);
        await subject.wait(150);
        expect(await a.renew(lease)).toBe(true);
        await subject.wait(200);
        expect((await b.claim('k', fp)).kind).toBe('follow');
        expect(lease.signal.aborted).toBe(false);
      });

      it('keeps a lease alive with keepLeaseAlive until stopped', async ({ skip }) => {
        const subject = make();
        if (!subject.can.idempotencyLeases) skip();
        const [a, b] = subject.idempotency({ leaseMs: 300 });
        const lease = await leadOf(a, 'k');
        const stop = keepLeaseAlive(lease, () => a.renew(lease), subject.timers);
        for (let i = 0; i < 6; i++) await subject.wait(100);
        expect((await b.claim('k', fp)).kind).toBe('follow');
        stop();
        await subject.wait(450);
        expect((await b.claim('k', fp)).kind).toBe('lead');
      });

      it('stores a late completion when the lease lapsed and nobody claimed the key', async ({ skip }) => {
        const subject = make();
        if (!subject.can.idempotencyLeases) skip();
        const [a, b] = subject.idempotency({ leaseMs: 300 });
        const lease = await leadOf(a, 'k');
        await subject.wait(450);
        expect(await a.complete(lease, 'late', 60_000)).toEqual({ kind: 'late' });
        expect(await b.claim('k', fp)).toMatchObject({ kind: 'hit', result: 'late' });
      });

      it('wakes a follower once a crashed leader lease ends', async ({ skip }) => {
        const subject = make();
        if (!subject.can.idempotencyLeases) skip();
        const [a, b] = subject.idempotency({ leaseMs: 300 });
        await leadOf(a, 'k');
        const follow = await b.claim('k', fp);
        if (follow.kind !== 'follow') throw new Error('expected follow');
        const woke = Promise.resolve(
          b.changed('k', follow.fence, { signal: neverAborts, timeoutMs: follow.leaseEndsInMs }),
        );
        await subject.wait(450);
        await woke;
        expect((await b.claim('k', fp)).kind).toBe('lead');
      });

      it('peeks at a key without claiming it: none while free or held, conflict for another fingerprint, hit once stored', async ({
        skip,
      }) => {
        const [a, b] = make().idempotency({ leaseMs: 10_000 });
        if (b.peek === undefined) return skip();
        expect(await b.peek('k', fp)).toEqual({ kind: 'none' });
        const lease = await leadOf(a, 'k');
        expect(await b.peek('k', fp)).toEqual({ kind: 'none' });
        expect(await b.peek('k', other)).toEqual({ kind: 'conflict' });
        await a.complete(lease, { charged: 42 }, 60_000);
        const seen = await b.peek('k', fp);
        expect(seen).toMatchObject({ kind: 'hit', result: { charged: 42 } });
        if (seen.kind === 'hit') expect(seen.expiresInMs).toBeGreaterThan(0);
        if (seen.kind === 'hit') expect(seen.expiresInMs).toBeLessThanOrEqual(60_000);
        expect(await b.peek('k', other)).toEqual({ kind: 'conflict' });
        // A peek holds nothing: the next claim of a free key leads.
        expect(await b.peek('free', fp)).toEqual({ kind: 'none' });
        expect((await a.claim('free', fp)).kind).toBe('lead');
      });

      it('puts a result only under a key with no record, held or stored', async ({ skip }) => {
        const [a, b] = make().idempotency({ leaseMs: 10_000 });
        if (a.putIfAbsent === undefined || b.putIfAbsent === undefined) return skip();
        expect(await a.putIfAbsent('k', fp, { first: true }, 60_000)).toBe('stored');
        expect(await b.putIfAbsent('k', fp, { first: false }, 60_000)).toBe('exists');
        expect(await b.claim('k', fp)).toMatchObject({ kind: 'hit', result: { first: true } });
        expect((await b.claim('k', other)).kind).toBe('conflict');
        expect(await a.putIfAbsent('undefined', fp, undefined, 60_000)).toBe('stored');
        expect(await b.claim('undefined', fp)).toMatchObject({ kind: 'hit', result: undefined });
        // A held key is not overwritten: its holder's completion is what is stored.
        const lease = await leadOf(a, 'held');
        expect(await b.putIfAbsent('held', fp, 'put', 60_000)).toBe('exists');
        expect((await a.complete(lease, 'led', 60_000)).kind).toBe('stored');
        expect(await b.claim('held', fp)).toMatchObject({ kind: 'hit', result: 'led' });
      });

      it('fails keyed claims closed after the store restarts empty, unless told to continue', async ({
        skip,
      }) => {
        const subject = make();
        if (subject.restartEmpty === undefined) skip();
        const [a] = subject.idempotency({ leaseMs: 10_000 });
        const [lenient] = subject.idempotency({ leaseMs: 10_000, onStoreReset: 'continue' });
        await a.complete(await leadOf(a, 'k'), 'once', 60_000);
        await lenient.complete(await leadOf(lenient, 'k2'), 'once', 60_000);
        await subject.restartEmpty?.();
        const error = await rejection(() => a.claim('k', fp));
        expect(error).toMatchObject({ kind: 'store_unavailable' });
        expect((error as { retryAfterMs?: number }).retryAfterMs).toBeGreaterThan(0);
        expect((await lenient.claim('k2', fp)).kind).toBe('lead');
      });
    });

    describe('SlotStore', () => {
      const acquired = async (store: SlotStore, token?: string): Promise<SlotPermit> => {
        const permit = await store.tryAcquire(token === undefined ? undefined : { token });
        if (permit === undefined) throw new Error('expected a permit');
        return permit;
      };

      it('hands out at most max permits across both views', async () => {
        const [a, b] = make().slots({ max: 2, leaseMs: 10_000 });
        const one = await acquired(a);
        await acquired(b);
        expect(await a.tryAcquire()).toBeUndefined();
        expect(await b.tryAcquire()).toBeUndefined();
        await a.release(one);
        expect(await b.tryAcquire()).toBeDefined();
        expect((await a.load()).running).toBe(2);
      });

      it('grants queued waiters first in, first out, and skips one that left', async () => {
        const [a] = make().slots({ max: 1, leaseMs: 10_000 });
        const held = await acquired(a);
        const order: string[] = [];
        const granted: SlotPermit[] = [];
        const waiter = (name: string) => ({
          grant: (permit: SlotPermit) => {
            order.push(name);
            granted.push(permit);
          },
          fail: () => order.push(`${name} failed`),
        });
        a.enqueue(waiter('w1'));
        const leave = a.enqueue(waiter('w2'));
        a.enqueue(waiter('w3'));
        expect(await a.tryAcquire()).toBeUndefined();
        leave();
        await a.release(held);
        await until(() => order.length === 1);
        await a.release(granted[0] as SlotPermit);
        await until(() => order.length === 2);
        expect(order).toEqual(['w1', 'w3']);
        await a.release(granted[1] as SlotPermit);
      });

      it('treats a second release of a permit as a no-op', async () => {
        const [a, b] = make().slots({ max: 1, leaseMs: 10_000 });
        const permit = await acquired(a);
        await a.release(permit);
        await a.release(permit);
        await acquired(b);
        expect(await a.tryAcquire()).toBeUndefined();
        expect(await a.renew(permit)).toBe(false);
      });

      it('answers a resent acquire with the same permit, not a second slot', async ({ skip }) => {
        const subject = make();
        if (!subject.can.resend) skip();
        const [a] = subject.slots({ max: 2, leaseMs: 10_000 });
        await acquired(a, 'same');
        await acquired(a, 'same');
        expect((await a.load()).running).toBe(1);
      });

      it('gives a lapsed permit back to the pool and refuses its renewal', async ({ skip }) => {
        const subject = make();
        if (!subject.can.slotLeases) skip();
        const [a, b] = subject.slots({ max: 1, leaseMs: 300 });
        const crashed = await acquired(a);
        await subject.wait(450);
        await acquired(b);
        expect(await a.renew(crashed)).toBe(false);
        expect(crashed.signal.aborted).toBe(true);
      });

      it('keeps a renewed permit past its first end', async ({ skip }) => {
        const subject = make();
        if (!subject.can.slotLeases) skip();
        const [a, b] = subject.slots({ max: 1, leaseMs: 300 });
        const permit = await acquired(a);
        await subject.wait(150);
        expect(await a.renew(permit)).toBe(true);
        await subject.wait(200);
        expect(await b.tryAcquire()).toBeUndefined();
      });
    });

    describe('CircuitStore', () => {
      const open = (now: number, failures = 3): CircuitRecord => ({
        state: 'open',
        failures,
        openedAt: now,
        probe: '',
        probeUntil: 0,
      });

      it('reads a circuit never written as absent, at version 0, with no failures', async () => {
        const [a] = make().circuits();
        expect(await a.read('c')).toMatchObject({ record: undefined, version: 0, failures: 0 });
      });

      it('counts each failure id once within the window', async () => {
        const subject = make();
        const [a] = subject.circuits();
        await a.addFailure('c', 'f1', 250);
        expect((await a.addFailure('c', 'f1', 250)).failures).toBe(1);
        expect((await a.addFailure('c', 'f2', 250)).failures).toBe(2);
        await subject.wait(400);
        expect((await a.addFailure('c', 'f3', 250)).failures).toBe(1);
      });

      it('writes only at the version read, clears the failure window, and shows the write to the other view', async () => {
        const [a, b] = make().circuits();
        await a.addFailure('c', 'f1', 60_000);
        const seen = await a.addFailure('c', 'f2', 60_000);
        const written = await a.compareAndSet('c', seen.version, open(seen.now, 2));
        expect(written.written).toBe(true);
        expect(written.view).toMatchObject({ record: { state: 'open', failures: 2 }, failures: 0 });
        expect(written.view.version).toBeGreaterThan(seen.version);
        const stale = await b.compareAndSet('c', seen.version, undefined);
        expect(stale.written).toBe(false);
        expect(stale.view.record?.state).toBe('open');
        await until(async () => (await b.read('c')).record?.state === 'open');
      });

      it('lets exactly one of two writers at the same version take the half-open probe', async () => {
        const [a, b] = make().circuits();
        const first = await a.compareAndSet('c', 0, open(0));
        const version = first.view.version;
        const probe = (token: string): CircuitRecord => ({
          state: 'half_open',
          failures: 3,
          openedAt: 0,
          probe: token,
          probeUntil: first.view.now + 1_000,
        });
        const results = await Promise.all([
          a.compareAndSet('c', version, probe('pa')),
          b.compareAndSet('c', version, probe('pb')),
        ]);
        expect(results.filter((result) => result.written)).toHaveLength(1);
        const winner = results.find((result) => result.written);
        const closed = await a.compareAndSet('c', winner?.view.version ?? -1, undefined);
        expect(closed.written).toBe(true);
        expect((await a.read('c')).record).toBeUndefined();
      });

      it('keeps time in one timebase: a probe lease ends in the view after it passes', async () => {
        const subject = make();
        const [a] = subject.circuits();
        const start = await a.read('c');
        const written = await a.compareAndSet('c', start.version, {
          state: 'half_open',
          failures: 1,
          openedAt: start.now,
          probe: 'p',
          probeUntil: start.now + 300,
        });
        expect(written.view.now).toBeLessThan(start.now + 300);
        await subject.wait(450);
        await until(async () => (await a.read('c')).now >= start.now + 300);
      });

      it('lists the circuits it knows', async () => {
        const [a] = make().circuits();
        await a.compareAndSet('listed', 0, open(0));
        const entries = [...(await a.entries())];
        expect(entries.some(([key, view]) => key === 'listed' && view.record?.state === 'open')).toBe(true);
      });
    });

    describe('ApprovalStore redemptions', () => {
      let tokens = 0;
      // An approved request of its own, in both views.
      async function approved(store: ApprovalStore): Promise<string> {
        const token = `tok-${++tokens}-${Math.random().toString(36).slice(2)}`;
        const request: ApprovalRequest = {
          token,
          callKey: `call-${token}`,
          tool: 'payments.refund',
          fingerprint: 'fp',
          key: null,
          callId: 'c-1',
          reason: 'a refund',
          ttlMs: 60_000,
        };
        await store.open(request);
        expect(await store.answer(token, { action: 'approve', by: 'ana' })).toBe(true);
        return token;
      }

      it('claims the run of an approved token once, whichever process asks, and nothing else', async () => {
        const [a, b] = make().approvals();
        const token = await approved(a);
        expect(await a.redeem?.(token, 'claim-a')).toEqual({ state: 'claimed' });
        expect(await b.redeem?.(token, 'claim-b')).toEqual({ state: 'running' });
        // Sent again by its holder, a claim is still the holder's.
        expect(await b.redeem?.(token, 'claim-a')).toEqual({ state: 'claimed' });
        expect(await a.redeem?.('no-such-token', 'claim-a')).toBeUndefined();
        const pending = `pending-${++tokens}`;
        await a.open({
          token: pending,
          callKey: `call-${pending}`,
          tool: 't',
          fingerprint: 'fp',
          key: null,
          callId: 'c',
          reason: 'r',
          ttlMs: 60_000,
        });
        expect(await b.redeem?.(pending, 'claim-b')).toBeUndefined();
      });

      it('lets exactly one of many concurrent claims hold the run', async () => {
        const [a, b] = make().approvals();
        const token = await approved(a);
        const answers = await Promise.all(
          Array.from({ length: 8 }, (_, i) => (i % 2 === 0 ? a : b).redeem?.(token, `claim-${i}`)),
        );
        expect(answers.filter((answer) => answer?.state === 'claimed')).toHaveLength(1);
        expect(answers.filter((answer) => answer?.state === 'running')).toHaveLength(7);
      });

      it('answers every later claim with the settled outcome, and ignores a settle from a non-holder', async () => {
        const [a, b] = make().approvals();
        const token = await approved(a);
        await a.redeem?.(token, 'claim-a');
        await b.settle?.(token, 'claim-b', { state: 'released' });
        await b.settle?.(token, 'claim-a', { state: 'succeeded', result: { refunded: 5 } });
        await a.settle?.(token, 'claim-a', { state: 'released' });
        expect(await b.redeem?.(token, 'claim-c')).toEqual({ state: 'succeeded', result: { refunded: 5 } });
        expect(await a.redeem?.(token, 'claim-a')).toEqual({ state: 'succeeded', result: { refunded: 5 } });

        const doubtful = await approved(a);
        await b.redeem?.(doubtful, 'claim-b');
        await b.settle?.(doubtful, 'claim-b', { state: 'in_doubt', window: 'attempt_timeout' });
        expect(await a.redeem?.(doubtful, 'claim-c')).toEqual({
          state: 'in_doubt',
          window: 'attempt_timeout',
        });
      });

      it('lets another claim take the run once its holder released it', async () => {
        const [a, b] = make().approvals();
        const token = await approved(a);
        await a.redeem?.(token, 'claim-a');
        await a.settle?.(token, 'claim-a', { state: 'released' });
        expect(await b.redeem?.(token, 'claim-b')).toEqual({ state: 'claimed' });
        expect(await a.redeem?.(token, 'claim-a')).toEqual({ state: 'running' });
      });
    });

    describe('ApprovalStore listing, audit and decisions', () => {
      let runs = 0;
      // Requests of one run, their tokens in the order they are opened (ties on the clock sort by token).
      function requestsOf(count: number, extra: Partial<ApprovalRequest> = {}): ApprovalRequest[] {
        const run = `run${++runs}-${Math.random().toString(36).slice(2, 8)}`;
        return Array.from({ length: count }, (_, i) => {
          const token = `${run}-${String(i).padStart(3, '0')}`;
          return {
            token,
            callKey: `call-${token}`,
            tool: 'payments.refund',
            fingerprint: `fp-${i}`,
            key: null,
            callId: `c-${i}`,
            reason: 'a refund',
            ttlMs: 60_000,
            tenant: 'acme',
            preview: `{"amount":${i}}`,
            ...extra,
          };
        });
      }

      it('lists pending requests oldest first, a page at a time, with every field a console shows', async () => {
        const [a, b] = make().approvals();
        const requests = requestsOf(7);
        for (const request of requests) await a.open(request);
        expect(await a.answer(requests[1]?.token as string, { action: 'approve', by: 'ana' })).toBe(true);
        const seen: string[] = [];
        let cursor: string | undefined;
        let pages = 0;
        do {
          const page = await (pages % 2 === 0 ? b : a).list?.({
            limit: 2,
            ...(cursor === undefined ? {} : { cursor }),
          });
          if (page === undefined) throw new Error('the store cannot list');
          expect(page.items.length).toBeLessThanOrEqual(2);
          seen.push(...page.items.map((record) => record.token));
          cursor = page.cursor;
          pages += 1;
        } while (cursor !== undefined);
        expect(seen).toEqual(requests.filter((_, i) => i !== 1).map((request) => request.token));
        expect(pages).toBe(3);
        const [first] = (await b.list?.({ limit: 1 }))?.items ?? [];
        expect(first).toMatchObject({
          token: requests[0]?.token,
          tool: 'payments.refund',
          callId: 'c-0',
          reason: 'a refund',
          tenant: 'acme',
          preview: '{"amount":0}',
          status: 'pending',
        });
        expect(first?.createdAt).toBeTypeOf('number');
        expect((first?.expiresAt ?? 0) - (first?.createdAt ?? 0)).toBe(60_000);
      });

      it('keeps only the tool and tenant asked for, a page of matches at a time, in order', async () => {
        const [a, b] = make().approvals();
        const requests = requestsOf(14).map((request, i) => ({
          ...request,
          tool: i % 2 === 0 ? 'payments.refund' : 'payments.charge',
          tenant: i % 3 === 0 ? 'acme' : 'globex',
        }));
        for (const request of requests) await a.open(request);
        // Refunds for globex are requests 2, 4, 8 and 10; 4 is answered, so it is no longer listed.
        expect(await a.answer(requests[4]?.token as string, { action: 'deny', reason: 'no' })).toBe(true);
        const wanted = [2, 8, 10].map((i) => requests[i]?.token);
        const seen: string[] = [];
        let cursor: string | undefined;
        let pages = 0;
        do {
          const page = await (pages % 2 === 0 ? b : a).list?.({
            limit: 2,
            tool: 'payments.refund',
            tenant: 'globex',
            ...(cursor === undefined ? {} : { cursor }),
          });
          if (page === undefined) throw new Error('the store cannot list');
          seen.push(...page.items.map((record) => record.token));
          cursor = page.cursor;
          pages += 1;
        } while (cursor !== undefined);
        expect(seen).toEqual(wanted);
        expect(pages).toBe(2);
        // A page that ends on the last match carries no cursor, whatever else is pending after it.
        const exact = await b.list?.({ limit: 3, tool: 'payments.refund', tenant: 'globex' });
        expect(exact?.items.map((record) => record.token)).toEqual(wanted);
        expect(exact?.cursor).toBeUndefined();
        const byTool = await a.list?.({ tool: 'payments.charge' });
        expect(byTool?.items.map((record) => record.token)).toEqual(
          requests.filter((request) => request.tool === 'payments.charge').map((request) => request.token),
        );
        expect((await a.list?.({ tenant: 'initech' }))?.items).toEqual([]);
        await expect(async () => a.list?.({ tool: 7 as unknown as string })).rejects.toThrow(TypeError);
        await expect(async () => a.list?.({ tenant: null as unknown as string })).rejects.toThrow(TypeError);
      });

      it('validates the limit, the status and the cursor', async () => {
        const [a] = make().approvals();
        for (const limit of [0, 501, 1.5, '2']) {
          await expect(async () => a.list?.({ limit: limit as number })).rejects.toThrow(TypeError);
        }
        await expect(async () => a.list?.({ status: 'approved' as 'pending' })).rejects.toThrow(TypeError);
        await expect(async () => a.list?.({ cursor: 'not a cursor' })).rejects.toThrow(TypeError);
        expect((await a.list?.({ limit: 500 }))?.items).toEqual([]);
      });

      it('audits each decision once, whichever view made it, and sends a repeat nowhere', async () => {
        const [a, b] = make().approvals();
        const [approved, denied, edited] = requestsOf(3);
        for (const request of [approved, denied, edited]) await a.open(request as ApprovalRequest);
        const heard: string[] = [];
        const stop = b.subscribe?.((decided) => heard.push(`${decided.decision}:${decided.token}`));
        await new Promise((resolve) => setTimeout(resolve, 200));
        const tokens = [approved, denied, edited].map((request) => request?.token as string);
        const [t1, t2, t3] = tokens as [string, string, string];
        expect(await a.answer(t1, { action: 'approve', by: 'ana', channel: 'console' })).toBe(true);
        expect(await b.answer(t1, { action: 'approve', by: 'bo', channel: 'mcp' })).toBe(true);
        expect(await b.answer(t2, { action: 'deny', reason: 'too much', by: 'bo', channel: 'host' })).toBe(
          true,
        );
        expect(await a.answer(t2, { action: 'approve', by: 'ana' })).toBe(false);
        const edit = { fingerprint: 'fp-edited', preview: '{"amount":1}' };
        expect(await a.answer(t3, { action: 'approve', by: 'cy', channel: 'console', edit })).toBe(true);
        // A plain approval sent after the edit does not stand for the original args.
        expect(await b.answer(t3, { action: 'approve', by: 'cy' })).toBe(false);
        expect(await b.answer(t3, { action: 'approve', by: 'cy', edit })).toBe(true);
        expect(await b.get(t3)).toMatchObject({
          status: 'approved',
          fingerprint: 'fp-edited',
          editedFrom: 'fp-2',
          preview: '{"amount":1}',
          channel: 'console',
        });
        const log = (await b.audit?.())?.items ?? [];
        expect(log.map((record) => [record.token, record.decision, record.by, record.channel])).toEqual([
          [t1, 'approved', 'ana', 'console'],
          [t2, 'denied', 'bo', 'host'],
          [t3, 'edited', 'cy', 'console'],
        ]);
        expect(log[1]).toMatchObject({ reason: 'too much', fingerprint: 'fp-1', tenant: 'acme' });
        expect(log[2]).toMatchObject({ fingerprint: 'fp-edited', editedFrom: 'fp-2' });
        expect(log.every((record) => typeof record.at === 'number')).toBe(true);
        expect((await a.audit?.({ token: t2 }))?.items).toEqual([log[1]]);
        const firstPage = await a.audit?.({ limit: 2 });
        expect(firstPage?.items).toEqual(log.slice(0, 2));
        expect((await a.audit?.({ limit: 2, cursor: firstPage?.cursor as string }))?.items).toEqual(
          log.slice(2),
        );
        expect((await a.list?.())?.items).toEqual([]);
        await until(() => heard.length === 3);
        expect(heard).toEqual([`approved:${t1}`, `denied:${t2}`, `edited:${t3}`]);
        stop?.();
      });

      it('drops an expired request from the list and audits it as expired', async () => {
        const subject = make();
        const [a, b] = subject.approvals();
        const [short, long] = requestsOf(2);
        await a.open({ ...(short as ApprovalRequest), ttlMs: 300 });
        await a.open(long as ApprovalRequest);
        expect((await b.list?.())?.items.map((record) => record.token)).toEqual([short?.token, long?.token]);
        await subject.wait(450);
        expect((await b.list?.())?.items.map((record) => record.token)).toEqual([long?.token]);
        expect((await a.audit?.({ token: short?.token as string }))?.items).toMatchObject([
          { token: short?.token, decision: 'expired', by: 'store', channel: 'store', fingerprint: 'fp-0' },
        ]);
      });
    });

    describe('Budget', () => {
      it('never goes below zero however many attempts race for it', async () => {
        const budget = await make().budget({ limit: 3 });
        const taken = await Promise.all(Array.from({ length: 8 }, () => budget.tryConsume(1)));
        expect(taken.filter(Boolean)).toHaveLength(3);
        expect(budget.remaining).toBe(0);
        expect(await budget.tryConsume(1)).toBe(false);
      });

      it('shares one budget between the holders of its id', async ({ skip }) => {
        const subject = make();
        if (!subject.can.resend) skip();
        const first = await subject.budget({ limit: 2 });
        const second = await subject.budget({ limit: 99, join: first.id });
        expect(second.limit).toBe(2);
        expect(await first.tryConsume(1)).toBe(true);
        expect(await second.tryConsume(1)).toBe(true);
        expect(await first.tryConsume(1)).toBe(false);
      });

      it('takes a resent attempt once', async ({ skip }) => {
        const subject = make();
        if (!subject.can.resend) skip();
        const budget = await subject.budget({ limit: 2 });
        expect(await budget.tryConsume(1, 'attempt-1')).toBe(true);
        expect(await budget.tryConsume(1, 'attempt-1')).toBe(true);
        expect(budget.remaining).toBe(1);
      });

      it('refuses more units than are left', async () => {
        const budget = await make().budget({ limit: 2 });
        expect(await budget.tryConsume(3)).toBe(false);
        expect(budget.remaining).toBe(2);
      });
    });
  });
}

/** Waits until `condition` holds (a few ms at a time, 5 s at most): for answers that travel by pub/sub. */
export async function until(condition: () => boolean | Promise<boolean>): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (await condition()) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error('condition not met within 5 s');
}
