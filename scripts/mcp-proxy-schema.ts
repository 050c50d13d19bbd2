/**
 * @module mcp-proxy-schema: writes `mcp-proxy.schema.json`, the JSON Schema of the `mcp-proxy`
 * config file, from the zod schema the proxy checks it with (`npm run schema`; a test fails when
 * the file and the schema differ).
 */

import { writeFileSync } from 'node:fs';
import { mcpProxyJsonSchema } from '../integrations/mcp/proxy-config.js';

writeFileSync(
  new URL('../mcp-proxy.schema.json', import.meta.url),
  `${JSON.stringify(mcpProxyJsonSchema(), null, 2)}\n`,
);
