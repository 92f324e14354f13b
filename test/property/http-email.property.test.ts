import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { toCompact } from '../../src/format/shapes.js';
import { fcParams } from '../helpers/fast-check.js';
import { apiFixture } from '../helpers/service.js';
import { bearer, directClient } from '../http/helpers.js';

/**
 * `s` as percent-encoded bytes: UTF-8 for a well-formed string, and for a lone surrogate the
 * three bytes UTF-8 would give it if it were a scalar (WTF-8), which no UTF-8 decoder accepts.
 */
function percentEncoded(s: string): string {
  let out = '';
  for (const character of s) {
    const point = character.codePointAt(0) as number;
    const bytes =
      point >= 0xd800 && point <= 0xdfff
        ? [0xe0 | (point >> 12), 0x80 | ((point >> 6) & 0x3f), 0x80 | (point & 0x3f)]
        : [...Buffer.from(character, 'utf8')];
    for (const byte of bytes) out += `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

const wellFormed = (s: string) => !/\p{Cs}/u.test(s);

describe('GET /v1/verify: any string as email (property)', () => {
  it('answers an intact string with the library verdict, and bytes that are not UTF-8 with 400', async () => {
    const api = await apiFixture();
    const { accountId, secret } = await api.account({ credits: 1_000_000 });
    const client = await directClient(api.service);
    const used = async () => (await api.service.admin.getAccount(accountId)).credits.used;
    const text = fc.oneof(
      fc.string({ unit: 'binary', minLength: 1, maxLength: 80 }),
      fc.string({ unit: 'grapheme', minLength: 1, maxLength: 40 }).map((s) => `${s}@example.org`),
      fc.constantFrom('a\u0001b@example.org', 'a@b@example.org', '\ud800@example.org', ' '),
    );
    await fc.assert(
      fc.asyncProperty(text, fc.boolean(), async (email, formB) => {
        const before = await used();
        const query = `email=${percentEncoded(email)}${formB ? '&smtp=false' : '&method=quick'}`;
        const reply = await client.call(`/v1/verify?${query}`, { headers: bearer(secret) });
        if (!wellFormed(email)) {
          expect(reply.status).toBe(400);
          expect(reply.body).toMatchObject({ error: 'invalid_request', field: 'email' });
          expect(await used()).toBe(before);
          return;
        }
        expect(reply.status, reply.text).toBe(200);
        const method = formB ? 'standard' : 'quick';
        const library = api.service.engine.verifySync(email, { method });
        if (formB) expect(reply.body.email).toBe(library.email);
        else expect(reply.body).toEqual(toCompact(library));
        const charged = library.testAddress ? 0 : api.service.engine.cost(method);
        expect((await used()) - before).toBe(charged);
      }),
      fcParams({ numRuns: 200 }),
    );
  });
});
