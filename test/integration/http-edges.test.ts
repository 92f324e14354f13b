import { createConnection, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serve, type RunningServer, type ServeOptions } from '../../src/http/node-server.js';
import { apiFixture, type ApiFixture } from '../helpers/service.js';
import { rawRequest, type RawAnswer } from '../helpers/raw-http.js';

/**
 * The HTTP edges of mailverdict/node (RFC 9110, RFC 9112), written on raw sockets: a client
 * library would normalize the path, add a Host, or stop sending when the answer comes.
 */
describe('mailverdict/node at the HTTP edges', () => {
  let api: ApiFixture;
  let secret: string;
  const servers: RunningServer[] = [];
  const errors: unknown[] = [];
  let server: RunningServer;

  async function start(options: ServeOptions = {}): Promise<RunningServer> {
    const made = await serve(api.service, {
      onError: (error) => errors.push(error),
      metrics: true,
      ...options,
    });
    servers.push(made);
    return made;
  }

  beforeAll(async () => {
    api = await apiFixture();
    ({ secret } = await api.account());
    server = await start();
  });
  afterAll(async () => {
    for (const made of servers) await made.close();
    expect(errors).toEqual([]);
  });

  const head = (lines: readonly string[]) => `${lines.join('\r\n')}\r\n\r\n`;
  const get = (path: string, more: readonly string[] = []) =>
    head([`GET ${path} HTTP/1.1`, 'Host: 127.0.0.1', ...more]);

  function expectEnvelope(answer: RawAnswer, status: number, error: string): void {
    expect(answer.status).toBe(status);
    expect(answer.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(JSON.parse(answer.body)).toMatchObject({ error, message: expect.any(String) });
  }

  /** The count of answers /metrics has seen with `status`. */
  async function counted(on: RunningServer, status: number): Promise<number> {
    const text = await (await fetch(`${on.url}/metrics`)).text();
    return text
      .split('\n')
      .filter((line) => line.startsWith('mailverdict_http_requests_total{'))
      .filter((line) => line.includes(`status="${status}"`))
      .reduce((sum, line) => sum + Number(line.split(' ').pop()), 0);
  }

  describe('header lists (RFC 6585 5: 431)', () => {
    it('takes 100 header fields and refuses 101 with 431 and the envelope', async () => {
      const padding = (n: number) => Array.from({ length: n }, (_, i) => `X-Pad-${i}: ${i}`);
      // Host and Authorization are two of them.
      const fits = await rawRequest(
        server.port,
        get('/v1/account', [`Authorization: Bearer ${secret}`, ...padding(98)]),
      );
      expect(fits.status).toBe(200);
      const over = await rawRequest(
        server.port,
        get('/v1/account', [`Authorization: Bearer ${secret}`, ...padding(99)]),
      );
      expectEnvelope(over, 431, 'request_header_fields_too_large');
      expect(JSON.parse(over.body)).toMatchObject({ field: 'headers', limit: 100 });
    });

    it('refuses 1,030 header fields with 431, never dropping the Authorization that came last', async () => {
      const padding = Array.from({ length: 1_030 }, (_, i) => `X-${i}: 1`);
      const answer = await rawRequest(
        server.port,
        get('/v1/account', [...padding, `Authorization: Bearer ${secret}`]),
      );
      expectEnvelope(answer, 431, 'request_header_fields_too_large');
    });

    it('refuses headers over maxHeaderBytes with 431 and the envelope, and takes its limits from the options', async () => {
      const small = await start({ maxHeaderBytes: 2048, maxHeadersCount: 5 });
      const big = await rawRequest(
        small.port,
        get('/v1/openapi.json', [`X-Big: ${'a'.repeat(3000)}`]),
      );
      expectEnvelope(big, 431, 'request_header_fields_too_large');
      expect(big.headers.connection).toBe('close');
      const fits = await rawRequest(
        small.port,
        get('/v1/openapi.json', [`X-Big: ${'a'.repeat(1500)}`]),
      );
      expect(fits.status).toBe(200);
      const many = await rawRequest(
        small.port,
        get('/v1/openapi.json', ['A: 1', 'B: 2', 'C: 3', 'D: 4', 'E: 5']),
      );
      expectEnvelope(many, 431, 'request_header_fields_too_large');
    });
  });

  describe('Host (RFC 9112 3.2)', () => {
    it('refuses an HTTP/1.1 request without Host with 400 and the envelope', async () => {
      const answer = await rawRequest(server.port, head(['GET /v1/openapi.json HTTP/1.1']));
      expectEnvelope(answer, 400, 'invalid_request');
      expect(JSON.parse(answer.body)).toMatchObject({ field: 'host' });
    });

    it('refuses two Host headers with 400 and the envelope, however they agree', async () => {
      for (const second of ['Host: 127.0.0.1', 'host: evil.example']) {
        const answer = await rawRequest(
          server.port,
          get('/v1/account', [second, `Authorization: Bearer ${secret}`]),
        );
        expectEnvelope(answer, 400, 'invalid_request');
        expect(JSON.parse(answer.body)).toMatchObject({ field: 'host' });
      }
    });

    it('takes an HTTP/1.0 request without Host, which HTTP/1.0 did not require', async () => {
      const answer = await rawRequest(server.port, head(['GET /v1/openapi.json HTTP/1.0']));
      expect(answer.status).toBe(200);
    });
  });

  describe('paths: percent-encoded slashes and dot segments never change the route', () => {
    it.each([
      '/v1/verify/%2e%2e/account',
      '/v1/verify/%2E%2E/account',
      '/v1/verify/.%2e/account',
      '/v1/verify/%2e./account',
      '/v1/verify/../account',
      '/v1/filters/%2e%2e/account',
      '/v1/%2e/account',
      '/v1/./account',
      '/v1/verify%2F..%2Faccount',
      '/v1/verify/%2e%2e%2Faccount',
      '/v1%2Faccount',
      '/v1/verify/..\\account',
    ])('%s is no route of ours (404 or 400), in origin and in absolute form', async (path) => {
      for (const target of [path, `http://127.0.0.1:${server.port}${path}`]) {
        const answer = await rawRequest(
          server.port,
          head([`GET ${target} HTTP/1.1`, 'Host: 127.0.0.1', `Authorization: Bearer ${secret}`]),
        );
        expect([400, 404]).toContain(answer.status);
        expect(JSON.parse(answer.body).error).toMatch(/^(not_found|invalid_request)$/);
        expect(answer.body).not.toContain('"plan"');
      }
    });

    it('names the batch of a dot-segment id no route either', async () => {
      const answer = await rawRequest(
        server.port,
        get('/v1/verify/%2e%2e/results', [`Authorization: Bearer ${secret}`]),
      );
      expectEnvelope(answer, 400, 'invalid_request');
    });
  });

  describe('timeouts: 408 with the envelope', () => {
    let slow: RunningServer;
    beforeAll(async () => {
      slow = await start({ headersTimeoutMs: 300, requestTimeoutMs: 600 });
    });

    it('answers headers that do not arrive in time with 408', async () => {
      const answer = await rawRequest(slow.port, 'GET /v1/openapi.json HTTP/1.1\r\nHost: a\r\n');
      expectEnvelope(answer, 408, 'request_timeout');
      expect(answer.headers.connection).toBe('close');
    });

    it('answers a body that does not arrive in time with 408, counted as 408', async () => {
      const before = await counted(slow, 408);
      const answer = await rawRequest(
        slow.port,
        head([
          'POST /v1/filters HTTP/1.1',
          'Host: 127.0.0.1',
          `Authorization: Bearer ${secret}`,
          'Content-Type: application/json',
          'Content-Length: 100',
        ]) + '{"value":',
      );
      expectEnvelope(answer, 408, 'request_timeout');
      // The handler was reading the body: its answer is the 408 too, and not a 500.
      await expect.poll(() => counted(slow, 408)).toBe(before + 1);
      expect(await counted(slow, 500)).toBe(0);
    });
  });

  describe('a client that aborts its upload', () => {
    it('is no error: nothing reported, no 500 counted, a 499 in the metrics', async () => {
      const before = await counted(server, 499);
      await new Promise<void>((resolve) => {
        void rawRequest(
          server.port,
          head([
            'POST /v1/verify HTTP/1.1',
            'Host: 127.0.0.1',
            `Authorization: Bearer ${secret}`,
            'Content-Type: application/json',
            'Content-Length: 100000',
          ]),
          (socket: Socket) => {
            socket.write('{"emails":["a@example.org",', () => {
              // Cut once the handler is reading: a reset, as a killed client sends.
              setTimeout(() => {
                socket.resetAndDestroy();
                resolve();
              }, 100);
            });
          },
        ).catch(() => undefined);
      });
      await expect.poll(() => counted(server, 499)).toBe(before + 1);
      expect(await counted(server, 500)).toBe(0);
      expect(errors).toEqual([]);
    });
  });

  describe('an answer given before the body is read reaches the client', () => {
    const post = (path: string, headers: readonly string[]) =>
      head([
        `POST ${path} HTTP/1.1`,
        'Host: 127.0.0.1',
        'Content-Type: application/json',
        ...headers,
      ]);

    /**
     * As simple clients do: write the whole request, then read the answer. A client whose write
     * fails (the server hung up while it was sending) reports that, not the answer.
     */
    function writeAllThenRead(body: Buffer, failedWrites: Error[]) {
      return (socket: Socket) => {
        socket.pause();
        socket.write(body, (error) => {
          if (error !== undefined && error !== null) failedWrites.push(error);
          socket.resume();
        });
      };
    }

    it('answers 20 raw clients sending 20 MB each their 413, reading the rest instead of resetting', async () => {
      const body = Buffer.alloc(20 * 1024 * 1024, 0x5b);
      const failedWrites: Error[] = [];
      const answers = await Promise.all(
        Array.from({ length: 20 }, () =>
          rawRequest(
            server.port,
            post('/v1/verify', [
              `Authorization: Bearer ${secret}`,
              `Content-Length: ${body.length}`,
            ]),
            writeAllThenRead(body, failedWrites),
          ),
        ),
      );
      for (const answer of answers) expectEnvelope(answer, 413, 'payload_too_large');
      expect(failedWrites).toEqual([]);
    });

    it('answers 8 clients without a key their 401 while they are still sending, and keeps the connection', async () => {
      const body = Buffer.alloc(8 * 1024 * 1024, 0x5b);
      const failedWrites: Error[] = [];
      const answers = await Promise.all(
        Array.from({ length: 8 }, () =>
          rawRequest(
            server.port,
            post('/v1/verify', [`Content-Length: ${body.length}`]),
            writeAllThenRead(body, failedWrites),
          ),
        ),
      );
      for (const answer of answers) {
        expectEnvelope(answer, 401, 'unauthorized');
        expect(answer.headers.connection).not.toBe('close');
      }
      expect(failedWrites).toEqual([]);
    });

    it('hangs up on a body that runs past twice maxBodyBytes after its answer', async () => {
      const small = await start({ maxBodyBytes: 1024 * 1024 });
      const chunk = Buffer.alloc(256 * 1024, 0x5b);
      const frame = Buffer.concat([
        Buffer.from(`${chunk.length.toString(16)}\r\n`),
        chunk,
        Buffer.from('\r\n'),
      ]);
      const socket = createConnection(small.port, '127.0.0.1');
      let received = '';
      let written = 0;
      socket.setEncoding('latin1');
      socket.on('data', (text: string) => (received += text));
      socket.on('error', () => undefined);
      const closed = new Promise((resolve) => socket.once('close', resolve));
      socket.write(post('/v1/verify', ['Transfer-Encoding: chunked']));
      // Endless, until the server hangs up (or 256 MB, which it must never take).
      const pump = (): void => {
        while (!socket.destroyed && written < 256 * 1024 * 1024) {
          written += frame.length;
          if (!socket.write(frame)) return void socket.once('drain', pump);
        }
      };
      pump();
      await closed;
      expect(received).toMatch(/^HTTP\/1\.1 401 /);
      // Two MiB thrown away, then the connection is cut: what is more sat in socket buffers.
      expect(written).toBeLessThan(64 * 1024 * 1024);
    });

    it('closes the connection after answering a body declared past twice maxBodyBytes', async () => {
      const answer = await rawRequest(
        server.port,
        post('/v1/verify', [`Content-Length: ${64 * 1024 * 1024}`]),
      );
      expectEnvelope(answer, 413, 'payload_too_large');
      expect(answer.headers.connection).toBe('close');
    });

    it('answers a client expecting 100 Continue before it sends its body', async () => {
      const refused = await rawRequest(
        server.port,
        post('/v1/verify', ['Expect: 100-continue', 'Content-Length: 5000000']),
      );
      expectEnvelope(refused, 401, 'unauthorized');
      // With a key, the handler reads: the client is told to go on, and is answered.
      const body = JSON.stringify({ emails: ['a@example.org'] });
      let continued = false;
      const admitted = await rawRequest(
        server.port,
        post('/v1/verify', [
          `Authorization: Bearer ${secret}`,
          'Expect: 100-continue',
          `Content-Length: ${body.length}`,
        ]),
        (socket) => {
          socket.once('data', (chunk: Buffer) => {
            continued = chunk.toString().startsWith('HTTP/1.1 100 Continue');
            socket.write(body);
          });
        },
      );
      expect(continued).toBe(true);
      expect(admitted.status).toBe(202);
    });
  });
});
