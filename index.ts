/**
 * tool-dispatcher: the core and every middleware factory, under their pinned names. Host
 * integrations live under their own subpaths (`tool-dispatcher/openai`, `/mcp`, `/otel`, …) and
 * are never loaded from here.
 * @module
 */

export * from './src/index.js';
export * from './middleware/index.js';
