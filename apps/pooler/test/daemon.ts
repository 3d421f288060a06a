// Runs `node dist/cli.js ...` as a user would, collects its output, and always ends it.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const cli = fileURLToPath(new URL('../dist/cli.js', import.meta.url));

/**
 * Workers of the daemons this run starts: the `quicpool` project runs the suite with one (all in
 * the main thread), `quicpool-workers2` with two worker threads (QUICPOOL_TEST_WORKERS=2, see
 * vitest.workers2.config.ts). A test that needs a given count passes --set workers.count itself.
 */
export const testWorkers = Number(process.env['QUICPOOL_TEST_WORKERS'] ?? '1');

export interface Daemon {
  readonly child: ChildProcess;
  /** Everything printed so far (stdout + stderr). */
  output(): string;
  /** Wall-clock time from spawn to the "ready" banner (ms). */
  readonly readyMs: number;
  /** Resolves when `pattern` appears in the output. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpExecArray>;
  /** Sends `signal` and resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
  /**
   * The port it listens on for `kind`, read from its JSON log lines: start it with port 0 for
   * the kernel's choice (a port found free beforehand can be taken before the daemon binds it).
   */
  port(kind: ListenKind): number;
}

export type ListenKind = 'tcp' | 'quic' | 'metrics';

/** `kind`'s port in the log lines of `quicpool start` or `quicpool connect` (JSON format). */
export function loggedPort(output: string, kind: ListenKind): number {
  for (const line of output.split('\n')) {
    if (!line.startsWith('{')) continue;
    const entry = JSON.parse(line) as Record<string, unknown>;
    const value = kind === 'metrics' ? (entry['msg'] === 'metrics endpoint' ? entry['url'] : undefined) : /^quicpool (connect )?ready$/.test(String(entry['msg'])) ? entry[kind] : undefined;
    if (typeof value !== 'string') continue;
    const port = Number(kind === 'metrics' ? new URL(value).port : value.slice(value.lastIndexOf(':') + 1));
    if (Number.isInteger(port) && port > 0) return port;
  }
  throw new Error(`no ${kind} port in the log:\n${output}`);
}

const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const c of running) c.kill('SIGKILL');
});

/**
 * Starts `quicpool start ARGS`. `detached`: it leads a process group of its own (as a program
 * started from a terminal does), so a test can signal the whole group as Ctrl-C does.
 */
export function startDaemon(args: readonly string[], env: NodeJS.ProcessEnv = {}, options: { readonly detached?: boolean } = {}): Promise<Daemon> {
  const workers = args.some((a) => a.startsWith('workers.count=')) ? [] : ['--set', `workers.count=${testWorkers}`];
  return startCommand('start', [...workers, ...args], /quicpool is ready/, env, options);
}

/** `quicpool <command> ...args`, once `ready` appears in its output. */
export async function startCommand(command: string, args: readonly string[], ready: RegExp, env: NodeJS.ProcessEnv = {}, options: { readonly detached?: boolean } = {}): Promise<Daemon> {
  const t0 = performance.now();
  const child = spawn(process.execPath, [cli, command, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env }, detached: options.detached ?? false });
  running.add(child);
  let out = '';
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => (running.delete(child), resolve(code))));
  const waiters = new Set<() => void>();
  const onData = (b: Buffer): void => {
    out += b.toString();
    for (const w of waiters) w();
  };
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);
  const waitFor = (pattern: RegExp, timeoutMs = 30_000): Promise<RegExpExecArray> =>
    new Promise((resolve, reject) => {
      const check = (): void => {
        const m = pattern.exec(out);
        if (m === null) return;
        waiters.delete(check);
        clearTimeout(timer);
        resolve(m);
      };
      const timer = setTimeout(() => {
        waiters.delete(check);
        reject(new Error(`no ${String(pattern)} within ${timeoutMs} ms:\n${out}`));
      }, timeoutMs);
      waiters.add(check);
      void exited.then((code) => {
        if (!waiters.has(check)) return;
        waiters.delete(check);
        clearTimeout(timer);
        reject(new Error(`quicpool exited with ${code} before ${String(pattern)}:\n${out}`));
      });
      check();
    });
  try {
    await waitFor(ready);
  } catch (e) {
    child.kill('SIGKILL');
    throw e;
  }
  const readyMs = performance.now() - t0;
  return {
    child,
    output: () => out,
    readyMs,
    waitFor,
    port: (kind) => loggedPort(out, kind),
    stop(signal: NodeJS.Signals = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}

/** Runs a short CLI command to completion. */
export function runCli(args: readonly string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [cli, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    child.once('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

/**
 * A pooler for the agent's deployment tests: `quicpool start` on free ports with its state (and
 * its development CA, certs/ca.pem) in `dir`, in front of `upstream`, one password user.
 */
export async function startTestPooler(dir: string, upstream: { readonly host: string; readonly port: number; readonly user: string; readonly password: string }): Promise<Daemon> {
  const file = join(dir, 'quicpool.toml');
  await writeFile(file, [
    `[upstream]\nhost = "${upstream.host}"\nport = ${upstream.port}`,
    '[metrics]\nenabled = false',
    `[users.${upstream.user}]\npassword = "${upstream.password}"`,
  ].join('\n') + '\n');
  return startDaemon(['--config', file, '--state-dir', dir, '--port', '0', '--quic-port', '0']);
}

/** Resolves once `ok()` holds (checked every 20 ms); rejects after `timeoutMs`. */
export async function until(ok: () => boolean, timeoutMs = 30_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`not within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
