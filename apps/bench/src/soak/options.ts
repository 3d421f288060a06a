// Command-line options of `quicpool-bench soak` (`pnpm bench:soak`): the table and what it means.
import { JSON_OPTION, numberOption } from '../command-line.js';
import type { Values } from '../command-line.js';
import { PATH_OPTION, pathOption } from '../stack/wan-path.js';

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

export type SoakOptions = ReturnType<typeof soakOptionsOf>;

export function soakOptionsOf(values: Values<typeof SOAK_OPTIONS>) {
  return {
    minutes: numberOption('minutes', values.minutes, 0.1, 24 * 60),
    json: values.json,
    /** Sessions (and workers) over TCP, and over QUIC streams, across the WAN. */
    tcpSessions: Math.round(numberOption('tcp', values.tcp, 0, 1000)),
    quicSessions: Math.round(numberOption('quic', values.quic, 0, 1000)),
    /** One-way delay the WAN adds, ms. */
    delayMs: numberOption('delay', values.delay, 0, 1000),
    /** UDP loss rate of the WAN (0..1); TCP is never dropped. */
    loss: numberOption('loss', values.loss, 0, 0.5),
    path: pathOption(values.path),
    /** 0: no faults. */
    faultEverySeconds: numberOption('fault-every', values['fault-every'], 0, 3600),
    /** A report line is printed every minute, or every sample when shorter. */
    sampleSeconds: numberOption('sample', values.sample, 1, 600),
    poolSize: Math.round(numberOption('pool-size', values['pool-size'], 1, 200)),
  };
}
