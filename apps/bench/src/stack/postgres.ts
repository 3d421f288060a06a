// The Postgres the bench runs against (embedded, or --pg): its address, and its postmaster's pid when local (CPU from /proc).
import { readFileSync } from 'node:fs';
import pg from 'pg';

export type PgTarget = ReturnType<typeof pgTargetOf>;

/** A postgresql:// URL as fields (defaults as libpq's). */
export function pgTargetOf(url: string) {
  const u = new URL(url);
  const user = decodeURIComponent(u.username) || 'postgres';
  return {
    host: decodeURIComponent(u.hostname) || '127.0.0.1',
    port: Number(u.port || 5432),
    user,
    password: decodeURIComponent(u.password),
    database: decodeURIComponent(u.pathname.slice(1)) || user,
  };
}

/** The postmaster's pid (a backend's parent); null when Postgres runs elsewhere (its backend's pid is not ours to read) or cannot be reached. */
export async function postmasterPid(target: PgTarget): Promise<number | null> {
  const client = new pg.Client({ ...target });
  client.on('error', () => undefined);
  try {
    await client.connect();
    const r = await client.query<{ pid: number }>('select pg_backend_pid() as pid');
    const backend = r.rows[0]?.pid;
    if (backend === undefined) return null;
    // Its parent: field 4 of /proc/<pid>/stat, counted from the last ')' (the command name may hold spaces).
    const stat = readFileSync(`/proc/${backend}/stat`, 'utf8');
    const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    const comm = Number.isInteger(parent) ? readFileSync(`/proc/${parent}/comm`, 'utf8').trim() : '';
    return comm.startsWith('postgres') ? parent : null;
  } catch {
    return null;
  } finally {
    await client.end().catch(() => undefined);
  }
}
