import { describe, it } from 'vitest';
import { mtaAvailable, opensslUnavailable } from '../helpers/mta.js';
import {
  OPENSMTPD_REQUIRE,
  openSmtpdQuirks,
  openSmtpdUnavailable,
  startOpenSmtpd,
} from '../helpers/opensmtpd-server.js';
import { mtaContract } from './mta-contract.js';

/**
 * The prober against OpenSMTPD 6.8 from Debian, unpacked by scripts/fetch-test-mtas.sh (which
 * .ci/run calls) and run as root in a mount namespace of its own. Skipped with a notice where
 * it cannot run, except under MAILVERDICT_REQUIRE_OPENSMTPD=1 (CI), where that fails.
 */
if (mtaAvailable('OpenSMTPD', OPENSMTPD_REQUIRE, openSmtpdUnavailable() ?? opensslUnavailable())) {
  mtaContract('OpenSMTPD', startOpenSmtpd, openSmtpdQuirks());
} else {
  describe('smtp method against OpenSMTPD on loopback', () => {
    it.skip('OpenSMTPD is not available here (see the notice)', () => {});
  });
}
