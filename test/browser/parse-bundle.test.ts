import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAddress, PROFILES, type ProfileName } from '../../src/parse.js';
import { chromiumAvailable, launchChromium } from '../helpers/chromium.js';
import { loadSyntaxCorpus } from '../helpers/shared.js';

/**
 * mailverdict/parse bundled for browsers (esbuild, platform browser) and run in headless
 * Chromium: the same answer as in Node for every case of the peers' corpora, both profiles.
 */
const ENTRY = fileURLToPath(new URL('../../src/parse.ts', import.meta.url));
const CORPORA = [
  'python-email-validator.json',
  'isemail-tests-xml.json',
  'validatorjs-isEmail.json',
  'hapi-address-email.json',
];
const inputs = CORPORA.flatMap((name) => loadSyntaxCorpus(name) ?? []).map((c) => c.address);
// A few of our own, so the test means something where ../shared is absent.
inputs.push('Jöhn.Doe@Bücher.de', 'a@xn--bcher-kva.de', 'bad..dots@example.com', 'l·l@catalan.cat');

type Answer = { ok: true; address: string; asciiDomain: string } | { ok: false; code: string };

function answer(input: string, profile: ProfileName): Answer {
  const result = parseAddress(input, { profile });
  return result.ok
    ? { ok: true, address: result.address, asciiDomain: result.asciiDomain }
    : { ok: false, code: result.code };
}

const enabled = chromiumAvailable();
let browser: Browser | undefined;
let bundle = '';

beforeAll(async () => {
  const built = await build({
    entryPoints: [ENTRY],
    bundle: true,
    platform: 'browser',
    format: 'iife',
    globalName: 'mailverdictParse',
    minify: true,
    write: false,
    logLevel: 'silent',
  });
  bundle = built.outputFiles[0]?.text ?? '';
  if (enabled) browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await browser?.close();
});

describe('mailverdict/parse in a browser', () => {
  it('bundles for the browser with no node: module', () => {
    expect(bundle.length).toBeGreaterThan(1000);
    expect(bundle).not.toMatch(/require\(["']node:|from ?["']node:/);
  });

  it.skipIf(!enabled)('agrees with Node on every corpus case, in both profiles', async () => {
    const page = await (browser as Browser).newPage();
    await page.setContent('<!doctype html><title>parse</title>');
    await page.addScriptTag({ content: bundle });
    for (const profile of Object.keys(PROFILES) as ProfileName[]) {
      const inBrowser = await page.evaluate(
        ({ list, profile: name }) => {
          const api = (
            globalThis as unknown as {
              mailverdictParse: { parseAddress: typeof parseAddress };
            }
          ).mailverdictParse;
          return list.map((input) => {
            const result = api.parseAddress(input, { profile: name });
            return result.ok
              ? { ok: true, address: result.address, asciiDomain: result.asciiDomain }
              : { ok: false, code: result.code };
          });
        },
        { list: inputs, profile },
      );
      const inNode = inputs.map((input) => answer(input, profile));
      const disagreements = inputs.filter(
        (_, i) => JSON.stringify(inBrowser[i]) !== JSON.stringify(inNode[i]),
      );
      expect(disagreements, `${profile} profile`).toEqual([]);
      expect(inBrowser).toHaveLength(inputs.length);
    }
    await page.close();
  });
});
