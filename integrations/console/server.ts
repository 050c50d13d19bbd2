/**
 * `controlRoom`: the console's options, checked once, and the room itself (its request handler
 * and `close`).
 * @module
 */

import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  createRedactor,
  type ApprovalGate,
  type Dispatcher,
  type ReceiptStore,
  type Redactor,
  type ToolRegistry,
} from '../../index.js';
import { optionKeys, optionsObject } from '../../middleware/index.js';
import { ApprovalDesk } from './approvals.js';
import { Doorkeeper } from './auth.js';
import { toolHealth } from './health.js';
import { inDoubtDesk } from './in-doubt.js';
import type { HealthSource, InDoubtSource } from './panes.js';
import { ConsoleRouter } from './routes.js';
import { EventHub } from './sse.js';

/** Options for `controlRoom`. */
export interface ControlRoomOptions {
  /**
   * The secret every request needs: as `Authorization: Bearer <token>` from a script, or typed once
   * into the login form by a person. At least 16 characters; never printed in any message.
   */
  token: string;
  /** The approval gate whose pending requests the approvals pane lists and answers. @default undefined (no approvals pane) */
  gate?: ApprovalGate;
  /** The receipt store the built-in in-doubt pane reads. @default undefined */
  receipts?: ReceiptStore;
  /** The dispatcher the built-in tool-health pane listens to. @default undefined */
  dispatcher?: Dispatcher;
  /** The registry "reconcile now" finds a tool's `reconcile` in. @default undefined */
  registry?: ToolRegistry;
  /** What feeds the tool-health pane, instead of the built-in aggregator. @default `toolHealth({ dispatcher, listen: 'watched' })` when `dispatcher` is given, else no pane */
  health?: HealthSource;
  /** What feeds the in-doubt pane, instead of the built-in source. @default `inDoubtDesk({ receipts, registry })` when `receipts` is given, else no pane */
  inDoubt?: InDoubtSource;
  /**
   * The redactor everything the console sends passes (answers, events, error messages).
   * @default createRedactor()
   */
  redact?: Redactor;
  /**
   * Where the console answers: the page at `basePath`, its API under `basePath/api/`.
   * @default '/console'
   */
  basePath?: string;
  /** The clock for sessions, login limits and ages, in ms since the epoch. @default Date.now */
  now?: () => number;
  /**
   * Where session ids and CSRF tokens come from: `bytes` random bytes.
   * @default crypto.randomBytes
   */
  random?: (bytes: number) => Uint8Array;
}

const controlRoomOptionKeys = optionKeys<ControlRoomOptions>({
  token: true,
  gate: true,
  receipts: true,
  dispatcher: true,
  registry: true,
  health: true,
  inDoubt: true,
  redact: true,
  basePath: true,
  now: true,
  random: true,
});

/** A console: mount `handler` on any Node HTTP server; `close` ends its streams and timers. */
export interface ControlRoom {
  /**
   * Answers requests under `basePath`; any other goes to `next` when given, else is answered 404.
   * Never throws and never rejects.
   */
  readonly handler: (req: IncomingMessage, res: ServerResponse, next?: () => void) => void;
  /** Ends every event stream, unsubscribes from every source and clears every timer; later requests get 503. */
  close(): Promise<void>;
  /** The path the console answers under. */
  readonly basePath: string;
}

/**
 * Makes the console: the approvals, tool-health and in-doubt panes and their JSON API, behind a
 * token, served by any Node HTTP server. Loads no host SDK.
 *
 * @throws TypeError naming the option for a missing or short `token`, a bad source, `basePath`,
 *   `now`, `random` or `redact`, or an unknown option (naming the nearest known one).
 * @example
 * import http from 'node:http';
 * import { controlRoom } from 'tool-dispatcher/console';
 * const room = controlRoom({ token: process.env.TD_CONSOLE_TOKEN as string, gate });
 * http.createServer(room.handler).listen(8787, '127.0.0.1');
 */
export function controlRoom(options: ControlRoomOptions): ControlRoom {
  if (options === undefined) throw new TypeError('controlRoom() needs options with a token');
  const given = optionsObject('controlRoom', options, controlRoomOptionKeys);
  const { token, gate, receipts, dispatcher, registry, health, inDoubt } = given;
  const { redact = createRedactor(), basePath = '/console', now = Date.now, random = randomBytes } = given;
  // The token is never shown, not even in part: the message says only what was wrong with it.
  if (typeof token !== 'string') throw new TypeError(`token must be a string, got ${typeof token}`);
  if (token.length < 16) throw new TypeError('token must be at least 16 characters long');
  if (/\s/.test(token)) throw new TypeError('token must not contain whitespace');
  requireMethods('gate', gate, ['approve', 'deny', 'subscribe']);
  if (gate !== undefined) requireMethods('gate.store', gate.store, ['get', 'answer']);
  requireMethods('receipts', receipts, ['get', 'list']);
  requireMethods('dispatcher', dispatcher, ['dispatch', 'subscribe']);
  requireMethods('registry', registry, ['get']);
  requireMethods('health', health, ['report', 'subscribe']);
  requireMethods('inDoubt', inDoubt, ['list', 'reconcile', 'resolve']);
  requireMethods('redact', redact, ['redact', 'redactValue']);
  if (typeof now !== 'function') throw new TypeError(`now must be a function, got ${typeof now}`);
  if (typeof random !== 'function') throw new TypeError(`random must be a function, got ${typeof random}`);
  if (
    typeof basePath !== 'string' ||
    !/^(\/[A-Za-z0-9._~-]+)+$/.test(basePath) ||
    basePath.split('/').some((part) => part === '.' || part === '..')
  ) {
    throw new TypeError(
      `basePath must be a path such as '/console' (segments of letters, digits, . _ ~ -, no trailing slash), got ${String(basePath)}`,
    );
  }
  // The built-in aggregator listens only while someone looks, so a console nobody watches costs a
  // dispatch nothing (the pane's window fills from the moment it is opened).
  const ownHealth =
    health === undefined && dispatcher !== undefined
      ? toolHealth({ dispatcher, redact, listen: 'watched' })
      : undefined;
  const sources = {
    health: health ?? ownHealth,
    inDoubt:
      inDoubt ??
      (receipts === undefined
        ? undefined
        : inDoubtDesk({ receipts, redact, ...(registry === undefined ? {} : { registry }) })),
  };
  const desk = gate === undefined ? undefined : new ApprovalDesk(gate, now);
  const hub = new EventHub({ gate, desk, health: sources.health, inDoubt: sources.inDoubt, redact, now });
  const router = new ConsoleRouter({
    basePath,
    doorkeeper: new Doorkeeper(token, now, random),
    desk,
    health: sources.health,
    inDoubt: sources.inDoubt,
    hub,
    redact,
  });
  return {
    basePath,
    handler: (req, res, next) => router.handle(req, res, next),
    close: async () => {
      router.close();
      hub.closeAll();
      ownHealth?.close();
    },
  };
}

function requireMethods(name: string, value: unknown, methods: readonly string[]): void {
  if (value === undefined) return;
  const missing = methods.filter(
    (method) => typeof (value as Record<string, unknown> | null)?.[method] !== 'function',
  );
  if ((typeof value !== 'object' && typeof value !== 'function') || value === null) {
    throw new TypeError(`${name} must be an object with ${methods.join(', ')}, got ${String(value)}`);
  }
  if (missing.length > 0) {
    throw new TypeError(
      `${name} must have ${methods.map((m) => `${m}()`).join(', ')}; it lacks ${missing.join(', ')}`,
    );
  }
}
