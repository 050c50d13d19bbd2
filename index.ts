/**
 * tool-dispatcher: the package root, the core and every middleware factory under their pinned names.
 * @module
 */

export * from './src/index.js';
