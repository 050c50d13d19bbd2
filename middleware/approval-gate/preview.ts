/**
 * What a reviewer sees of a call's args: their JSON text, redacted, then capped, made before it
 * reaches any approval store (the same preview an in-doubt receipt keeps).
 * @module
 */

export { previewCut, previewOf } from '../internal-kit.js';
