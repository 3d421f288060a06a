// Command-line options of `pnpm bench:soak`.
import { parseArgs } from 'node:util';

export interface SoakOptions {
  /** How long the load runs. */
  readonly minutes: number;
  /** One JSON object of the figures as the last line. */
  readonly json: boolean;
  /** Sessions (and workers) over TCP through the WAN emulator. */
  readonly tcpSessions: number;
  /** Sessions (and workers) over QUIC streams through the WAN emulator. */
  readonly quicSessions: number;
  /** One-way delay the WAN emulator adds, ms. */
  readonly delayMs: number;
  /** UDP loss rate of the WAN emulator (0..1). */
  readonly loss: number;
  /** Seconds between injected faults (0: none). */
  readonly faultEverySeconds: number;
  /** Seconds between samples (a report line is printed every minute, or every sample when shorter). */
  readonly sampleSeconds: number;
  /** Backends of the pooler's pool. */
  readonly poolSize: number;
}

export const SOAK_USAGE = `pnpm bench:soak [--minutes 30] [--json] [--tcp 8] [--quic 8] [--delay 5] [--loss 0]
                [--fault-every 15] [--sample 5] [--pool-size 12]`;

function num(value: string | undefined, name: string, min: number, max: number): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n < min || n > max) throw new RangeError(`--${name} must be a number in [${min}, ${max}] (got ${value})`);
  return n;
}

export function parseSoakOptions(argv: readonly string[]): SoakOptions {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      minutes: { type: 'string', default: '30' },
      json: { type: 'boolean', default: false },
      tcp: { type: 'string', default: '8' },
      quic: { type: 'string', default: '8' },
      delay: { type: 'string', default: '5' },
      loss: { type: 'string', default: '0' },
      'fault-every': { type: 'string', default: '15' },
      sample: { type: 'string', default: '5' },
      'pool-size': { type: 'string', default: '12' },
    },
  });
  return {
    minutes: num(values.minutes, 'minutes', 0.1, 24 * 60),
    json: values.json ?? false,
    tcpSessions: Math.round(num(values.tcp, 'tcp', 0, 1000)),
    quicSessions: Math.round(num(values.quic, 'quic', 0, 1000)),
    delayMs: num(values.delay, 'delay', 0, 1000),
    loss: num(values.loss, 'loss', 0, 0.5),
    faultEverySeconds: num(values['fault-every'], 'fault-every', 0, 3600),
    sampleSeconds: num(values.sample, 'sample', 1, 600),
    poolSize: Math.round(num(values['pool-size'], 'pool-size', 1, 200)),
  };
}
