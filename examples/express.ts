// Mount the /v1 API in an Express app through a few lines of adapter: Express's req becomes
// a fetch Request (the socket's address attached for clientIp), the Response is written back.
import { Readable } from 'node:stream';
import type { ReadableStream as NodeReadableStream } from 'node:stream/web';
import express, { type RequestHandler } from 'express';
import { createEngine } from 'mailverdict';
import { createMemoryStore, createService } from 'mailverdict/service';
import { createHandler, withRemoteAddress, type FetchHandler } from 'mailverdict/http';

/** Express middleware serving a fetch handler. */
export function fromFetch(handler: FetchHandler): RequestHandler {
  return (req, res, next) => {
    const headers = new Headers();
    for (let i = 0; i < req.rawHeaders.length; i += 2) {
      headers.append(req.rawHeaders[i] as string, req.rawHeaders[i + 1] as string);
    }
    const hasBody = req.method !== 'GET' && req.method !== 'HEAD';
    const request = new Request(`${req.protocol}://${req.get('host')}${req.originalUrl}`, {
      method: req.method,
      headers,
      ...(hasBody ? { body: Readable.toWeb(req) as ReadableStream, duplex: 'half' } : {}),
    } as RequestInit);
    handler(withRemoteAddress(request, req.socket.remoteAddress))
      .then((response) => {
        res.status(response.status);
        response.headers.forEach((value, name) => res.setHeader(name, value));
        if (response.body === null) res.end();
        else Readable.fromWeb(response.body as NodeReadableStream).pipe(res);
      })
      .catch(next);
  };
}

export const service = createService({
  engine: createEngine({ offline: true }), // drop `offline` to look up MX records
  store: createMemoryStore(),
});

export const app = express();
app.get('/health', (_req, res) => {
  res.send('ok');
});
// Before any body parser: the handler reads (and caps) JSON bodies itself.
app.use('/v1', fromFetch(createHandler(service)));

// app.listen(8080);
