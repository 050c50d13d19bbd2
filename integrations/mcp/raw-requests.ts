/**
 * JSON-RPC requests of our own on a connected v2 `Client`'s transport, answered with the raw
 * result: the path for answers the SDK's decoder refuses (a Tasks handle, `resultType: "task"`,
 * which `callTool` and `request()` reject as `UNSUPPORTED_RESULT_TYPE`). Our requests carry
 * string ids, which the SDK's own numeric ids never collide with, and their answers are taken off
 * the transport before the client sees them (as the client does for its `subscriptions/listen`).
 * @module
 */

import {
  CLIENT_CAPABILITIES_META_KEY,
  type Client,
  isJSONRPCErrorResponse,
  isJSONRPCResultResponse,
  ProtocolError,
  SdkError,
  SdkErrorCode,
  type Transport,
} from '@modelcontextprotocol/client';

/** A raw JSON-RPC result: the wire object, `resultType` included. */
export type RawResult = Record<string, unknown>;

type Settle = (answer: RawResult | Error) => void;

// The client's own envelope (protocol version, client info, capabilities), from the protected
// seam every request of its goes through.
interface EnvelopeSeam {
  _outboundMetaEnvelope(): Readonly<Record<string, unknown>> | undefined;
}

const channels = new WeakMap<Client, RawRequests>();

/**
 * Sends JSON-RPC requests of our own over one client's transport and routes their answers back.
 */
export class RawRequests {
  readonly #client: Client;
  readonly #transport: Transport;
  readonly #pending = new Map<string, Settle>();
  #next = 0;

  /** The channel of `client` on its current transport (a new one after it reconnected). */
  static of(client: Client): RawRequests {
    const known = channels.get(client);
    if (known !== undefined && known.#transport === client.transport) return known;
    const channel = new RawRequests(client);
    channels.set(client, channel);
    return channel;
  }

  private constructor(client: Client) {
    const transport = client.transport;
    if (transport === undefined) throw new SdkError(SdkErrorCode.NotConnected, 'Not connected');
    this.#client = client;
    this.#transport = transport;
    const inner = transport.onmessage;
    transport.onmessage = (message, extra) => {
      const id = (message as { id?: unknown }).id;
      const settle = typeof id === 'string' ? this.#pending.get(id) : undefined;
      if (settle === undefined) return inner?.(message, extra);
      this.#pending.delete(id as string);
      if (isJSONRPCResultResponse(message)) settle(message.result as RawResult);
      else if (isJSONRPCErrorResponse(message))
        settle(ProtocolError.fromError(message.error.code, message.error.message, message.error.data));
    };
    const closed = transport.onclose;
    transport.onclose = () => {
      const pending = [...this.#pending.values()];
      this.#pending.clear();
      for (const settle of pending) settle(new SdkError(SdkErrorCode.ConnectionClosed, 'Connection closed'));
      closed?.();
    };
  }

  /**
   * Sends `method` with `params` (the client's envelope added, `capabilities` merged into its
   * client capabilities) and resolves to the raw result; ends on `signal`, cancelling the request
   * on the wire.
   */
  request(
    method: string,
    params: Record<string, unknown>,
    signal: AbortSignal,
    capabilities: Record<string, unknown>,
  ): Promise<RawResult> {
    if (signal.aborted) return Promise.reject(signal.reason);
    const id = `td-${String(this.#next++)}`;
    const envelope = (this.#client as unknown as EnvelopeSeam)._outboundMetaEnvelope() ?? {};
    const given = params['_meta'] as Record<string, unknown> | undefined;
    // Capabilities the call names (those of a caller it is made for) stand for the client's own,
    // and still gain the ones this request needs.
    const declared = (given?.[CLIENT_CAPABILITIES_META_KEY] ??
      envelope[CLIENT_CAPABILITIES_META_KEY] ??
      {}) as Record<string, unknown>;
    const message = {
      jsonrpc: '2.0' as const,
      id,
      method,
      params: {
        ...params,
        _meta: {
          ...envelope,
          ...given,
          [CLIENT_CAPABILITIES_META_KEY]: mergeExtensions(declared, capabilities),
        },
      },
    };
    // On a transport with a stream per request (Streamable HTTP, 2026-07-28) closing the stream is
    // the cancellation; elsewhere it is a notifications/cancelled.
    const perRequest = (this.#transport as { hasPerRequestStream?: boolean }).hasPerRequestStream === true;
    const stream = perRequest ? new AbortController() : undefined;
    return new Promise<RawResult>((resolve, reject) => {
      const onAbort = () => {
        if (!this.#pending.delete(id)) return;
        if (stream !== undefined) stream.abort(signal.reason);
        else this.#cancel(id, signal.reason);
        reject(signal.reason);
      };
      this.#pending.set(id, (answer) => {
        signal.removeEventListener('abort', onAbort);
        if (answer instanceof Error) reject(answer);
        else resolve(answer);
      });
      signal.addEventListener('abort', onAbort, { once: true });
      this.#transport
        .send(message, stream === undefined ? {} : { requestSignal: stream.signal })
        .catch((error: unknown) => {
          const settle = this.#pending.get(id);
          if (settle === undefined) return;
          this.#pending.delete(id);
          settle(error instanceof Error ? error : new Error(String(error)));
        });
    });
  }

  #cancel(id: string, reason: unknown): void {
    this.#client
      .notification({ method: 'notifications/cancelled', params: { requestId: id, reason: String(reason) } })
      .catch(() => {
        // The connection is gone: the request died with it.
      });
  }
}

function mergeExtensions(
  declared: Record<string, unknown>,
  extra: Record<string, unknown>,
): Record<string, unknown> {
  const extensions = {
    ...(declared['extensions'] as Record<string, unknown> | undefined),
    ...(extra['extensions'] as Record<string, unknown> | undefined),
  };
  return { ...declared, ...extra, extensions };
}
