// Child processes of the release test: every one has a deadline, and none outlives the test.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { dirname } from 'node:path';

const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const c of running) c.kill('SIGKILL');
});

/**
 * The environment of a user's shell: what npm, pnpm and vitest put into ours (npm_config_*
 * naming this repository as the project, npm_lifecycle_*, QUICPOOL_* test switches ...) is left
 * out, and the node running this test comes first on PATH (the CLI's `#!/usr/bin/env node`).
 */
export function userEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (/^(npm_|pnpm_|quicpool_|vitest|turbo_)/i.test(k) || k === 'INIT_CWD' || k === 'NODE_OPTIONS' || k === 'NODE_ENV') continue;
    env[k] = v;
  }
  env['PATH'] = `${dirname(process.execPath)}:${process.env['PATH'] ?? ''}`;
  env['NO_COLOR'] = '1';
  return { ...env, ...extra };
}

export interface RunResult {
  readonly code: number | null;
  readonly output: string;
  readonly ms: number;
}

/** Runs a command to completion (SIGKILL at the deadline); rejects when it fails, with its output. */
export function run(cmd: string, args: readonly string[], opts: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs: number; allowFail?: boolean }): Promise<RunResult> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: opts.cwd, env: opts.env, stdio: ['ignore', 'pipe', 'pipe'] });
    running.add(child);
    let output = '';
    child.stdout.on('data', (b: Buffer) => (output += b.toString()));
    child.stderr.on('data', (b: Buffer) => (output += b.toString()));
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, opts.timeoutMs);
    child.once('error', (e) => {
      clearTimeout(timer);
      running.delete(child);
      reject(e);
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      running.delete(child);
      const ms = performance.now() - t0;
      const what = `\`${cmd} ${args.join(' ')}\``;
      if (timedOut) reject(new Error(`${what} did not finish within ${opts.timeoutMs} ms:\n${output}`));
      else if (code !== 0 && opts.allowFail !== true) reject(new Error(`${what} failed (exit ${code}):\n${output}`));
      else resolve({ code, output, ms });
    });
  });
}

export interface Daemon {
  output(): string;
  waitFor(pattern: RegExp, timeoutMs: number): Promise<RegExpExecArray>;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves with the exit code (null when killed). */
  stop(graceMs: number): Promise<number | null>;
}

/** Starts a long-running command (the installed `quicpool start`). */
export function startDaemon(cmd: string, args: readonly string[], opts: { cwd: string; env: NodeJS.ProcessEnv }): Daemon {
  const child = spawn(cmd, args, { cwd: opts.cwd, env: opts.env, stdio: ['ignore', 'pipe', 'pipe'] });
  running.add(child);
  let out = '';
  const waiters = new Set<() => void>();
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => {
      running.delete(child);
      resolve(code);
      for (const w of waiters) w();
    }),
  );
  const onData = (b: Buffer): void => {
    out += b.toString();
    for (const w of waiters) w();
  };
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);
  child.once('error', (e) => (out += `\nspawn error: ${e.message}\n`));
  return {
    output: () => out,
    waitFor: (pattern, timeoutMs) =>
      new Promise((resolve, reject) => {
        const check = (): void => {
          const m = pattern.exec(out);
          const gone = child.exitCode !== null || child.signalCode !== null;
          if (m === null && !gone) return;
          waiters.delete(check);
          clearTimeout(timer);
          if (m !== null) resolve(m);
          else reject(new Error(`quicpool exited (${child.exitCode ?? child.signalCode}) before ${String(pattern)}:\n${out}`));
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`no ${String(pattern)} within ${timeoutMs} ms:\n${out}`));
        }, timeoutMs);
        waiters.add(check);
        check();
      }),
    async stop(graceMs) {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
}
