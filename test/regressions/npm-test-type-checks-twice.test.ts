// Regression (issue 31, item 30): `npm test` ran `tsc` twice, once as `npm run typecheck` and again
// inside vitest (its typecheck mode over test/types/*.test-d.ts, which tsconfig.json already
// includes), some 70 s of a five-minute run on a 2-core machine.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import config from '../../vitest.config.js';

const root = join(import.meta.dirname, '../..');

it('type-checks once: npm run typecheck covers the type tests, and vitest does not run tsc again', () => {
  const { scripts } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
    scripts: Record<string, string>;
  };
  expect(scripts['test']).toBe('npm run typecheck && vitest run');
  const tsconfig = readFileSync(join(root, 'tsconfig.json'), 'utf8');
  expect(tsconfig).toMatch(/"include":\s*\[[^\]]*"test"/);
  expect(config.test?.typecheck?.enabled ?? false).toBe(false);
});
