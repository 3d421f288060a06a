// 2. pg.Client you build yourself: pg wants its socket synchronously, so acquire the session
// stream first (pgStream), or use QuicClient, which acquires it inside connect().
import pg from 'pg';
import { pgStream, QuicClient, SessionManager } from '@quicpool/client';
import type { ExampleSettings } from './settings.js';

export async function clientExample(s: ExampleSettings): Promise<{ viaStream: string; viaQuicClient: number }> {
  const sessions = new SessionManager({ endpoints: s.endpoints, ca: s.ca, serverName: s.serverName });
  const login = { user: s.user, password: s.password, database: s.database }; // leave `ssl` unset
  try {
    const client = new pg.Client({ ...login, stream: await pgStream(sessions) });
    await client.connect();
    const viaStream: string = (await client.query('select current_user as u')).rows[0].u;
    await client.end();

    const c2 = new QuicClient({ ...login, sessions });
    await c2.connect();
    const viaQuicClient: number = (await c2.query('select 7 as n')).rows[0].n;
    await c2.end();
    return { viaStream, viaQuicClient };
  } finally {
    await sessions.close();
  }
}
