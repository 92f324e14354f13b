import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createNodeListener, serve, type RunningServer } from '../../src/http/node-server.js';
import { apiFixture, text } from '../helpers/service.js';
import { bearer } from '../http/helpers.js';

/**
 * What a client that reads nothing of an endless answer may cost the server: the socket
 * buffers the kernel grants a stalled connection on loopback (3.9 to 4.0 MB taken here, the
 * send buffer capped at 4 MiB by net.ipv4.tcp_wmem) and a chunk or two of ours. Without
 * back-pressure the stream would be read for as long as the connection lasts.
 */
const STALLED_BYTES_BOUND = 8 * 1024 * 1024;

/** A raw client that asks for `path` and never reads a byte of the answer. */
async function idleClient(port: number, path: string, headers: Record<string, string> = {}) {
  const socket = connect(port, '127.0.0.1');
  await once(socket, 'connect');
  socket.pause();
  socket.on('error', () => undefined);
  const lines = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`);
  socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n${lines.join('')}\r\n`);
  return socket;
}

/** The server side of the next connection `server` accepts. */
function nextConnection(server: Server): Promise<Socket> {
  return once(server, 'connection').then(([socket]) => socket as Socket);
}

describe('mailverdict/node: answers written with back-pressure and a write timeout', () => {
  const closers: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const close of closers.splice(0)) await close();
  });

  it('cuts a client that reads nothing of an endless answer, having read a bounded part of it', async () => {
    let pulled = 0;
    let cancelled = false;
    const chunk = new Uint8Array(64 * 1024).fill(0x61);
    const listener = createNodeListener(
      async () =>
        new Response(
          new ReadableStream<Uint8Array>({
            pull(controller) {
              pulled += chunk.byteLength;
              controller.enqueue(chunk);
            },
            cancel() {
              cancelled = true;
            },
          }),
        ),
      { writeTimeoutMs: 300 },
    );
    const server = createServer(listener).listen(0, '127.0.0.1');
    closers.push(() => new Promise((resolve) => server.close(resolve)));
    await once(server, 'listening');
    const { port } = server.address() as AddressInfo;
    const accepted = nextConnection(server);
    const client = await idleClient(port, '/endless');
    closers.push(async () => client.destroy());
    const serverSide = await accepted;
    await once(serverSide, 'close');
    expect(cancelled).toBe(true);
    const pulledAtCut = pulled;
    expect(pulledAtCut).toBeLessThan(STALLED_BYTES_BOUND);
    expect(serverSide.bytesWritten).toBeLessThan(STALLED_BYTES_BOUND);
    // Nothing more is read once the connection is cut.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(pulled).toBe(pulledAtCut);
  });

  describe('a job download through serve()', () => {
    async function completedJob(writeTimeoutMs: number) {
      const api = await apiFixture();
      const { accountId, secret } = await api.account({ credits: 20_000 });
      // Some 6 MB of JSON: more than the socket buffers of a client that reads nothing.
      const emails = Array.from({ length: 16_000 }, (_, i) => `user${i}@domain${i % 50}.com`);
      const { id } = await api.service.submitBatch({ accountId }, { emails, method: 'quick' });
      await api.service.batchWork.idle();
      const server: RunningServer = await serve(api.service, { writeTimeoutMs });
      closers.push(() => server.close());
      return { api, accountId, secret, id, server };
    }

    it('gives a client that reads at full speed the bytes the service streams', async () => {
      const { api, accountId, secret, id, server } = await completedJob(200);
      for (const format of ['json', 'csv', 'ndjson'] as const) {
        const response = await fetch(`${server.url}/v1/verify/${id}/results?format=${format}`, {
          headers: bearer(secret),
        });
        expect(response.status).toBe(200);
        const streamed = await text(await api.service.batchResults({ accountId }, id, { format }));
        expect(await response.text()).toBe(streamed);
      }
    });

    it('cuts a client that reads nothing after the write timeout, and answers others meanwhile', async () => {
      const { api, accountId, secret, id, server } = await completedJob(300);
      const downloadBytes = Buffer.byteLength(
        await text(await api.service.batchResults({ accountId }, id)),
      );
      expect(downloadBytes).toBeGreaterThan(STALLED_BYTES_BOUND / 2);
      const accepted = nextConnection(server.server);
      const idle = await idleClient(server.port, `/v1/verify/${id}/results`, {
        authorization: `Bearer ${secret}`,
      });
      closers.push(async () => idle.destroy());
      const serverSide = await accepted;
      const other = await fetch(`${server.url}/v1/verify?email=deliverable@example.com`, {
        headers: bearer(secret),
      });
      expect(other.status).toBe(200);
      await once(serverSide, 'close');
      // Cut before the whole download was handed over: the timeout did it, not the end.
      expect(serverSide.bytesWritten).toBeLessThan(STALLED_BYTES_BOUND);
      expect(serverSide.bytesWritten).toBeLessThan(downloadBytes);
    });
  });
});
