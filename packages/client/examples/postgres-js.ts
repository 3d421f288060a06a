// 3. postgres.js: its `socket` option takes a factory; each postgres.js connection becomes one
// QUIC session stream.
import postgres from 'postgres';
import { postgresSocket, SessionManager } from '@quicpool/client';
import type { ExampleSettings } from './settings.js';

export async function postgresJsExample(s: ExampleSettings): Promise<{ n: number; inTransaction: number }> {
  const sessions = new SessionManager({ endpoints: s.endpoints, ca: s.ca, serverName: s.serverName });
  // postgres.js' type definitions do not list `socket`: pass the options as a variable.
  const options = { username: s.user, password: s.password, database: s.database, max: 20, socket: postgresSocket(sessions) };
  const sql = postgres(options);
  try {
    const [row] = await sql`select ${41}::int + 1 as n`;
    const inTransaction = await sql.begin(async (tx) => {
      const [r] = await tx`select count(*)::int as c from pg_class where relname = ${'pg_class'}`;
      return r?.c as number;
    });
    return { n: row?.n as number, inTransaction };
  } finally {
    await sql.end({ timeout: 5 });
    await sessions.close();
  }
}
