import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

/** Debian's chromium (installed by .ci/run): browser downloads do not work on our machines. */
export const CHROMIUM_PATH = process.env.MAILVERDICT_CHROMIUM ?? '/usr/bin/chromium';

/** Whether the browser tests run: always in CI (where its absence fails), else when installed. */
export function chromiumAvailable(): boolean {
  if (existsSync(CHROMIUM_PATH)) return true;
  if (process.env.CI !== undefined && process.env.CI !== '') return true;
  console.warn(
    `[notice] ${CHROMIUM_PATH} is absent: the browser tests are skipped (apt-get install chromium).`,
  );
  return false;
}

/**
 * Headless Chromium as this machine allows it: no sandbox (we run as root), and none of its
 * background connections to Google's hosts, which a closed network refuses by the dozen.
 */
export const CHROMIUM_ARGS: readonly string[] = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** A fresh browser; Playwright gives each launch a temporary profile. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: [...CHROMIUM_ARGS],
  });
}
