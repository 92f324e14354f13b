import { apiSuite } from '../http/api-suite.js';
import { nodeClient } from '../http/helpers.js';

apiSuite('mailverdict/node over loopback HTTP', nodeClient);
