// The WAN emulator (apps/bench/src/wan, as its program dist/bin/wan.js) in its own process, so
// its sockets, buffers and CPU do not count as the client's. One per protocol: the pooler's TLS
// and QUIC listeners have different port numbers.
import { startWorkerProcess } from '../process/worker-process.js';
import type { RttMeasurement, WanProtocol } from '../wan/index.js';

export interface RunningWan {
  readonly port: number;
  /** The emulator's own added round trip, measured by its start-up probe. */
  readonly measuredRtt: RttMeasurement | null;
  stop(): Promise<void>;
}

export async function startWanProcess(wanScript: string, target: { host: string; port: number }, protocol: WanProtocol, oneWayMs: number): Promise<RunningWan> {
  const w = await startWorkerProcess({
    name: 'WAN emulator',
    args: [wanScript, '--target', `${target.host}:${target.port}`, '--delay', String(oneWayMs), '--protocol', protocol, '--watch-stdin'],
    startTimeoutMs: 15_000,
    ready: (line) => {
      let event: { event?: string; port?: number; measuredRtt?: RttMeasurement | null };
      try {
        event = JSON.parse(line) as typeof event;
      } catch {
        return null;
      }
      return event.event === 'listening' && typeof event.port === 'number' ? { port: event.port, measuredRtt: event.measuredRtt ?? null } : null;
    },
  });
  return { ...w.ready, stop: () => w.stop() };
}
