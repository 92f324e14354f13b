/** One webhook POST, signed already (Standard Webhooks: webhook-id, -timestamp, -signature). */
export interface WebhookRequest {
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
  /** A 2xx within this long is delivered; anything slower is a timeout (15 s by default). */
  readonly timeoutMs: number;
  readonly signal?: AbortSignal;
  /**
   * May the host resolve to a loopback or private address: the callback policy stored with
   * the job. Absent: the sender's own setting.
   */
  readonly allowPrivateNetworks?: boolean;
}

/**
 * What came of a POST. Expected outcomes are answers, never rejections: a status (a redirect
 * is a status too: it is never followed), or why there was none.
 */
export type WebhookResponse =
  | { readonly kind: 'status'; readonly status: number }
  | {
      readonly kind: 'error';
      /** `forbidden_address`: the host resolves to an address the SSRF guard refuses. */
      readonly code: 'timeout' | 'connect' | 'dns' | 'forbidden_address' | 'aborted' | 'other';
      /** In our words: the job's status shows it to the API's client. */
      readonly message: string;
      /** The library's or the system's own words (`connect ECONNREFUSED ...`), for the log only. */
      readonly detail?: string;
    };

/**
 * The webhook port: sends one POST. The Node adapter (adapters/node/webhook.ts) resolves the
 * host, checks every address against the SSRF rules and connects to the checked address.
 */
export interface WebhookSender {
  send(request: WebhookRequest): Promise<WebhookResponse>;
}
