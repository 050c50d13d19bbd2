/** @module esm-only: what require('tool-dispatcher') meets; the package is ESM-only. */
'use strict';

const error = new Error(
  'tool-dispatcher is ESM-only: load it with import (import { createDispatcher } from "tool-dispatcher"), ' +
    'or from CommonJS with await import("tool-dispatcher").',
);
error.code = 'ERR_REQUIRE_ESM';
// The message is the whole story: no frames of this file.
error.stack = `Error: ${error.message}`;
throw error;
