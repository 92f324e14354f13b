// Receive a batch job's signed completion event on node:http: the raw body and headers go to
// verifyWebhook with the account's whsec_ secret; anything not genuine and fresh gets a 400.
import { createServer } from 'node:http';
import { verifyWebhook, WebhookVerificationError, type BatchEvent } from 'mailverdict/client';

const MAX_BODY_BYTES = 64 * 1024; // an event is a few hundred bytes

export function webhookReceiver(secret: string, onEvent: (event: BatchEvent) => Promise<void>) {
  return createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of req as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) return void res.writeHead(413).end();
      chunks.push(chunk);
    }
    try {
      const event = await verifyWebhook(Buffer.concat(chunks), req.headers, secret);
      await onEvent(event); // the same webhook-id may come again: handle it once
      res.writeHead(204).end();
    } catch (error) {
      res.writeHead(error instanceof WebhookVerificationError ? 400 : 500).end();
    }
  });
}
