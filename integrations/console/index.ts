/**
 * tool-dispatcher/console: the control room. One page and a JSON API, served by any Node HTTP
 * server, for what a person must see and answer: pending approvals (approve, deny, edit then
 * approve, each running the tool at most once), tool health, and calls whose outcome is in doubt.
 * Behind a token (a bearer header for scripts, a one-time login and an HttpOnly cookie for the
 * page); everything it sends is redacted server-side. Loads no host SDK.
 *
 * @example
 * import http from 'node:http';
 * import { controlRoom } from 'tool-dispatcher/console';
 * const room = controlRoom({ token: process.env.TD_CONSOLE_TOKEN as string, gate });
 * http.createServer(room.handler).listen(8787, '127.0.0.1');
 *
 * @module tool-dispatcher/console
 */

export { controlRoom } from './server.js';
export type { ControlRoom, ControlRoomOptions } from './server.js';
export type { ApprovalItem } from './approvals.js';
export { InDoubtActionError } from './panes.js';
export { toolHealth } from './health.js';
export type { HealthShare, HealthSnapshot, ToolHealth, ToolHealthOptions } from './health.js';
export type { LatencyBuckets, SharedToolRow } from './health-window.js';
export { inDoubtDesk } from './in-doubt.js';
export type { InDoubtDeskOptions } from './in-doubt.js';
export type {
  HealthReport,
  HealthSource,
  InDoubtItem,
  InDoubtResolution,
  InDoubtSource,
  ToolHealthRow,
} from './panes.js';
