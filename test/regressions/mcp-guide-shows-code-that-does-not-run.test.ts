// docs/integrations/mcp.md showed code a user could not run: `listenMcp` imported from
// `tool-dispatcher/mcp`, which did not export it, and `versionNegotiation` as `auto` or
// `{ pin }`, where the v2 Client takes `{ mode: 'auto' }` or `{ mode: { pin } }`. Every name the
// guide's code imports from the package is exported, and every `versionNegotiation` it shows is
// one the v2 Client accepts.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client, InMemoryTransport } from '@modelcontextprotocol/client';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { describe, expect, it } from 'vitest';
import { createDispatcher, defaultStack, ToolRegistry } from '../../index.js';
import * as mcp from '../../integrations/mcp/entry.js';
import { typeCheckSnippets } from '../helpers/guide-snippets.js';

const guide = readFileSync(join(import.meta.dirname, '../../docs/integrations/mcp.md'), 'utf8');
const snippets = [...guide.matchAll(/```ts\n([\s\S]*?)```/g)].map((match) => match[1] as string);

describe('the MCP guide', () => {
  it('has snippets that type-check against the package', () => {
    expect(typeCheckSnippets('docs/integrations/mcp.md')).toEqual([]);
  }, 120_000);

  it('imports from tool-dispatcher/mcp only names the entry exports', () => {
    const imported = snippets.flatMap((code) =>
      [...code.matchAll(/import \{([^}]*)\} from 'tool-dispatcher\/mcp'/g)].flatMap((match) =>
        (match[1] as string)
          .split(',')
          .map((name) => name.trim())
          .filter((name) => name !== '' && !name.startsWith('type ')),
      ),
    );
    expect(imported).toContain('listenMcp');
    expect(imported.filter((name) => !(name in mcp))).toEqual([]);
  });

  it('shows versionNegotiation in the shape the v2 Client connects with', async () => {
    // Every mention is followed by the `{ mode }` object, and every `{ pin }` sits inside one.
    expect(guide.match(/versionNegotiation(?!: \{ mode: )/g)).toBeNull();
    expect(guide.match(/(?<!mode: )\{ pin:/g)).toBeNull();
    const shown = [...guide.matchAll(/(\{ mode: (?:'auto'|\{ pin: '[\d-]+' \}) \})/g)];
    expect(shown.length).toBeGreaterThanOrEqual(3);
    const registry = new ToolRegistry();
    const dispatcher = createDispatcher(defaultStack({ registry }));
    const factory = mcp.createMcpServerFactory({ registry, dispatcher, info: { name: 'g', version: '1' } });
    for (const [, text] of shown) {
      // The guide's own literal, evaluated as the code in it would be.
      const versionNegotiation = new Function(`return ${text as string}`)() as never;
      const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
      const served = serveStdio(factory, { transport: serverSide });
      const client = new Client({ name: 'guide', version: '1.0.0' }, { versionNegotiation });
      await client.connect(clientSide);
      expect(client.getProtocolEra()).toBe('modern');
      await client.close();
      await served.close();
    }
  });
});
