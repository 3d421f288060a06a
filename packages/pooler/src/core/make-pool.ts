// A pool as the core makes it: its server login, read live from the config (a reload reaches
// existing pools without rebuilding them), the hosts it may log in to (upstream.hosts with its
// target_session_attrs) unless it is served otherwise (a virtual database), and where it reports.
import { createMemoryPair } from '@quicpool/transport';
import type { SessionStream } from '@quicpool/transport';
import type { ScramKeys } from '../auth/scram.js';
import { connectBackend } from '../backend/connect.js';
import type { BackendConnection, BackendLogin } from '../backend/connect.js';
import { describeServer } from '../backend/dial.js';
import type { ServerAddress } from '../backend/dial.js';
import type { ResolvedPoolerConfig } from '../config/pooler-config.js';
import { Pool } from '../pool/pool.js';
import type { PoolDependencies, PoolUpstreamEvent } from '../pool/pool.js';
import type { Clock } from '../runtime/clock.js';
import type { WriteBatcher } from '../runtime/write-batcher.js';
import { HostChoice } from '../upstream/host-choice.js';

/** What every pool of a core shares. */
export interface PoolSurroundings {
  readonly config: () => ResolvedPoolerConfig;
  readonly clock: Clock;
  readonly batcher: WriteBatcher;
  /** Per pool key: SCRAM keys a client's proof revealed (users without a server password). */
  readonly scramKeys: ReadonlyMap<string, ScramKeys>;
  readonly served: NonNullable<PoolDependencies['served']>;
  readonly upstream: (pool: Pool, e: PoolUpstreamEvent) => void;
  /** A server connection reported a new role for `server` (every pool drops its idle ones there). */
  readonly serverRoleChanged: (server: ServerAddress) => void;
}

export interface PoolOptions {
  readonly key: string;
  /** Settings over the config's pool settings. */
  readonly own?: Partial<ResolvedPoolerConfig['pool']>;
  /** Served otherwise than by the server (a virtual database): no password, no hosts. */
  readonly connect?: (l: BackendLogin) => Promise<BackendConnection>;
  readonly budget?: PoolDependencies['budget'];
}

export function makePool(s: PoolSurroundings, database: string, user: string, o: PoolOptions): Pool {
  const cfg = s.config;
  const virtual = o.connect !== undefined;
  const login: BackendLogin = {
    database,
    user,
    get password() {
      return virtual ? undefined : cfg().users.get(user)?.serverPassword;
    },
    get scramKeys() {
      return virtual ? undefined : s.scramKeys.get(o.key);
    },
    get connectTimeoutMs() {
      return cfg().server.connectTimeoutMs;
    },
    get needsRole() {
      return hosts !== undefined && hosts.attrs() !== 'any';
    },
  };
  const hosts = virtual
    ? undefined
    : new HostChoice(
        () => cfg().server.hosts,
        () => cfg().databases.get(database)?.targetSessionAttrs ?? cfg().server.targetSessionAttrs,
        (server) => connectBackend(login, server, s.clock),
        (from, to) => s.upstream(pool, { type: 'hostChanged', from: describeServer(from), to: describeServer(to), why: 'the host before it did not answer or is of the wrong kind' }),
      );
  const pool: Pool = new Pool(database, user, { ...cfg().pool, ...o.own }, login, {
    clock: s.clock,
    connect: o.connect ?? (() => hosts!.connect()),
    batcher: s.batcher,
    served: s.served,
    ...(o.budget !== undefined ? { budget: o.budget } : {}),
    ...(hosts !== undefined ? { hosts, outageWaitMs: () => cfg().server.outageWaitMs, upstream: s.upstream, serverRoleChanged: s.serverRoleChanged } : {}),
  });
  return pool;
}

/** Logins to a database served in process (the admin console): over an in-memory stream pair. */
export function servedInProcess(serve: (stream: SessionStream) => void, server: ServerAddress, clock: Clock): (l: BackendLogin) => Promise<BackendConnection> {
  return (l) =>
    connectBackend(l, server, clock, () => {
      const [client, end] = createMemoryPair();
      serve(end);
      return Promise.resolve({ stream: client, readsInto: false });
    });
}
