import { describe, it } from 'vitest';
import { HARAKA_REQUIRE, harakaUnavailable, startHaraka } from '../helpers/haraka-server.js';
import { mtaAvailable, opensslUnavailable } from '../helpers/mta.js';
import { mtaContract } from './mta-contract.js';

/**
 * The prober against Haraka (a devDependency), started from a config directory of its own.
 * It needs the openssl command for its self-signed certificate: skipped with a notice without
 * it (or without Haraka in node_modules), except under MAILVERDICT_REQUIRE_HARAKA=1 (CI), where
 * that fails.
 */
if (mtaAvailable('Haraka', HARAKA_REQUIRE, harakaUnavailable() ?? opensslUnavailable())) {
  mtaContract('Haraka', startHaraka);
} else {
  describe('smtp method against Haraka on loopback', () => {
    it.skip('Haraka is not available here (see the notice)', () => {});
  });
}
