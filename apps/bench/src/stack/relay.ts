// The user-space relay (apps/bench/src/wan, as `quicpool-bench wan`) in its own process,
// so its sockets, buffers and CPU do not count as the client's. It is the fallback WAN where the
// packet path cannot be built (no root, no TUN): it terminates TCP on both sides, so TCP's own
// loss recovery never sees the delay. One per protocol: the pooler's TCP and QUIC ports differ.
import { startWorkerProcess, jsonLine } from '../process/worker-process.js';
import type { RttMeasurement, WanProtocol } from '../wan/emulator.js';

export interface RunningRelay {
  readonly pid: number;
  readonly host: string;
  readonly port: number;
  /** The relay's own added round trip, measured by its start-up probe through both delay lines. */
  readonly measuredRtt: RttMeasurement | null;
  stop(): Promise<void>;
}

export async function startRelay(program: string, target: { host: string; port: number }, protocol: WanProtocol, oneWayMs: number): Promise<RunningRelay> {
  const w = await startWorkerProcess({
    name: 'the WAN relay',
    args: [program, 'wan', '--target', `${target.host}:${target.port}`, '--delay', String(oneWayMs), '--protocol', protocol, '--watch-stdin'],
    startTimeoutMs: 15_000,
    stderr: 'capture',
    ready: (line) => {
      const event = jsonLine(line);
      if (event?.event !== 'listening' || typeof event.port !== 'number' || typeof event.host !== 'string') return null;
      return { host: event.host, port: event.port, measuredRtt: (event.measuredRtt as RttMeasurement | null | undefined) ?? null };
    },
  });
  return { pid: w.pid, ...w.ready, stop: () => w.stop() };
}
