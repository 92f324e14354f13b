import { describe, it } from 'vitest';
import { EXIM_REQUIRE, eximUnavailable, startExim } from '../helpers/exim-server.js';
import { mtaAvailable, opensslUnavailable } from '../helpers/mta.js';
import { mtaContract } from './mta-contract.js';

/**
 * The prober against Exim 4 from Debian, unpacked by scripts/fetch-test-mtas.sh (which .ci/run
 * calls). Skipped with a notice where it is not unpacked or cannot run, except under
 * MAILVERDICT_REQUIRE_EXIM=1 (CI), where that fails.
 */
if (mtaAvailable('Exim', EXIM_REQUIRE, eximUnavailable() ?? opensslUnavailable())) {
  mtaContract('Exim', startExim);
} else {
  describe('smtp method against Exim on loopback', () => {
    it.skip('Exim is not available here (see the notice)', () => {});
  });
}
