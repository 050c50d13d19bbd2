// Regression (issue 19, item 4): the proxy wrote `tool=` raw while it escaped every other value,
// so a client calling a tool named "x\n[mcp-proxy] info …" wrote a record of its own on stderr.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { expect, it } from 'vitest';
import { createMcpProxy, logValue } from '../../integrations/mcp/proxy.js';
import { serveHttp } from '../integrations/mcp/fixtures/http-upstream.js';
import { buildOddServer } from '../integrations/mcp/fixtures/odd-upstream.js';

it('writes one line per event, whatever a client puts in a tool name', async () => {
  const upstream = await serveHttp(() => buildOddServer());
  const lines: string[] = [];
  const proxy = await createMcpProxy({
    upstream: { url: upstream.url },
    logLevel: 'info',
    log: (line) => lines.push(line),
  });
  const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
  await proxy.server.connect(serverTransport);
  const client = new Client({ name: 'host', version: '1.0.0' });
  await client.connect(clientTransport);
  try {
    const forged = 'x\n[mcp-proxy] info dispatch.success tool=echo callId=mcp-9 attempt=1';
    await expect(client.callTool({ name: forged, arguments: {} })).rejects.toThrow(/Unknown tool/);
    await client.callTool({ name: 'echo\u2028\u009b31m', arguments: {} }).catch(() => {});
    const failures = lines.filter((line) => line.includes('dispatch.failure'));
    expect(failures).toHaveLength(2);
    expect(failures[0]).toContain(`tool=${JSON.stringify(forged)} `);
    expect(failures[1]).toContain('tool="echo\\u2028\\u009b31m" ');
    for (const line of lines) expect(line).not.toMatch(/[\n\r\u2028\u2029\u0085\u009b]/);
  } finally {
    await client.close();
    await proxy.close();
    await upstream.close();
  }
});

it('leaves a plain value bare and escapes anything that could end a field or a line', () => {
  expect(logValue('get-sum')).toBe('get-sum');
  expect(logValue('a b')).toBe('"a b"');
  expect(logValue('k=v')).toBe('"k=v"');
  expect(logValue('')).toBe('""');
  expect(logValue('\u202eevil')).toBe('"\\u202eevil"');
  expect(logValue('\u{e0001}')).toBe('"\\udb40\\udc01"');
});
