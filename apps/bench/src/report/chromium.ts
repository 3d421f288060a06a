// Headless Chromium, when installed, turns report.html into report.png and lets a test check that
// the charts really drew. Every call uses a fresh profile and switches off everything that would
// reach the network (the machine may have none). Absence is an outcome, not an error.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

export const CHROMIUM_CANDIDATES = ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome', '/usr/bin/google-chrome-stable'];

export const CHROMIUM_MISSING = 'chromium not installed (apt-get install -y --no-install-recommends chromium); report.png skipped';

export type ChromiumOutcome = { ok: true; output: string } | { ok: false; reason: string };

/** The browser binary: $CHROMIUM_PATH if set (empty = pretend none), else the usual Debian paths. */
export function findChromium(): string | null {
  const configured = process.env.CHROMIUM_PATH;
  if (configured !== undefined) return configured !== '' && existsSync(configured) ? configured : null;
  return CHROMIUM_CANDIDATES.find((path) => existsSync(path)) ?? null;
}

const QUIET_FLAGS = [
  '--headless',
  '--no-sandbox', // running as root in a container
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--hide-scrollbars',
];

async function runChromium(args: readonly string[], timeoutMs: number): Promise<ChromiumOutcome> {
  const binary = findChromium();
  if (binary === null) return { ok: false, reason: CHROMIUM_MISSING };
  const profile = await mkdtemp(join(tmpdir(), 'quicpool-chromium-'));
  try {
    return await new Promise<ChromiumOutcome>((resolve) => {
      execFile(
        binary,
        [...QUIET_FLAGS, `--user-data-dir=${profile}`, ...args],
        { timeout: timeoutMs, maxBuffer: 64 * 2 ** 20, encoding: 'utf8' },
        (error, stdout, stderr) => {
          if (error !== null) resolve({ ok: false, reason: `chromium failed: ${error.message} ${stderr.slice(-500)}` });
          else resolve({ ok: true, output: stdout });
        },
      );
    });
  } finally {
    await rm(profile, { recursive: true, force: true });
  }
}

/** Screenshots an HTML file to a PNG. */
export async function screenshot(htmlPath: string, pngPath: string, width: number, height: number): Promise<ChromiumOutcome> {
  const outcome = await runChromium([`--screenshot=${pngPath}`, `--window-size=${width},${height}`, pathToFileURL(htmlPath).href], 60_000);
  if (outcome.ok && !existsSync(pngPath)) return { ok: false, reason: 'chromium exited without writing the screenshot' };
  return outcome;
}

/** The DOM after rendering (to check that the page parsed and the charts are there). */
export async function dumpDom(htmlPath: string): Promise<ChromiumOutcome> {
  return runChromium(['--dump-dom', pathToFileURL(htmlPath).href], 60_000);
}
