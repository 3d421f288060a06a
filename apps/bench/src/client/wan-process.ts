// The WAN emulator (apps/bench/src/wan, as its program dist/bin/wan.js) in its own process, so
// its sockets, buffers and CPU do not count as the client's. One per protocol: the pooler's TLS
// and QUIC listeners have different port numbers.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { RttMeasurement, WanProtocol } from '../wan/index.js';

export interface RunningWan {
  readonly port: number;
  /** The emulator's own added round trip, measured by its start-up probe. */
  readonly measuredRtt: RttMeasurement | null;
  stop(): Promise<void>;
}

export function startWanProcess(wanScript: string, target: { host: string; port: number }, protocol: WanProtocol, oneWayMs: number): Promise<RunningWan> {
  const args = [wanScript, '--target', `${target.host}:${target.port}`, '--delay', String(oneWayMs), '--protocol', protocol, '--watch-stdin'];
  const child = spawn(process.execPath, args, { stdio: ['pipe', 'pipe', 'inherit'] });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error('WAN emulator did not start within 15 s'));
    }, 15_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`WAN emulator exited (${code ?? 'signal'}) before listening`));
    });
    createInterface({ input: child.stdout }).on('line', (line) => {
      let event: { event?: string; port?: number; measuredRtt?: RttMeasurement | null };
      try {
        event = JSON.parse(line) as typeof event;
      } catch {
        return;
      }
      if (event.event !== 'listening' || typeof event.port !== 'number') return;
      clearTimeout(timer);
      resolve({
        port: event.port,
        measuredRtt: event.measuredRtt ?? null,
        async stop(): Promise<void> {
          child.kill('SIGTERM');
          const t = setTimeout(() => child.kill('SIGKILL'), 5_000);
          await exited;
          clearTimeout(t);
        },
      });
    });
  });
}
