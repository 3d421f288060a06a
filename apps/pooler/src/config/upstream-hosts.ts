// Where the real server is: upstream.host and upstream.port, or upstream.hosts, whose entries are
// "host", "host:port", "[v6addr]:port", "v6addr" or a socket directory ("/var/run/postgresql");
// an entry without a port uses upstream.port.
import type { ServerTlsConfig } from '@quicpool/pooler';
import { ConfigFileError } from './load.js';
import type { AppConfig } from './load.js';
import type { Upstream } from './to-pooler.js';

export interface HostPort {
  readonly host: string;
  readonly port: number;
}

export function parseUpstreamHosts(source: string, entries: readonly string[], defaultPort: number): HostPort[] {
  return entries.map((entry, i) => {
    const bad = (why: string): never => {
      throw new ConfigFileError(source, 'upstream.hosts', `entry ${i + 1} ${JSON.stringify(entry)}: ${why}`);
    };
    if (entry.startsWith('/')) return { host: entry, port: defaultPort };
    const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(entry);
    if (bracketed !== null) return { host: bracketed[1]!, port: port(bracketed[2], defaultPort, bad) };
    const colons = entry.split(':').length - 1;
    if (colons > 1) return { host: entry, port: defaultPort }; // a bare IPv6 address
    const [host = '', p] = entry.split(':');
    if (host === '') bad('no host');
    return { host, port: port(p, defaultPort, bad) };
  });
}

function port(text: string | undefined, defaultPort: number, bad: (why: string) => never): number {
  if (text === undefined) return defaultPort;
  const n = Number(text);
  return Number.isInteger(n) && n >= 1 && n <= 65_535 ? n : bad(`port ${JSON.stringify(text)} is not 1-65535`);
}

/** upstream.host and upstream.port, or upstream.hosts (not both). */
export function configuredUpstream(config: AppConfig, source: string, tls: ServerTlsConfig | undefined): Upstream {
  const port = config.get<number>('upstream.port');
  const listed = config.get<readonly string[]>('upstream.hosts');
  const host = config.get<string | null>('upstream.host');
  const withTls = tls !== undefined ? { tls } : {};
  if (listed.length === 0) return { host: host ?? '127.0.0.1', port, ...withTls };
  if (host !== null) throw new ConfigFileError(source, 'upstream.hosts', 'set together with upstream.host: list every server in upstream.hosts and leave upstream.host unset');
  const hosts = parseUpstreamHosts(source, listed, port);
  return { ...hosts[0]!, hosts, ...withTls };
}

