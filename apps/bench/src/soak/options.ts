// Command-line options of `quicpool-bench soak` (`pnpm bench:soak`): the table and what it means.
import { JSON_OPTION, numberOption } from '../command-line.js';
import type { Values } from '../command-line.js';
import { PATH_OPTION, pathOption } from '../stack/wan-path.js';
import type { PathMode } from '../stack/wan-path.js';

export interface SoakOptions {
  /** How long the load runs. */
  readonly minutes: number;
  /** One JSON object of the figures as the last line. */
  readonly json: boolean;
  /** Sessions (and workers) over TCP across the WAN. */
  readonly tcpSessions: number;
  /** Sessions (and workers) over QUIC streams across the WAN. */
  readonly quicSessions: number;
  /** One-way delay the WAN adds, ms. */
  readonly delayMs: number;
  /** UDP loss rate of the WAN (0..1); TCP is never dropped. */
  readonly loss: number;
  /** The WAN: the packet path where it can be built (`auto`), or as asked. */
  readonly path: PathMode | 'auto';
  /** Seconds between injected faults (0: none). */
  readonly faultEverySeconds: number;
  /** Seconds between samples (a report line is printed every minute, or every sample when shorter). */
  readonly sampleSeconds: number;
  /** Backends of the pooler's pool. */
  readonly poolSize: number;
}

export const SOAK_OPTIONS = {
  minutes: { type: 'string', default: '30' },
  ...JSON_OPTION,
  ...PATH_OPTION,
  tcp: { type: 'string', default: '8' },
  quic: { type: 'string', default: '8' },
  delay: { type: 'string', default: '5' },
  loss: { type: 'string', default: '0' },
  'fault-every': { type: 'string', default: '15' },
  sample: { type: 'string', default: '5' },
  'pool-size': { type: 'string', default: '12' },
} as const;

export function soakOptionsOf(values: Values<typeof SOAK_OPTIONS>): SoakOptions {
  return {
    minutes: numberOption('minutes', values.minutes, 0.1, 24 * 60),
    json: values.json,
    tcpSessions: Math.round(numberOption('tcp', values.tcp, 0, 1000)),
    quicSessions: Math.round(numberOption('quic', values.quic, 0, 1000)),
    delayMs: numberOption('delay', values.delay, 0, 1000),
    loss: numberOption('loss', values.loss, 0, 0.5),
    path: pathOption(values.path),
    faultEverySeconds: numberOption('fault-every', values['fault-every'], 0, 3600),
    sampleSeconds: numberOption('sample', values.sample, 1, 600),
    poolSize: Math.round(numberOption('pool-size', values['pool-size'], 1, 200)),
  };
}
