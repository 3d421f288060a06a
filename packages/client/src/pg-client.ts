// node-postgres clients over QUIC session streams. pg builds its socket synchronously in the
// Client constructor (`stream: () => Duplex`), but a QUIC stream may have to wait for a handshake
// or for stream credit. So a QuicClient starts with an inert placeholder and, in `connect()`,
// first acquires a stream and swaps it into pg's Connection before pg attaches to it: after that
// pg talks to the QuicSessionStream directly (no extra layer on the hot path).
import { Duplex } from 'node:stream';
import pg from 'pg';
import { forNodePostgres } from '@quicpool/transport';
import type { QuicSessionStream } from '@quicpool/transport';
import type { SessionSource } from './session-manager.js';
import { pipelineStartup, StartupHints } from './fast-start.js';
import type { FastStartMode, PgConnectionInternals } from './fast-start.js';
import { withoutTlsParameters } from './ssl-settings.js';
import { discardStream } from './waiters.js';

export interface QuicClientConfig extends Omit<pg.ClientConfig, 'stream' | 'ssl' | 'host' | 'port'> {
  /** Where the session stream comes from: a SessionManager (or a QuicPool's `sessions`). */
  readonly sessions: SessionSource;
  /**
   * Send the first query in the same flight as the last login message instead of waiting for
   * the startup's ReadyForQuery (see fast-start.ts). Default true. 'early-data': also on a
   * resumed connection still in its handshake, so StartupMessage and first query ride together
   * in 0-RTT; a pooler with `earlyData = "read-only"` answers a read-only first query at once
   * (first row in one round trip), any other waits for the handshake at the pooler.
   */
  readonly fastStart?: FastStartMode;
}

/** Stands in for the socket until a session stream is acquired; pg never writes to it. */
class PendingSocket extends Duplex {
  override _read(): void {}
  override _write(_chunk: unknown, _enc: BufferEncoding, cb: (err?: Error | null) => void): void {
    cb(new Error('quicpool: no QUIC session stream yet (client not connected)'));
  }
}

interface PgInternals {
  connection: { stream: Duplex } & PgConnectionInternals;
  _ending: boolean;
  user: string;
  database: string;
}

type ConnectCallback = ((err: Error) => void) | ((err: null, c: pg.Client) => void);

export class QuicClient extends pg.Client {
  private readonly sessions: SessionSource;
  private readonly placeholder: PendingSocket;
  private acquireStarted = false;
  private readonly fastStart: FastStartMode;
  private pipelined: boolean | null = null;

  constructor(config: QuicClientConfig) {
    const placeholder = new PendingSocket();
    const { sessions, fastStart, ...rest } = config;
    // pg.Pool hides `password` (non-enumerable) in the options it passes: copy it explicitly.
    // QUIC is TLS 1.3 already: sslmode in the connection string and PGSSLMODE are ignored (ssl-settings.ts).
    const connectionString = rest.connectionString === undefined ? {} : { connectionString: withoutTlsParameters(rest.connectionString) };
    super({ ...rest, ...connectionString, password: config.password, ssl: false, stream: () => placeholder });
    this.sessions = sessions;
    this.placeholder = placeholder;
    this.fastStart = fastStart ?? true;
  }

  /**
   * Whether this client's first query went out right behind its last login message (true), or
   * after the startup's ReadyForQuery (false); null before the startup is over.
   */
  get startupPipelined(): boolean | null {
    return this.pipelined;
  }

  /** The QUIC session stream this client runs on, once connected. */
  get sessionStream(): QuicSessionStream | null {
    const s = (this as unknown as PgInternals).connection.stream;
    return s === this.placeholder ? null : (s as QuicSessionStream);
  }

  override connect(): Promise<pg.Client>;
  override connect(callback: ConnectCallback): void;
  override connect(callback?: ConnectCallback): Promise<pg.Client> | void {
    if (callback !== undefined) {
      const cb = callback as (err: Error | null, c?: pg.Client) => void;
      this.acquireThenConnect((err) => (err === null ? cb(null, this) : cb(err)));
      return;
    }
    return new Promise((resolve, reject) => this.acquireThenConnect((err) => (err === null ? resolve(this) : reject(err))));
  }

  private acquireThenConnect(done: (err: Error | null) => void): void {
    const connectPg = (): void => {
      super.connect((err: Error | null) => done(err ?? null));
    };
    // A second connect(): let pg answer "Client has already been connected".
    if (this.acquireStarted) return connectPg();
    this.acquireStarted = true;
    const ac = new AbortController();
    // pg.Pool's connectionTimeoutMillis destroys `connection.stream`: stop waiting then.
    const onClose = (): void => ac.abort(new Error('Connection terminated before a QUIC session stream was acquired'));
    this.placeholder.once('close', onClose);
    this.sessions.acquire({ signal: ac.signal }).then(
      (stream) => {
        this.placeholder.off('close', onClose);
        const self = this as unknown as PgInternals;
        if (self._ending) {
          discardStream(stream);
          return done(new Error('Client was closed before it connected'));
        }
        self.connection.stream = forNodePostgres(stream);
        this.placeholder.destroy();
        const hints = this.sessions.startupHints;
        if (this.fastStart !== false && hints !== undefined) {
          const key = StartupHints.key(self.user, self.database);
          pipelineStartup(self.connection, stream, hints, key, (pipelined) => {
            this.pipelined = pipelined;
          }, this.fastStart === 'early-data');
        }
        connectPg();
      },
      (err: Error) => {
        this.placeholder.off('close', onClose);
        done(err);
      },
    );
  }
}

/**
 * For code that builds `pg.Client` itself: acquires a session stream and returns the synchronous
 * factory pg wants. `new pg.Client({ ...config, stream: await pgStream(manager) })`.
 */
export async function pgStream(sessions: SessionSource): Promise<() => QuicSessionStream> {
  const stream = forNodePostgres(await sessions.acquire());
  let used = false;
  return () => {
    if (used) throw new Error('quicpool: a pgStream() factory carries one session; acquire another for the next client');
    used = true;
    return stream;
  };
}
