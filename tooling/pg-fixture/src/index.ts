import './vitest-context.js';

export { startPostgres, PostgresServer } from './postgres-server.js';
export type { PgConnectionInfo, StartPostgresOptions } from './postgres-server.js';
export { freePort, resolveRunAs } from '@quicpool/postgres';
export { findPgbench, findPsql, PGBENCH_MISSING } from './pgbench.js';
export type { RunAs, ShutdownMode } from '@quicpool/postgres';
export { startUdpFaultRelay } from './udp-fault-relay.js';
export type { UdpFaultRelay } from './udp-fault-relay.js';
export { seededRandom } from './seeded-random.js';
export { asSuperuser, createTestRole, dropTestRole, withPgClient } from './test-role.js';
export type { TestRole } from './test-role.js';
export { createTestDatabase, dropTestDatabase } from './test-database.js';
export { untilBackendState, untilQueryRunning } from './backend-state.js';
export type { BackendState, BackendStateOptions } from './backend-state.js';
export { queryLoop } from './query-loop.js';
export type { QueryRecord } from './query-loop.js';
