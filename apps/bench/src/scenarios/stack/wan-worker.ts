// The WAN emulator (apps/bench/src/wan) as its own process, so its CPU is not the client's: one
// relay per target (TCP to the pooler's TCP port, UDP to its QUIC port), each adding the one-way
// delay in both directions. Reports the RTT the emulator measured through its own delay lines.
import { startWanEmulator } from '../../wan/index.js';
import type { WanEmulator } from '../../wan/index.js';
import { serveUntilStopped } from './child.js';

export interface WanWorkerConfig {
  listenHost: string;
  targetHost: string;
  /** One relay per entry. */
  relays: Array<{ protocol: 'tcp' | 'udp'; targetPort: number }>;
  delayMs: number;
}

export interface WanReady {
  pid: number;
  /** Listen port per relay, in the order of `relays`. */
  ports: number[];
  /** Median RTT the emulator measured through its delay lines at start (ms). */
  rttMs: number;
}

export async function runWanWorker(config: WanWorkerConfig): Promise<void> {
  const emulators: WanEmulator[] = [];
  for (const relay of config.relays) {
    emulators.push(
      await startWanEmulator({
        listenHost: config.listenHost,
        targetHost: config.targetHost,
        targetPort: relay.targetPort,
        protocol: relay.protocol,
        delayMs: config.delayMs,
        calibrationProbes: 50,
      }),
    );
  }
  const rtts = emulators.map((e) => e.stats().measuredRtt?.medianMs ?? 0);
  const ready: WanReady = { pid: process.pid, ports: emulators.map((e) => e.port), rttMs: Math.max(0, ...rtts) };
  serveUntilStopped(ready, async () => {
    await Promise.all(emulators.map((e) => e.close()));
  });
}
