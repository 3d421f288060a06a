// node-postgres clients for one pooler reached over TCP, TLS (SSLRequest upgrade) or QUIC streams,
// behind one interface, so a test body can run unchanged over every transport.
import { Duplex } from 'node:stream';
import pg from 'pg';
import { forNodePostgres } from '@quicpool/transport';
import type { QuicDialer, SessionStream } from '@quicpool/transport';
import { pgInfo } from './pooler-helpers.js';

export type TransportName = 'TCP' | 'TLS' | 'QUIC';

export interface TransportClients {
  readonly name: TransportName;
  /** A connected pg.Client (errors are swallowed: tests look at rejections). */
  client(extra?: pg.ClientConfig): Promise<pg.Client>;
  /** Config for pg.Pool: every pooled client opens its own session stream. */
  poolConfig(extra?: pg.PoolConfig): pg.PoolConfig;
  /** A client whose `cancel(target, query)` sends a CancelRequest over a new session stream. */
  canceller(): Promise<Canceller>;
}

/** pg.Client#cancel exists at runtime but not in @types/pg. */
export type Canceller = pg.Client & { cancel(target: pg.Client, query: unknown): void };

const credentials = (): pg.ClientConfig => ({ database: pgInfo.database, user: pgInfo.user, password: pgInfo.password });

async function connected(config: pg.ClientConfig): Promise<pg.Client> {
  const c = new pg.Client(config);
  c.on('error', () => undefined);
  await c.connect();
  return c;
}

/**
 * A canceller is never connect()ed, so pg does not wire its Connection's errors to the client:
 * the server closing the cancel connection (or the dialer closing) would be an uncaught 'error'.
 */
function quiet(c: Canceller): Canceller {
  (c as unknown as { connection: NodeJS.EventEmitter }).connection.on('error', () => undefined);
  return c;
}

/** Plain TCP, or TLS after SSLRequest (certificate verified against `ca` for "localhost"). */
export function socketClients(name: 'TCP' | 'TLS', port: number, ca?: string): TransportClients {
  const base = (): pg.ClientConfig => ({
    host: '127.0.0.1',
    port,
    ...credentials(),
    ...(name === 'TLS' ? { ssl: { ca, servername: 'localhost' } } : {}),
  });
  return {
    name,
    client: (extra = {}) => connected({ ...base(), ...extra }),
    poolConfig: (extra = {}) => ({ ...base(), ...extra }),
    canceller: async () => quiet(new pg.Client(base()) as Canceller),
  };
}

/** QUIC: every session is a fresh bidirectional stream of `dialer`'s connection(s). */
export function quicClients(dialer: QuicDialer): TransportClients {
  return {
    name: 'QUIC',
    client: async (extra = {}) => {
      const stream = await dialer.open();
      stream.on('error', () => undefined); // pg's own listener reports it; this one outlives pg's
      return connected({ ...credentials(), stream: () => forNodePostgres(stream), ...extra });
    },
    // pg.Pool builds its clients synchronously: each gets a stream that opens on connect().
    poolConfig: (extra = {}) => ({ ...credentials(), stream: () => new LazySessionStream(() => dialer.open()), ...extra }),
    canceller: async () => {
      const stream = await dialer.open();
      stream.on('error', () => undefined);
      return quiet(new pg.Client({ ...credentials(), stream: () => forNodePostgres(stream) }) as Canceller);
    },
  };
}

/**
 * A socket-like Duplex for node-postgres that opens its session stream only when pg calls
 * `connect()`, then relays bytes both ways (with backpressure) and mirrors end/close/errors.
 */
export class LazySessionStream extends Duplex {
  private inner: SessionStream | null = null;

  constructor(private readonly open: () => Promise<SessionStream>) {
    super();
  }

  connect(): this {
    this.open().then(
      (s) => {
        if (this.destroyed) return void s.destroy();
        this.inner = s;
        s.on('data', (chunk: Buffer) => {
          if (!this.push(chunk)) s.pause();
        });
        s.on('end', () => this.push(null));
        s.on('error', (e: Error) => this.destroy(e));
        s.on('close', () => this.destroy());
        this.emit('connect');
      },
      (e: unknown) => this.destroy(e instanceof Error ? e : new Error(String(e))),
    );
    return this;
  }

  override _read(): void {
    this.inner?.resume();
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (e?: Error | null) => void): void {
    if (this.inner === null) return cb(new Error('session stream not open'));
    this.inner.write(chunk, cb);
  }

  override _final(cb: (e?: Error | null) => void): void {
    if (this.inner === null) return cb();
    this.inner.end(() => cb());
  }

  override _destroy(err: Error | null, cb: (e?: Error | null) => void): void {
    if (this.inner !== null && !this.inner.destroyed) this.inner.destroy(err ?? undefined);
    cb(err);
  }

  setNoDelay(): this {
    return this;
  }
  setKeepAlive(): this {
    return this;
  }
  ref(): this {
    return this;
  }
  unref(): this {
    return this;
  }
}
