import type { WebhookMessage } from '../../ports/store.js';
import { accountOf, type ServiceContext } from '../context.js';
import { ServiceError } from '../service-error.js';
import {
  answering,
  optionalObject,
  requireBoolean,
  requireInteger,
  requireText,
} from '../validate.js';

/** Administration of the `whsec_` secret that signs an account's webhooks (Standard Webhooks). */
export interface WebhookSecretAdmin {
  /**
   * Replaces the account's webhook secret with a fresh one and answers it. Attempts from then
   * on, retries of earlier webhooks included, are signed with the new secret.
   */
  rotateWebhookSecret(accountId: string): Promise<{ webhookSecret: string }>;
  /**
   * The account's webhooks, newest first: each delivery with where it stands (`webhooks
   * list`). `failed` lists only those given up; `limit` is 1 to 1,000, default 100.
   */
  listWebhooks(
    accountId: string,
    query?: { failed?: boolean; limit?: number },
  ): Promise<readonly WebhookDelivery[]>;
}

/** One webhook of the outbox as an operator lists it: the message without its body. */
export type WebhookDelivery = Omit<WebhookMessage, 'payload' | 'accountId'>;

/** Webhooks listed at once by default, and at most. */
export const WEBHOOKS_LISTED = 100;
export const MAX_WEBHOOKS_LISTED = 1_000;

/** A fresh `whsec_` secret: 32 random bytes in base64, as Standard Webhooks libraries read it. */
export function newWebhookSecret(random: ServiceContext['random']): string {
  return `whsec_${Buffer.from(random(32)).toString('base64')}`;
}

export function createWebhookSecretAdmin(ctx: ServiceContext): WebhookSecretAdmin {
  return {
    listWebhooks: (accountId, query) =>
      answering(async () => {
        const account = await accountOf(ctx, accountId);
        const fields = optionalObject(query, 'query');
        const failed =
          fields.failed === undefined ? false : requireBoolean(fields.failed, 'failed');
        const limit =
          fields.limit === undefined
            ? WEBHOOKS_LISTED
            : requireInteger(fields.limit, 'limit', 1, MAX_WEBHOOKS_LISTED);
        const messages = await ctx.store.listWebhooks(account.id, {
          ...(failed ? { status: 'failed' } : {}),
          limit,
        });
        return messages.map(({ payload: _payload, accountId: _account, ...delivery }) => delivery);
      }),
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
