// Issue 31, item 1: a PEM private key inside JSON text (a service-account file read as a string,
// an error quoting a JSON body) has the two characters `\n` for its line breaks; the redactor
// replaced only its `-----BEGIN…-----` line, and the body and END line reached the model.

import { expect, it } from 'vitest';
import { z } from 'zod';
import { createDispatcher, createRedactor, defaultStack, ToolRegistry, toToolMessage } from '../../index.js';

const body = [
  'MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7',
  'VJTUt9Us8cKjMzEfYyjiWA4R4/M2bS1G',
  'B4t9Q0ZsG+oR1dg==',
];
const pem = `-----BEGIN PRIVATE KEY-----\n${body.join('\n')}\n-----END PRIVATE KEY-----\n`;
const serviceAccount = JSON.stringify({ type: 'service_account', private_key_id: 'abc', private_key: pem });

it('redacts the body of a PEM key whose line breaks are \\n text', async () => {
  const registry = new ToolRegistry()
    .register({ name: 'fs.read', inputSchema: z.object({}), handler: () => serviceAccount })
    .register({
      name: 'api.post',
      inputSchema: z.object({}),
      handler: () => {
        // An error quoting the JSON it sent: the key is escaped twice there.
        throw new Error(`POST /token failed with 400 for ${JSON.stringify(serviceAccount)}`);
      },
    });
  const dispatcher = createDispatcher(defaultStack({ registry }), { redact: createRedactor() });
  for (const name of ['fs.read', 'api.post']) {
    const outcome = await dispatcher.dispatch(name, {});
    const shown = `${toToolMessage(outcome, { maxLength: Infinity })} ${JSON.stringify(outcome)}`;
    expect(shown, name).toContain('[REDACTED:private_key]');
    for (const line of [...body, 'END PRIVATE KEY'])
      expect(shown, `${name} shows ${line}`).not.toContain(line);
  }
});
