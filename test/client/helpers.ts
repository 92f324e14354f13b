import { createClient, type Client, type ClientOptions } from '../../src/client.js';
import { serve, type RunningServer } from '../../src/node.js';
import type { EngineOptions } from '../../src/compose/engine.js';
import type { BatchOptions, NewAccount } from '../../src/service/service.js';
import { createMemoryStore } from '../../src/store/memory-store.js';
import { apiFixture, type ApiFixture } from '../helpers/service.js';

/** mailverdict/node on loopback over a memory store and an offline engine (unless told). */
export interface LoopbackApi {
  readonly api: ApiFixture;
  readonly server: RunningServer;
  /** A new account (enterprise, 1,000 credits unless told) and its private key. */
  key(account?: Partial<NewAccount>): Promise<{ accountId: string; secret: string }>;
  close(): Promise<void>;
}

export async function startLoopbackApi(
  engine: EngineOptions = { offline: true },
  batch: BatchOptions = {},
): Promise<LoopbackApi> {
  const api = await apiFixture(createMemoryStore(), engine, batch);
  const server = await serve(api.service, { onError: () => undefined });
  return {
    api,
    server,
    key: (account) => api.account(account),
    close: () => server.close(),
  };
}

/**
 * A sleep that records what it was asked to wait and returns at once (tests assert the waits
 * the rules chose, never how long anything took); `waited` lists them in order.
 */
export function recordingSleep() {
  const waited: number[] = [];
  return {
    waited,
    sleep: async (ms: number, signal?: AbortSignal) => {
      waited.push(ms);
      if (signal?.aborted === true) throw signal.reason;
      // A turn of the event loop, so that polling loops let the server work.
      await new Promise((resolve) => setTimeout(resolve, 1));
    },
  };
}

/** A client of `baseUrl` with a recording sleep and the jitter pinned at one half. */
export function testClient(
  baseUrl: string,
  apiKey: string,
  options: Partial<ClientOptions> = {},
): Client & { waited: number[] } {
  const { waited, sleep } = recordingSleep();
  const client = createClient({ baseUrl, apiKey, sleep, random: () => 0.5, ...options });
  return Object.assign(client, { waited });
}
