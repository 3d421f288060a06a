// Structured logs: pino JSON lines on stdout, or one readable line per event on a terminal.
// Secrets never reach a log line: passwords and secrets are redacted by key wherever they appear.
import { Writable } from 'node:stream';
import { pino } from 'pino';
import type { Logger } from 'pino';

export type LogFormat = 'auto' | 'json' | 'pretty';

const LEVELS: Readonly<Record<number, string>> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };

/** A tiny human formatter: "12:00:01 INFO  message key=value ...". */
function prettyStream(out: NodeJS.WritableStream): Writable {
  return new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString('utf8').split('\n')) {
        if (line === '') continue;
        try {
          const { level, time, msg, pid: _pid, hostname: _host, ...rest } = JSON.parse(line) as Record<string, unknown>;
          const t = new Date(typeof time === 'number' ? time : Date.now()).toISOString().slice(11, 19);
          const extra = Object.entries(rest)
            .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
            .join(' ');
          out.write(`${t} ${(LEVELS[Number(level)] ?? String(level)).padEnd(5)} ${String(msg ?? '')}${extra === '' ? '' : `  ${extra}`}\n`);
        } catch {
          out.write(`${line}\n`);
        }
      }
      done();
    },
  });
}

export function createLogger(level: string, format: LogFormat): Logger {
  const pretty = format === 'pretty' || (format === 'auto' && process.stdout.isTTY === true);
  const options = {
    level,
    base: { pid: process.pid },
    redact: { paths: ['password', '*.password', 'secret', '*.secret', 'serverPassword', '*.serverPassword', 'scramSecret', '*.scramSecret'], censor: '[redacted]' },
  };
  return pretty ? pino(options, prettyStream(process.stdout)) : pino(options, pino.destination({ dest: 1, sync: true }));
}

export type { Logger };
