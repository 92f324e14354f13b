import { createMemoryStore } from '../../src/store/memory-store.js';
import { storeContract } from './contract.js';

storeContract('memory', () => createMemoryStore());
