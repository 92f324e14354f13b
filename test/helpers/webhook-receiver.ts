import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One POST a receiver got. */
export interface WebhookHit {
  readonly path: string;
  readonly host: string;
  readonly headers: IncomingMessage['headers'];
  readonly body: string;
}

/** How a receiver answers a hit: a status, a redirect, or never ('hang'). */
export type WebhookAnswer = number | 'hang' | { redirect: string };

export interface WebhookReceiver {
  /** Every hit so far, in order. */
  readonly hits: readonly WebhookHit[];
  readonly port: number;
  /** `http://127.0.0.1:<port>/hook`. */
  readonly url: string;
  /** The first hit, once there is one. */
  first(): Promise<WebhookHit>;
  close(): Promise<void>;
}

/**
 * A webhook receiver on 127.0.0.1 (a port of its own), answering each POST as `answer` says:
 * 204 unless told.
 */
export async function startWebhookReceiver(
  answer: (hit: WebhookHit) => WebhookAnswer = () => 204,
): Promise<WebhookReceiver> {
  const hits: WebhookHit[] = [];
  let arrived: (hit: WebhookHit) => void = () => undefined;
  const firstHit = new Promise<WebhookHit>((resolve) => (arrived = resolve));
  const server = createServer((request, response) => {
    let body = '';
    request.on('data', (data: Buffer) => (body += data.toString()));
    request.on('end', () => {
      const hit = {
        path: request.url ?? '',
        host: request.headers.host ?? '',
        headers: request.headers,
        body,
      };
      hits.push(hit);
      arrived(hit);
      const what = answer(hit);
      if (what === 'hang') return;
      if (typeof what === 'object') {
        response.writeHead(301, { location: what.redirect }).end();
        return;
      }
      response.writeHead(what).end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    hits,
    port,
    url: `http://127.0.0.1:${port}/hook`,
    first: () => firstHit,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
