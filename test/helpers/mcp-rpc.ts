// One raw 2026-07-28 JSON-RPC request over Streamable HTTP, for what a v2 Client does not send.

/** The client capabilities that declare the MCP Tasks extension. */
export const tasksCapability = { extensions: { 'io.modelcontextprotocol/tasks': {} } };

/** A JSON-RPC answer's body. */
export interface RpcAnswer {
  result?: Record<string, unknown>;
  error?: { code: number; message: string };
}

let nextId = 1;

/**
 * POSTs one request with the 2026-07-28 headers and `_meta` envelope, declaring `capabilities`
 * (the Tasks extension unless told otherwise); resolves to the JSON body.
 */
export async function rpc(
  url: string,
  method: string,
  params: Record<string, unknown>,
  capabilities: object = tasksCapability,
): Promise<RpcAnswer> {
  const name = method === 'tools/call' ? params['name'] : params['taskId'];
  const response = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': method,
      ...(typeof name === 'string' ? { 'mcp-name': name } : {}),
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: nextId++,
      method,
      params: {
        ...params,
        _meta: {
          ...(params['_meta'] as object),
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1.0.0' },
          'io.modelcontextprotocol/clientCapabilities': capabilities,
        },
      },
    }),
  });
  const text = await response.text();
  // An SSE answer carries the JSON-RPC message on its data line.
  const json = text.startsWith('{') ? text : (/^data: (.*)$/m.exec(text)?.[1] ?? text);
  return JSON.parse(json) as RpcAnswer;
}
