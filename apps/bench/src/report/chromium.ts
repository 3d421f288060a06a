// Headless Chromium, when installed, turns parts of report.html into PNGs: one browser, one page load, one clipped screenshot
// per element over the DevTools protocol on a pipe, a fresh profile, nothing reaching the network. Absence is an outcome.
import { spawn } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

/** No picture is taller than this: a reader scrolls a page, not a picture. */
const MAX_PNG_HEIGHT = 2_000;
const TIMEOUT_MS = 120_000;
const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--hide-scrollbars', '--remote-debugging-pipe'];

/** The browser binary: $CHROMIUM_PATH if set (empty = pretend none), else the usual Debian paths. */
export function findChromium(): string | null {
  const configured = process.env.CHROMIUM_PATH;
  if (configured !== undefined) return configured !== '' && existsSync(configured) ? configured : null;
  return ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome', '/usr/bin/google-chrome-stable'].find((path) => existsSync(path)) ?? null;
}

type Shot = { readonly selector: string; readonly file: string };
type CaptureOutcome = { readonly ok: true; readonly files: readonly string[] } | { readonly ok: false; readonly reason: string };
type Reply = { readonly id?: number; readonly method?: string; readonly result?: Record<string, unknown>; readonly error?: { readonly message: string } };

/** The DevTools protocol over Chromium's pipe: JSON messages ended by a NUL byte. */
function devtools(input: Writable, output: Readable) {
  let buffered = '';
  let next = 0;
  const replies = new Map<number, (r: Reply) => void>();
  const waiting = new Map<string, () => void>();
  output.on('data', (chunk: Buffer) => {
    buffered += chunk.toString();
    for (let at = buffered.indexOf('\0'); at >= 0; at = buffered.indexOf('\0')) {
      const m = JSON.parse(buffered.slice(0, at)) as Reply;
      buffered = buffered.slice(at + 1);
      if (m.id !== undefined) replies.get(m.id)?.(m);
      else if (m.method !== undefined) waiting.get(m.method)?.();
    }
  });
  return {
    send: (method: string, params: object = {}, sessionId?: string): Promise<Record<string, unknown>> =>
      new Promise((resolve, reject) => {
        const id = ++next;
        replies.set(id, (r) => {
          replies.delete(id);
          if (r.error !== undefined) reject(new Error(`${method}: ${r.error.message}`));
          else resolve(r.result ?? {});
        });
        input.write(`${JSON.stringify({ id, method, params, ...(sessionId === undefined ? {} : { sessionId }) })}\0`);
      }),
    event: (method: string): Promise<void> => new Promise((resolve) => waiting.set(method, resolve)),
  };
}

/** Loads the page at `width` px and screenshots each selector's first element into its file, clipped to it. */
async function screenshots(cdp: ReturnType<typeof devtools>, htmlPath: string, width: number, shots: readonly Shot[]): Promise<string[]> {
  const { targetId } = await cdp.send('Target.createTarget', { url: 'about:blank' });
  const session = String((await cdp.send('Target.attachToTarget', { targetId, flatten: true })).sessionId);
  await cdp.send('Page.enable', {}, session);
  await cdp.send('Emulation.setDeviceMetricsOverride', { width, height: 1_000, deviceScaleFactor: 1, mobile: false }, session);
  const loaded = cdp.event('Page.loadEventFired');
  await cdp.send('Page.navigate', { url: pathToFileURL(htmlPath).href }, session);
  await loaded;
  for (const shot of shots) {
    const expression = `(() => { const e = document.querySelector(${JSON.stringify(shot.selector)}); if (!e) return null; const r = e.getBoundingClientRect(); return [r.top + scrollY, r.height]; })()`;
    const { result } = await cdp.send('Runtime.evaluate', { expression, returnByValue: true }, session);
    const box = (result as { value?: [number, number] | null }).value;
    if (box === null || box === undefined) throw new Error(`nothing matches ${shot.selector}`);
    const clip = { x: 0, y: Math.max(0, box[0] - 8), width, height: Math.min(MAX_PNG_HEIGHT, Math.ceil(box[1]) + 16), scale: 1 };
    const { data } = await cdp.send('Page.captureScreenshot', { format: 'png', clip, captureBeyondViewport: true }, session);
    await writeFile(shot.file, Buffer.from(String(data), 'base64'));
  }
  await cdp.send('Browser.close').catch(() => undefined);
  return shots.map((shot) => shot.file);
}

/** One PNG per shot, each at most MAX_PNG_HEIGHT px tall; or why there are none. */
export async function captureElements(htmlPath: string, width: number, shots: readonly Shot[]): Promise<CaptureOutcome> {
  const binary = findChromium();
  if (binary === null) return { ok: false, reason: 'chromium not installed (apt-get install -y --no-install-recommends chromium); PNGs skipped' };
  const profile = await mkdtemp(join(tmpdir(), 'quicpool-chromium-'));
  const child = spawn(binary, [...FLAGS, `--user-data-dir=${profile}`, 'about:blank'], { stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (c: Buffer) => (stderr = (stderr + c.toString()).slice(-2_000)));
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const timer = setTimeout(() => child.kill('SIGKILL'), TIMEOUT_MS);
  try {
    const [input, output] = [child.stdio[3], child.stdio[4]];
    if (!(input !== null && input !== undefined && 'write' in input) || !(output !== null && output !== undefined && 'on' in output)) throw new Error('no DevTools pipe');
    const failed = new Promise<never>((_, reject) => child.once('exit', (code) => reject(new Error(`chromium exited (${code ?? 'signal'})`))));
    return { ok: true, files: await Promise.race([screenshots(devtools(input as Writable, output as Readable), htmlPath, width, shots), failed]) };
  } catch (error) {
    return { ok: false, reason: `chromium failed: ${error instanceof Error ? error.message : String(error)} ${stderr.slice(-300)}`.trim() };
  } finally {
    clearTimeout(timer);
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
    // Chromium's helper processes (renderer, crashpad) can still write into the profile for a moment
    // after the browser process exits: rm retries on ENOTEMPTY/EBUSY instead of failing the report.
    await rm(profile, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
  }
}
