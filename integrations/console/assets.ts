/**
 * The page's two assets, streamed from the directory `npm run build` writes (`dist/console-page/`):
 * only `app.js` and `app.css` are served, by name, so no path reaches another file.
 * @module
 */

import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import type { ServerResponse } from 'node:http';
import { fileURLToPath } from 'node:url';
import { HttpProblem } from './http.js';

/** The assets served, by name, with their media types. */
export const assetTypes: Readonly<Record<string, string>> = Object.freeze({
  'app.js': 'text/javascript; charset=utf-8',
  'app.css': 'text/css; charset=utf-8',
});

// Running from dist/integrations/console/, the built page sits in dist/console-page/; running
// from the sources (tests, tsx), in dist/console-page/ of the checkout.
const pageDirectories = [
  new URL('../../console-page/', import.meta.url),
  new URL('../../dist/console-page/', import.meta.url),
];

/**
 * Streams asset `name` to `res`.
 * @throws HttpProblem 404 for another name, 503 when the page is not built.
 */
export async function sendAsset(res: ServerResponse, name: string, head: boolean): Promise<void> {
  const type = Object.hasOwn(assetTypes, name) ? assetTypes[name] : undefined;
  if (type === undefined) throw new HttpProblem(404, 'not_found', 'no such asset');
  const path = await builtFile(name);
  if (path === undefined) {
    throw new HttpProblem(503, 'not_built', 'the console page is not built: run npm run build');
  }
  res.statusCode = 200;
  res.setHeader('Content-Type', type);
  res.setHeader('Content-Length', path.size);
  if (head) {
    res.end();
    return;
  }
  await new Promise<void>((resolve) => {
    const file = createReadStream(path.file);
    file.once('error', () => {
      res.destroy();
      resolve();
    });
    res.once('close', () => {
      file.destroy();
      resolve();
    });
    file.pipe(res);
  });
}

async function builtFile(name: string): Promise<{ file: string; size: number } | undefined> {
  for (const directory of pageDirectories) {
    const file = fileURLToPath(new URL(name, directory));
    try {
      const found = await stat(file);
      if (found.isFile()) return { file, size: found.size };
    } catch {
      // Not in this directory: try the next.
    }
  }
  return undefined;
}
