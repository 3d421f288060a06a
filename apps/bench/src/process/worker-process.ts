// A helper process of a benchmark (a pooler worker, the WAN emulator, the packet forwarder) that
// the bench starts and waits for: it announces readiness with one line on stdout; its other stdout
// lines go to `onLine` (after the ready line), or with `echo` to our stderr, or are dropped. The
// bench holds the child's stdin, so a child that watches it ends with the bench even if the bench
// dies; stop() sends SIGTERM, then SIGKILL after 5 s.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

export interface WorkerProcess<T> {
  /** What the ready line said (parsed by the caller's `ready`). */
  readonly ready: T;
  readonly pid: number;
  /** Resolves once its stdout has ended: every line has been handed to `onLine`. */
  readonly outputEnded: Promise<void>;
  stop(): Promise<void>;
}

export interface WorkerSpawn<T> {
  /** Used in error messages ("<name> did not start within ..."). */
  readonly name: string;
  /** The program; default this Node (process.execPath). */
  readonly command?: string;
  /** Node flags, then the script and its arguments (or the command's arguments). */
  readonly args: readonly string[];
  readonly env?: NodeJS.ProcessEnv;
  readonly startTimeoutMs: number;
  /** Other stdout lines go to our stderr (e.g. V8 traces asked for with a Node flag). */
  readonly echo?: boolean;
  /** Every stdout line after the ready line (e.g. stats the helper prints on request). */
  readonly onLine?: (line: string) => void;
  /** The value announced by a stdout line, or null when the line is not the ready line. */
  readonly ready: (line: string) => T | null;
}

const KILL_AFTER_MS = 5_000;

/** Starts `node ...args` (or `command ...args`) and resolves once a stdout line is its ready line. */
export function startWorkerProcess<T>(o: WorkerSpawn<T>): Promise<WorkerProcess<T>> {
  const child = spawn(o.command ?? process.execPath, [...o.args], { stdio: ['pipe', 'pipe', 'inherit'], env: o.env ?? process.env });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  return new Promise((resolve, reject) => {
    let started = false;
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${o.name} did not start within ${o.startTimeoutMs / 1000} s`));
    }, o.startTimeoutMs);
    child.once('exit', (code) => {
      clearTimeout(timer);
      if (!started) reject(new Error(`${o.name} exited (${code ?? 'signal'}) before it was ready`));
    });
    // A command that cannot be started (missing, not executable) is reported here, not by 'exit'.
    child.once('error', (error) => {
      clearTimeout(timer);
      if (!started) reject(new Error(`${o.name} could not be started: ${error.message}`));
    });
    const lines = createInterface({ input: child.stdout });
    const outputEnded = new Promise<void>((r) => lines.once('close', () => r()));
    lines.on('line', (line) => {
      const value = started ? null : o.ready(line);
      if (value === null || child.pid === undefined) {
        if (started && o.onLine !== undefined) o.onLine(line);
        else if (o.echo === true) process.stderr.write(`${line}\n`);
        return;
      }
      started = true;
      clearTimeout(timer);
      resolve({
        ready: value,
        pid: child.pid,
        outputEnded,
        async stop(): Promise<void> {
          if (child.exitCode !== null || child.signalCode !== null) return;
          child.kill('SIGTERM');
          const t = setTimeout(() => child.kill('SIGKILL'), KILL_AFTER_MS);
          await exited;
          clearTimeout(t);
        },
      });
    });
  });
}
