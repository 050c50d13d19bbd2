// Issue 31, item 6: `mcp-proxy --redis-url` masked the password of an unreachable redis:// URL,
// but printed any other spelling whole: another scheme (`valkey://user:pass@…`), a typo that is no
// URL, or a redis: URL with one slash.

import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { freePort } from '../helpers/free-port.js';
import { runProxy } from '../helpers/mcp-fleet.js';

const remote = fileURLToPath(new URL('../integrations/mcp/fixtures/remote-server.ts', import.meta.url));
const run = (url: string) =>
  runProxy(['--redis-url', url, '--', process.execPath, '--import', 'tsx', remote]);

describe('mcp-proxy --redis-url', () => {
  it('never prints the password of a URL it refuses or cannot reach', async () => {
    const port = await freePort();
    const cases = [
      ['valkey://app:s3cret-pw@127.0.0.1:6379', 2, 'valkey://app:***@127.0.0.1:6379'],
      ['redis//app:s3cret-pw@127.0.0.1:6379', 2, 'redis//app:***@127.0.0.1:6379'],
      ['redis:/app:s3cret-pw@127.0.0.1:6379', 2, 'redis:/app:***@127.0.0.1:6379'],
      [`redis://app:s3cret-pw@127.0.0.1:${port}`, 1, `redis://app:***@127.0.0.1:${port}`],
    ] as const;
    for (const [url, status, shown] of cases) {
      const answer = run(url);
      expect(answer.stderr, url).toContain(shown);
      expect(answer.stderr, url).not.toContain('s3cret');
      expect(answer.stdout, url).not.toContain('s3cret');
      expect(answer.status, url).toBe(status);
    }
  }, 60_000);
});
