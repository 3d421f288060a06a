export { defaultHba, PostgresServer, startPostgres } from './server.js';
export type { PostgresInfo, PostgresOptions, ShutdownMode } from './server.js';
export { findBinaries, resolveRunAs } from './binaries.js';
export type { PostgresBinaries, RunAs } from './binaries.js';
export { freePort } from './free-port.js';
