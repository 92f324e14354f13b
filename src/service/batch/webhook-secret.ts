import type { ServiceContext } from '../context.js';
import { ServiceError } from '../service-error.js';
import { answering, requireText } from '../validate.js';

/** Administration of the `whsec_` secret that signs an account's webhooks (Standard Webhooks). */
export interface WebhookSecretAdmin {
  /**
   * Replaces the account's webhook secret with a fresh one and answers it. Attempts from then
   * on, retries of earlier webhooks included, are signed with the new secret.
   */
  rotateWebhookSecret(accountId: string): Promise<{ webhookSecret: string }>;
}

/** A fresh `whsec_` secret: 32 random bytes in base64, as Standard Webhooks libraries read it. */
export function newWebhookSecret(random: ServiceContext['random']): string {
  return `whsec_${Buffer.from(random(32)).toString('base64')}`;
}

export function createWebhookSecretAdmin(ctx: ServiceContext): WebhookSecretAdmin {
  return {
    rotateWebhookSecret: (accountId) =>
      answering(async () => {
        const id = requireText(accountId, 'account_id');
        const webhookSecret = newWebhookSecret(ctx.random);
        const updated = await ctx.store
          .updateAccount(id, { webhookSecret })
          .finally(() => ctx.keyCache.clear());
        if (updated === undefined) throw new ServiceError('not_found', `No account ${id}.`);
        return { webhookSecret };
      }),
  };
}
