import { apiSuite } from './api-suite.js';
import { directClient } from './helpers.js';

apiSuite('the handler, called directly', directClient);
