// `quicpool connect` as a child process of the Lambda extension: started with JSON logs (passed
// on to the extension's stdout, which Lambda sends to CloudWatch), watched until it listens and
// until its /readyz says a QUIC connection is open, and drained with SIGTERM on shutdown.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';

export interface AgentProcessOptions {
  /** The quicpool CLI (dist/cli.js). */
  readonly cli: string;
  readonly env: NodeJS.ProcessEnv;
  readonly cwd: string;
  /** Where its log lines go (the extension's stdout). */
  readonly log: (line: string) => void;
}

/** How the agent ended: its exit code, or the signal that ended it. */
export type AgentExit = { readonly code: number | null; readonly signal: NodeJS.Signals | null };

export class AgentProcess {
  private readonly child: ChildProcess;
  private listening = false;
  private metricsUrl: string | null = null;
  private readonly waiters = new Set<() => void>();
  /** Resolves when the process is gone. */
  readonly exited: Promise<AgentExit>;

  constructor(o: AgentProcessOptions) {
    // The V8 setting of bin/quicpool (a small heap starts small: see that file).
    this.child = spawn(process.execPath, ['--initial-old-space-size=64', o.cli, 'connect'], {
      cwd: o.cwd,
      env: { ...o.env, QUICPOOL_LOG_FORMAT: 'json' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.exited = new Promise((resolve) => this.child.once('exit', (code, signal) => {
      this.wake();
      resolve({ code, signal });
    }));
    for (const stream of [this.child.stdout, this.child.stderr]) {
      if (stream === null) continue;
      createInterface({ input: stream, crlfDelay: Infinity }).on('line', (line) => {
        o.log(line);
        this.read(line);
      });
    }
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** Resolves once the agent listens (true), or when it exits first (false). */
  async listens(): Promise<boolean> {
    while (!this.listening && this.child.exitCode === null && this.child.signalCode === null) {
      await new Promise<void>((resolve) => this.waiters.add(resolve));
    }
    return this.listening;
  }

  /**
   * Waits until the agent's /readyz answers 200 (a QUIC connection to a pooler is open), at most
   * `waitMs`; false when it did not (the pooler unreachable for now: sessions will tell), or the
   * metrics endpoint is off.
   */
  async ready(waitMs: number, pollMs = 25): Promise<boolean> {
    if (this.metricsUrl === null) return false;
    const url = new URL('/readyz', this.metricsUrl);
    const until = Date.now() + waitMs;
    for (;;) {
      const ok = await fetch(url).then((r) => r.status === 200, () => false);
      if (ok) return true;
      if (Date.now() + pollMs > until || this.child.exitCode !== null) return false;
      await new Promise((resolve) => setTimeout(resolve, pollMs));
    }
  }

  /** SIGTERM (the agent drains), then SIGKILL at `killAt` (epoch ms) if it is still there. */
  async stop(killAt: number): Promise<AgentExit> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), Math.max(0, killAt - Date.now()));
    try {
      return await this.exited;
    } finally {
      clearTimeout(timer);
    }
  }

  private read(line: string): void {
    if (!line.startsWith('{')) return;
    let entry: Record<string, unknown>;
    try {
      entry = JSON.parse(line) as Record<string, unknown>;
    } catch {
      return;
    }
    if (entry['msg'] === 'metrics endpoint' && typeof entry['url'] === 'string') this.metricsUrl = entry['url'];
    if (entry['msg'] === 'quicpool connect ready') {
      this.listening = true;
      this.wake();
    }
  }

  private wake(): void {
    for (const w of this.waiters) w();
    this.waiters.clear();
  }
}
