// Every child of the benchmarks that reports on stdout starts and ends here (daemon, forwarder, load generator ...): a ready
// line, then lines for `onLine`. We hold its stdin, so a child watching it dies with us; an exit hook kills the rest.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';

export interface WorkerSpawn<T> {
  /** For error messages. */
  readonly name: string;
  /** The program; default this Node (process.execPath). */
  readonly command?: string;
  /** Node flags, then the script and its arguments (or the command's arguments). */
  readonly args: readonly string[];
  readonly env?: NodeJS.ProcessEnv;
  readonly startTimeoutMs: number;
  /** 'inherit' (default): the child's stderr is ours; 'capture': kept (its tail) for error messages. */
  readonly stderr?: 'inherit' | 'capture';
  /** Where the ready line comes: 'stdout' (default), or 'stderr' (PgBouncer logs there; then stderr is captured too). */
  readonly readyOn?: 'stdout' | 'stderr';
  /** Every stdout line after the ready line (e.g. stats the helper prints on request). */
  readonly onLine?: (line: string) => void;
  /** The value announced by a stdout line, or null when the line is not the ready line. */
  readonly ready: (line: string) => T | null;
  /** What stop() sends first (SIGKILL follows after 5 s). Default SIGTERM. */
  readonly stopSignal?: NodeJS.Signals;
}

const KILL_AFTER_MS = 5_000;
const STDERR_TAIL = 4_000;

/** Children not yet exited: an exit of ours (an uncaught error, process.exit) takes them along. */
const live = new Set<ChildProcess>();
process.on('exit', () => {
  for (const c of live) c.kill('SIGKILL');
});

/** Starts `node ...args` (or `command ...args`) and resolves once a stdout line is its ready line. */
export async function startWorkerProcess<T>(o: WorkerSpawn<T>) {
  const readyOnStderr = o.readyOn === 'stderr';
  const capture = o.stderr === 'capture' || readyOnStderr;
  const child = spawn(o.command ?? process.execPath, [...o.args], {
    stdio: ['pipe', readyOnStderr ? 'ignore' : 'pipe', capture ? 'pipe' : 'inherit'],
    env: o.env ?? process.env,
  });
  live.add(child);
  child.once('exit', () => live.delete(child));
  const stdout = readyOnStderr ? child.stderr : child.stdout;
  if (stdout === null) throw new Error(`${o.name}: no ${readyOnStderr ? 'stderr' : 'stdout'} pipe`);
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-STDERR_TAIL);
  });
  // Our end of its stdin: an EPIPE after it exited is not our failure.
  child.stdin?.on('error', () => undefined);
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  const why = (): string => (stderr.trim() === '' ? '' : `: ${stderr.trim()}`);
  const lines = createInterface({ input: stdout });
  const outputEnded = new Promise<void>((r) => lines.once('close', () => r()));
  const announced = await new Promise<{ ready: T; pid: number }>((resolve, reject) => {
    let started = false;
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${o.name} did not start within ${o.startTimeoutMs / 1000} s${why()}`));
    }, o.startTimeoutMs);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      if (!started) reject(new Error(`${o.name} exited (${code ?? signal ?? '?'}) before it was ready${why()}`));
    });
    // A command that cannot be started (missing, not executable) is reported here, not by 'exit'.
    child.once('error', (error) => {
      clearTimeout(timer);
      if (!started) reject(new Error(`${o.name} could not be started: ${error.message}`));
    });
    lines.on('line', (line) => {
      const value = started ? null : o.ready(line);
      if (value === null || child.pid === undefined) {
        if (started) o.onLine?.(line);
        return;
      }
      started = true;
      clearTimeout(timer);
      resolve({ ready: value, pid: child.pid });
    });
  });
  return {
    /** What the ready line said (parsed by the caller's `ready`), and the child's pid. */
    ...announced,
    /** Resolves once its stdout has ended: every line has been handed to `onLine`. */
    outputEnded,
    /** Resolves with its exit code (null when a signal ended it) once it has exited. */
    exited,
    /** The last few KB of its stderr when `stderr: 'capture'` (for error messages), else ''. */
    stderrTail: () => stderr,
    async stop(): Promise<void> {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill(o.stopSignal ?? 'SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), KILL_AFTER_MS);
      await exited;
      clearTimeout(t);
    },
  };
}

/** The JSON object on a line, or null when the line is not one. */
export function jsonLine(line: string): Record<string, unknown> | null {
  try {
    const parsed: unknown = JSON.parse(line);
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}
