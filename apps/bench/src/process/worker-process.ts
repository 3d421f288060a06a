// A helper process of a benchmark (a pooler worker, the WAN emulator) that the bench starts and
// waits for: it announces readiness with one line on stdout; its other stdout lines are dropped,
// or with `echo` passed to our stderr. The bench holds the child's stdin, so a child that watches
// it ends with the bench even if the bench dies; stop() sends SIGTERM, then SIGKILL after 5 s.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

export interface WorkerProcess<T> {
  /** What the ready line said (parsed by the caller's `ready`). */
  readonly ready: T;
  readonly pid: number;
  stop(): Promise<void>;
}

export interface WorkerSpawn<T> {
  /** Used in error messages ("<name> did not start within ..."). */
  readonly name: string;
  /** Node flags, then the script and its arguments. */
  readonly args: readonly string[];
  readonly env?: NodeJS.ProcessEnv;
  readonly startTimeoutMs: number;
  /** Other stdout lines go to our stderr (e.g. V8 traces asked for with a Node flag). */
  readonly echo?: boolean;
  /** The value announced by a stdout line, or null when the line is not the ready line. */
  readonly ready: (line: string) => T | null;
}

const KILL_AFTER_MS = 5_000;

/** Starts `node ...args` and resolves once a stdout line is its ready line. */
export function startWorkerProcess<T>(o: WorkerSpawn<T>): Promise<WorkerProcess<T>> {
  const child = spawn(process.execPath, [...o.args], { stdio: ['pipe', 'pipe', 'inherit'], env: o.env ?? process.env });
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
    createInterface({ input: child.stdout }).on('line', (line) => {
      const value = started ? null : o.ready(line);
      if (value === null || child.pid === undefined) {
        if (o.echo === true) process.stderr.write(`${line}\n`);
        return;
      }
      started = true;
      clearTimeout(timer);
      resolve({
        ready: value,
        pid: child.pid,
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
