/**
 * One subscription per client and channel, fanned out to every store of the process that listens on it.
 * @module
 */

import type { StoreClient } from './client.js';

/** Listens on one pub/sub channel for the stores of this process. */
export class EventHub {
  /** Grows on every reset: a mirror filled under an older generation may have missed messages. */
  generation = 0;
  /** Whether the subscription is confirmed and no reset happened since. */
  listening = false;
  readonly #messages = new Set<(text: string) => void>();
  readonly #resets = new Set<() => void>();
  #started = false;

  constructor(
    readonly client: StoreClient,
    readonly channel: string,
  ) {}

  /** Whether the client can subscribe at all (without it, everything polls). */
  get available(): boolean {
    return this.client.subscribe !== undefined;
  }

  /** Registers a store's listeners (subscribing on first use); returns a function that removes them. */
  listen(onMessage: (text: string) => void, onReset: () => void): () => void {
    this.#messages.add(onMessage);
    this.#resets.add(onReset);
    this.#start();
    return () => {
      this.#messages.delete(onMessage);
      this.#resets.delete(onReset);
    };
  }

  #start(): void {
    const { subscribe } = this.client;
    if (this.#started || subscribe === undefined) return;
    this.#started = true;
    subscribe
      .call(this.client, this.channel, {
        message: (text) => {
          for (const listener of this.#messages) listener(text);
        },
        reset: () => this.#reset(),
      })
      .then(
        () => {
          this.listening = true;
          // Anything published before the subscription was confirmed may have been missed.
          this.#reset(true);
        },
        () => {
          // No pub/sub then: waiters keep their polls, mirrors expire by age; try again later.
          this.#started = false;
        },
      );
  }

  #reset(keepListening = false): void {
    this.generation += 1;
    if (!keepListening) this.listening = false;
    for (const listener of this.#resets) listener();
    // A reconnect ends with node-redis/ioredis subscribed again; trust messages from here on.
    if (!keepListening)
      queueMicrotask(() => {
        this.listening = this.#started;
      });
  }
}

const hubs = new WeakMap<StoreClient, Map<string, EventHub>>();

/** The process's hub for `channel` on `client`. */
export function hubFor(client: StoreClient, channel: string): EventHub {
  let byChannel = hubs.get(client);
  if (byChannel === undefined) {
    byChannel = new Map();
    hubs.set(client, byChannel);
  }
  let hub = byChannel.get(channel);
  if (hub === undefined) {
    hub = new EventHub(client, channel);
    byChannel.set(channel, hub);
  }
  return hub;
}
