import type { WebhookSender } from '../ports/webhook.js';
import { buildService, type Service, type ServiceOptions } from '../service/service.js';

/**
 * The service core with the Node defaults: keys, plans and rate limits, credits, filters,
 * accounts and batch jobs around an engine, on any Store; webhooks go out over node:http(s)
 * behind the SSRF guard unless `batch.webhookSender` says otherwise.
 *
 * @example
 * const service = createService({ engine: createEngine({ offline: true }), store: createMemoryStore() });
 * const account = await service.admin.createAccount({ email: 'ops@example.org', credits: 100 });
 * const { secret } = await service.admin.createKey(account.id);
 * const caller = await service.authenticate({ authorization: `Bearer ${secret}`, endpoint: 'verify' });
 * const { verdict, charged } = await service.verify(caller, 'alice@example.org', { method: 'quick' });
 */
export function createService(options: ServiceOptions): Service {
  return buildService(options, { webhookSender: lazyNodeSender });
}

/**
 * The default sender, node:http(s) behind the SSRF guard, loaded on the first webhook: a
 * service that never sends one never loads node:http (cold start).
 */
function lazyNodeSender({
  allowPrivateNetworks,
}: {
  allowPrivateNetworks: boolean;
}): WebhookSender {
  let sender: Promise<WebhookSender> | undefined;
  return {
    async send(request) {
      sender ??= import('../adapters/node/webhook.js').then((m) =>
        m.createNodeWebhookSender({ allowPrivateNetworks }),
      );
      return (await sender).send(request);
    },
  };
}
