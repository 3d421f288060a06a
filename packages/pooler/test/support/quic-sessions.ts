// node-postgres sessions over QUIC streams to a test pooler: one dialer per simulated client
// machine, one stream per pg.Client; every dialer is remembered so a test file can close them all.
import pg from 'pg';
import { forNodePostgres, QuicDialer } from '@quicpool/transport';
import type { SessionStream } from '@quicpool/transport';
import { pgInfo } from './pooler-helpers.js';

export class QuicSessions {
  private readonly dialers: QuicDialer[] = [];

  /** `target` is read at dial time: the pooler's QUIC port and CA are known only after beforeAll. */
  constructor(private readonly target: () => { port: number; ca: string }) {}

  dialer(): QuicDialer {
    const { port, ca } = this.target();
    const d = new QuicDialer({ host: '127.0.0.1', port, serverName: 'localhost', ca });
    this.dialers.push(d);
    return d;
  }

  /** A connected pg.Client on a new stream of `d`; stream and client errors are the test's to check. */
  async client(d: QuicDialer, extra: pg.ClientConfig = {}): Promise<{ c: pg.Client; stream: SessionStream }> {
    const stream = await d.open();
    stream.on('error', () => undefined);
    const c = new pg.Client({ database: pgInfo.database, user: pgInfo.user, password: pgInfo.password, stream: () => forNodePostgres(stream), ...extra });
    c.on('error', () => undefined);
    await c.connect();
    return { c, stream };
  }

  async closeAll(options: { graceful?: boolean } = {}): Promise<void> {
    for (const d of this.dialers.splice(0)) await d.close(options).catch(() => undefined);
  }
}
