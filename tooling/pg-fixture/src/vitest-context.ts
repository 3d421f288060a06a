// Types what the global setup hands to tests: `inject('pg')` is the run's real Postgres.
import type { PgConnectionInfo } from './postgres-server.js';
import type {} from 'vitest';

declare module 'vitest' {
  export interface ProvidedContext {
    pg: PgConnectionInfo;
  }
}
