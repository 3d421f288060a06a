// The README's three usage examples are the files in examples/, included verbatim (checked here),
// and each one runs against a real pooler in front of the run's real Postgres.
import { readFileSync } from 'node:fs';
import { describe, expect, it, beforeAll, afterAll } from 'vitest';
import { poolExample } from '../../packages/client/examples/pg-pool.js';
import { clientExample } from '../../packages/client/examples/pg-client.js';
import { postgresJsExample } from '../../packages/client/examples/postgres-js.js';
import type { ExampleSettings } from '../../packages/client/examples/settings.js';
import { devCerts, pgInfo, startQuicPooler } from './helpers.js';
import type { TestPooler } from './helpers.js';

let p: TestPooler;
let settings: ExampleSettings;
beforeAll(async () => {
  p = await startQuicPooler();
  settings = {
    endpoints: [p.endpoint], ca: (await devCerts()).caPem, serverName: 'localhost',
    user: pgInfo.user, password: pgInfo.password, database: pgInfo.database,
  };
});
afterAll(async () => {
  await p.close();
});

const readme = readFileSync(new URL('../../packages/client/README.md', import.meta.url), 'utf8');
const example = (name: string): string => readFileSync(new URL(`../../packages/client/examples/${name}`, import.meta.url), 'utf8');

describe('README examples', () => {
  it.each(['pg-pool.ts', 'pg-client.ts', 'postgres-js.ts', 'settings.ts'])('README includes examples/%s verbatim', (name) => {
    expect(readme).toContain(`<!-- examples/${name} -->\n\`\`\`ts\n${example(name)}\`\`\``);
  });

  it('1. pg.Pool swap', async () => {
    const log = console.log;
    console.log = () => undefined; // the example prints the QUIC counters
    try {
      expect(await poolExample(settings)).toEqual({ answer: 42, inserted: 2 });
    } finally {
      console.log = log;
    }
  }, 20_000);

  it('2. pg.Client with pgStream and QuicClient', async () => {
    expect(await clientExample(settings)).toEqual({ viaStream: pgInfo.user, viaQuicClient: 7 });
  }, 20_000);

  it('3. postgres.js socket', async () => {
    expect(await postgresJsExample(settings)).toEqual({ n: 42, inTransaction: 1 });
  }, 20_000);
});
