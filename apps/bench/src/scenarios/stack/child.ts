// Starting one helper process of the benchmark (the pooler, the WAN emulator, a client variant's
// load generator) from the bench program's own built file, and stopping it for sure. The child
// prints `READY <json>` once it serves; it exits on SIGTERM or when its stdin (held here) ends, so
// a bench that dies leaves no orphan behind.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';

/** The flag that turns the bench program into one of its workers: `--bench-worker <kind> <json>`. */
export const WORKER_FLAG = '--bench-worker';

export type WorkerKind = 'pooler' | 'wan' | 'variant';

export interface WorkerChild<R> {
  readonly pid: number;
  readonly ready: R;
  readonly process: ChildProcess;
  stop(): Promise<void>;
}

export interface StartWorkerOptions {
  /** Run the child inside this network namespace (`ip netns exec`; needs root). */
  netns?: string;
  /** Default 30 s. */
  readyTimeoutMs?: number;
  /** Extra stdio channel for IPC (process.send). Default false. */
  ipc?: boolean;
}

export function workerCommand(script: string, kind: WorkerKind, config: unknown, netns: string | undefined): { bin: string; args: string[] } {
  const nodeArgs = [script, WORKER_FLAG, kind, JSON.stringify(config)];
  return netns === undefined ? { bin: process.execPath, args: nodeArgs } : { bin: 'ip', args: ['netns', 'exec', netns, process.execPath, ...nodeArgs] };
}

export function startWorker<R>(script: string, kind: WorkerKind, config: unknown, options: StartWorkerOptions = {}): Promise<WorkerChild<R>> {
  const { bin, args } = workerCommand(script, kind, config, options.netns);
  const child = spawn(bin, args, { stdio: options.ipc === true ? ['pipe', 'pipe', 'pipe', 'ipc'] : ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async (): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(timer);
  };
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      void stop();
      reject(new Error(`${kind} worker not ready within ${options.readyTimeoutMs ?? 30_000} ms: ${stderr.trim()}`));
    }, options.readyTimeoutMs ?? 30_000);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`${kind} worker exited (${code ?? signal}) before it was ready: ${stderr.trim()}`));
    });
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    const lines = createInterface({ input: child.stdout! });
    lines.on('line', (line) => {
      if (!line.startsWith('READY ') || child.pid === undefined) return;
      clearTimeout(timer);
      resolve({ pid: child.pid, ready: JSON.parse(line.slice(6)) as R, process: child, stop });
    });
  });
}

/** The worker side: announce readiness, and run `close` once on SIGTERM/SIGINT or when stdin ends. */
export function serveUntilStopped(ready: unknown, close: () => Promise<void>): void {
  let closing = false;
  const stop = (): void => {
    if (closing) return;
    closing = true;
    void close()
      .catch(() => undefined)
      .finally(() => process.exit(0));
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  process.stdin.on('end', stop).resume();
  process.stdout.write(`READY ${JSON.stringify(ready)}\n`);
}
