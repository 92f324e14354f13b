import type { WebhookRequest, WebhookResponse, WebhookSender } from '../../ports/webhook.js';

export interface MemoryWebhookSender extends WebhookSender {
  /** Every request sent, in order. */
  readonly sent: readonly WebhookRequest[];
}

/**
 * The webhook port's in-memory twin, for tests: records each request and answers what
 * `answer` says (default 200), without a socket.
 *
 * @example
 * const webhooks = createMemoryWebhookSender(() => ({ kind: 'status', status: 500 }));
 * const service = createService({ engine, store, batch: { webhookSender: webhooks } });
 */
export function createMemoryWebhookSender(
  answer: (request: WebhookRequest) => WebhookResponse = () => ({ kind: 'status', status: 200 }),
): MemoryWebhookSender {
  const sent: WebhookRequest[] = [];
  return {
    sent,
    async send(request) {
      sent.push(request);
      return answer(request);
    },
  };
}
