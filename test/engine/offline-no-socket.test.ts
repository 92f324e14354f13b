import { createHook } from 'node:async_hooks';
import { describe, expect, it } from 'vitest';
import { createEngine } from '../../src/compose/engine.js';

// Every socket, DNS query or connection attempt in Node creates one of these native resources;
// an async hook sees each one as it is created, whatever module asked for it.
const NETWORK_RESOURCES = /TCP|UDP|PIPE|TLS|QUERY|GETADDRINFO|GETNAMEINFO|DNSCHANNEL|HTTP/i;

async function networkResourcesDuring(work: () => Promise<unknown>): Promise<string[]> {
  const seen: string[] = [];
  const hook = createHook({
    init(_id, type) {
      if (NETWORK_RESOURCES.test(type)) seen.push(type);
    },
  });
  hook.enable();
  try {
    await work();
  } finally {
    hook.disable();
  }
  return seen;
}

describe('offline verification', () => {
  it('opens no socket and sends no DNS query', async () => {
    const seen = await networkResourcesDuring(async () => {
      const engine = createEngine({ offline: true });
      for (const method of ['quick', 'standard'] as const) {
        for (const address of [
          'ann@acme.io',
          'sales@gmail.com',
          'x@mailinator.com',
          'user@bücher.de',
          'bad..x@y.com',
        ]) {
          await engine.verify(address, { method });
        }
      }
    });
    expect(seen).toEqual([]);
  });

  it('the probe can see a real lookup (so the test above can fail)', async () => {
    const seen = await networkResourcesDuring(async () => {
      const { Resolver } = await import('node:dns/promises');
      const resolver = new Resolver({ timeout: 50, tries: 1 });
      resolver.setServers(['127.0.0.1:9']);
      await resolver.resolveMx('example.com').catch(() => undefined);
    });
    expect(seen.length).toBeGreaterThan(0);
  });
});
