import ipaddr from 'ipaddr.js';
import type { JobCallbackPolicy } from '../../ports/batch-store.js';
import { isPublicAddress } from '../../smtp/target-policy.js';
import { invalidRequest } from '../service-error.js';
import { requireText } from '../validate.js';

/** Longest callback URL taken. */
export const MAX_CALLBACK_URL_LENGTH = 2048;

/** Take http:// callbacks too (else https only); take loopback and private addresses too. */
export type CallbackPolicy = JobCallbackPolicy;

/**
 * A batch's `callback_url`, checked at submission: an absolute http(s) URL (https unless the
 * policy allows http) without credentials, whose host is not a non-public IP address in any
 * spelling (URL parsing already turns `2130706433` and `0x7f.1` into `127.0.0.1`) nor
 * `localhost`. Names are resolved, and every address checked, when the webhook is sent.
 * Undefined or null: no callback.
 */
export function requireCallbackUrl(value: unknown, policy: CallbackPolicy): string | null {
  if (value === undefined || value === null) return null;
  const text = requireText(value, 'callback_url', MAX_CALLBACK_URL_LENGTH);
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw invalidRequest('callback_url', 'callback_url must be an absolute URL');
  }
  const schemes = policy.allowHttp ? ['https:', 'http:'] : ['https:'];
  if (!schemes.includes(url.protocol)) {
    throw invalidRequest(
      'callback_url',
      `callback_url must use ${policy.allowHttp ? 'https or http' : 'https'}, not ${url.protocol.slice(0, -1)}`,
    );
  }
  if (url.username !== '' || url.password !== '') {
    throw invalidRequest('callback_url', 'callback_url must not carry credentials');
  }
  if (!policy.allowPrivateNetworks) {
    // `localhost.` is `localhost`, fully qualified: one trailing dot goes before comparing.
    const host = url.hostname
      .replace(/^\[(.*)\]$/, '$1')
      .replace(/\.$/, '')
      .toLowerCase();
    const privateIp = ipaddr.isValid(host) && !isPublicAddress(host);
    if (privateIp || host === 'localhost' || host.endsWith('.localhost')) {
      throw invalidRequest(
        'callback_url',
        `callback_url must point to a public address, not ${url.hostname}`,
      );
    }
  }
  url.hash = '';
  return url.href;
}
