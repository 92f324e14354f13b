import type { WebhookMessage, WebhookQuery } from '../../ports/batch-store.js';

/**
 * Whether `message` is pending with its next attempt at `at`: as dueWebhooks read it (a lease
 * takes it only so), or as a lease set it (an attempt's outcome is written only so). A
 * redelivery queued meanwhile moved it, and then neither applies.
 */
export function pendingAt(message: WebhookMessage | undefined, at: number): boolean {
  return message?.status === 'pending' && message.nextAttemptAt === at;
}

/** The order listWebhooks answers in: newest first, then by id, the same in every store. */
export function newestFirst(a: WebhookMessage, b: WebhookMessage): number {
  return b.createdAt - a.createdAt || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0);
}

/** The messages `query` asks for, from an account's messages in any order. */
export function listed(messages: Iterable<WebhookMessage>, query: WebhookQuery): WebhookMessage[] {
  return [...messages]
    .filter((message) => query.status === undefined || message.status === query.status)
    .sort(newestFirst)
    .slice(0, Math.max(0, query.limit));
}

/** A message as stored before it kept its last status: none known. */
export function withLastStatus(message: WebhookMessage): WebhookMessage {
  return message.lastStatus === undefined ? { ...message, lastStatus: null } : message;
}
