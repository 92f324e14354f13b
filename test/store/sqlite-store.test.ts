import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import { createSqliteStore } from '../../src/sqlite.js';
import { storeContract } from './contract.js';

const dir = mkdtempSync(join(tmpdir(), 'mailverdict-sqlite-'));
let files = 0;
afterAll(() => rmSync(dir, { recursive: true, force: true }));

storeContract('sqlite (file, WAL)', () => createSqliteStore(join(dir, `contract-${files++}.db`)));
storeContract('sqlite (:memory:)', () => createSqliteStore(':memory:'));
