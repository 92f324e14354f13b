import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawRequest, type RawAnswer } from '../helpers/raw-http.js';

const script = join(import.meta.dirname, '../helpers/server-child.ts');

/**
 * What a hostile body costs mailverdict/node: at most this much more resident memory, for
 * 8 bodies of 16 MB of nested arrays without a key and 8 with one, at once. Parsing one such
 * body took the server from 84 to 872 MiB; refused before reading, or as soon as its depth
 * passes 16, each costs the buffers of its socket.
 */
const HOSTILE_RSS_BOUND = 64 * 1024 * 1024;

interface Memory {
  readonly rss: number;
  readonly heapUsed: number;
  /** The highest RSS since the memory asked for before. */
  readonly peak: number;
}

describe('hostile bodies against mailverdict/node in a process of its own', () => {
  let child: ChildProcess;
  let port: number;
  let secret: string;

  beforeAll(async () => {
    child = spawn(process.execPath, ['--expose-gc', '--import', 'tsx', script], {
      stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
    });
    const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
    const [line] = (await once(lines, 'line')) as [string];
    ({ port, secret } = JSON.parse(line) as { port: number; secret: string });
  });
  afterAll(async () => {
    const exited = once(child, 'exit');
    child.disconnect();
    await exited;
  });

  function memory(): Promise<Memory> {
    const answer = once(child, 'message') as Promise<[Memory]>;
    child.send('memory');
    return answer.then(([value]) => value);
  }

  async function verify(): Promise<number> {
    const response = await fetch(`http://127.0.0.1:${port}/v1/verify?email=a@example.org`, {
      headers: { authorization: `Bearer ${secret}` },
    });
    await response.arrayBuffer();
    return response.status;
  }

  it('refuses 16 nested 16 MB bodies at a small, bounded memory cost, answering others all along', async () => {
    const size = 16 * 1024 * 1024;
    const body = Buffer.concat([Buffer.from('{"emails":'), Buffer.alloc(size - 10, 0x5b)]);
    const half = size / 2;
    /**
     * A client that writes half its body, waits for `go`, writes the rest, then reads: all 16
     * are in the middle of their uploads while the steady client below is answered.
     */
    const halfway: Promise<void>[] = [];
    let go: () => void = () => undefined;
    const released = new Promise<void>((resolve) => (go = resolve));
    const hostile = (key: string | undefined): Promise<RawAnswer> =>
      rawRequest(
        port,
        [
          'POST /v1/verify HTTP/1.1',
          'Host: 127.0.0.1',
          'Content-Type: application/json',
          `Content-Length: ${size}`,
          ...(key === undefined ? [] : [`Authorization: Bearer ${key}`]),
          '',
          '',
        ].join('\r\n'),
        (socket) => {
          socket.pause();
          halfway.push(
            new Promise((resolve) => {
              socket.write(body.subarray(0, half), () => {
                resolve();
                void released.then(() => socket.write(body.subarray(half), () => socket.resume()));
              });
            }),
          );
        },
      );

    for (let i = 0; i < 20; i++) expect(await verify()).toBe(200);
    const before = await memory();
    const answers = [
      ...Array.from({ length: 8 }, () => hostile(undefined)),
      ...Array.from({ length: 8 }, () => hostile(secret)),
    ];
    await expect.poll(() => halfway.length).toBe(16);
    await Promise.all(halfway);
    // Sixteen uploads half done: the server answers everyone else all the same.
    for (let i = 0; i < 50; i++) expect(await verify()).toBe(200);
    go();
    const refused = await Promise.all(answers);
    for (const answer of refused.slice(0, 8)) expect(answer.status).toBe(401);
    for (const answer of refused.slice(8)) {
      expect(answer.status).toBe(400);
      expect(JSON.parse(answer.body)).toMatchObject({ field: 'body' });
    }
    for (let i = 0; i < 20; i++) expect(await verify()).toBe(200);
    const after = await memory();
    // The peak while they ran, against where it stood before them.
    const growth = after.peak - before.rss;
    console.log(
      `hostile bodies: RSS ${mib(before.rss)} before, peak ${mib(after.peak)}, ` +
        `${mib(after.rss)} after; heap ${mib(before.heapUsed)} -> ${mib(after.heapUsed)}`,
    );
    expect(growth).toBeLessThan(HOSTILE_RSS_BOUND);
  });
});

function mib(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}
