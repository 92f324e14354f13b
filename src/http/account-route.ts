import type { Exchange } from './exchange.js';
import { json, type Reply } from './responses.js';

/** GET /v1/account: the account object (service/account.ts). */
export async function accountRoute(exchange: Exchange): Promise<Reply> {
  const caller = await exchange.authenticate('account', exchange.query.get('api_key'));
  return json(200, await exchange.service.account(caller));
}
