// The five places a driver program connects to: the run's Postgres itself, and a quicpool pooler
// in transaction and in session mode, each reached over TCP and over QUIC through the local agent
// (`quicpool connect`: local TCP in, one QUIC stream per session out). One pooler per mode serves
// every driver; its pool is small (POOL_SIZE) so that 20 concurrent sessions of a program share
// few backends and transaction mode really moves backends between clients.
import { inject } from 'vitest';
import type {} from '@quicpool/pg-fixture';
import { QuicAgent } from '@quicpool/client';
import { createPooler } from '@quicpool/pooler';
import type { Pooler } from '@quicpool/pooler';
import { generateDevCertificates, listenTcp, QuicListener } from '@quicpool/transport';
import type { Endpoint } from './programs.js';

export const pgInfo = inject('pg');

export const SETUP_NAMES = ['direct', 'transaction/tcp', 'session/tcp', 'transaction/quic-agent', 'session/quic-agent'] as const;
export type SetupName = (typeof SETUP_NAMES)[number];
export const POOLED_SETUPS = SETUP_NAMES.filter((s): s is Exclude<SetupName, 'direct'> => s !== 'direct');

export const POOL_SIZE = 6;

export interface Setups {
  readonly endpoints: ReadonlyMap<SetupName, Endpoint>;
  readonly poolers: ReadonlyMap<'transaction' | 'session', Pooler>;
  close(): Promise<void>;
}

const login = { user: pgInfo.trustUser, database: pgInfo.database } as const;

/** Both poolers, their TCP and QUIC listeners, and one agent in front of each QUIC listener. */
export async function startSetups(): Promise<Setups> {
  const certs = await generateDevCertificates({ names: ['localhost'] });
  const endpoints = new Map<SetupName, Endpoint>([['direct', { host: pgInfo.host, port: pgInfo.port, ...login }]]);
  const poolers = new Map<'transaction' | 'session', Pooler>();
  const closers: Array<() => Promise<void>> = [];
  const close = async (): Promise<void> => {
    // Agents first (their QUIC connections end), then each pooler with its listeners.
    for (const c of closers.splice(0).reverse()) await c();
  };
  try {
    for (const mode of ['transaction', 'session'] as const) {
      const pooler = createPooler({
        server: { host: pgInfo.host, port: pgInfo.port },
        users: { [pgInfo.trustUser]: { auth: 'trust' } },
        pool: { poolMode: mode, poolSize: POOL_SIZE, queryWaitTimeoutMs: 60_000 },
      });
      closers.push(() => pooler.close({ graceful: false }));
      const tcp = await listenTcp({ host: '127.0.0.1', port: 0 });
      pooler.listen(tcp);
      const quic = await QuicListener.listen({ cert: certs.certPem, key: certs.keyPem, host: '127.0.0.1', port: 0 });
      pooler.listen(quic);
      closers.push(() => quic.close({ graceful: false }));
      const agent = new QuicAgent({
        sessions: { endpoints: [`127.0.0.1:${quic.address().port}`], ca: certs.caPem, serverName: 'localhost' },
        host: '127.0.0.1',
        port: 0,
        socketDir: null,
      });
      const listening = await agent.listen();
      closers.push(() => agent.close({ timeoutMs: 2_000 }));
      poolers.set(mode, pooler);
      endpoints.set(`${mode}/tcp`, { host: '127.0.0.1', port: tcp.address().port, ...login });
      endpoints.set(`${mode}/quic-agent`, { host: '127.0.0.1', port: listening.tcp?.port ?? 0, ...login });
    }
  } catch (e) {
    await close();
    throw e;
  }
  return { endpoints, poolers, close };
}
