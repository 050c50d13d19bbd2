// The bench's cockatiel stack runs on the cockatiel it is measured with: 3.2 under `npm test`,
// 4.0 under `npm run test:matrix` (Node 24), so a bench number never comes from a broken stack.

import { describe, expect, it } from 'vitest';
import { createStacks, smallArgs, toolNames } from '../../bench/stacks.js';
import * as library from '../../index.js';

describe('the bench cockatiel stack', () => {
  it('answers a call and retries a transient failure once', async () => {
    const { cockatiel } = createStacks(library);
    expect(await cockatiel(toolNames.immediate, smallArgs)).toMatchObject({ ok: true, attempts: 1 });
    expect(await cockatiel(toolNames.flaky, smallArgs)).toMatchObject({ ok: true, attempts: 2 });
  });
});
