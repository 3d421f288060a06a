// The statement router against a model of Postgres: any interleaving of Parse/Bind/Describe/
// Close/Execute/Sync pipelines (with errors, duplicate names, DEALLOCATE) by several clients over
// several backends, with a tiny per-backend cache (evictions), gives each client exactly the
// answers a direct connection of its own would have given.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { encodeFrontend } from '@quicpool/wire';
import type { FrontendMessage } from '@quicpool/wire';
import { StatementRouter } from '../../src/prepared/statement-router.js';
import { BackendStatements } from '../../src/prepared/statement-cache.js';
import { FakePostgres } from './fake-postgres.js';

const NAMES = ['s1', 's2', 's3', ''];
const TEXTS = ['q1', 'q2', 'q3', 'bad', 'boom'];

const name = fc.constantFrom(...NAMES);
const op: fc.Arbitrary<FrontendMessage> = fc.oneof(
  fc.record({ type: fc.constant('Parse' as const), name, query: fc.constantFrom(...TEXTS), parameterTypes: fc.constant([]) }),
  fc.record({ type: fc.constant('Bind' as const), portal: fc.constant(''), statement: name, parameterFormats: fc.constant([]), parameters: fc.constant([]), resultFormats: fc.constant([]) }),
  fc.record({ type: fc.constant('Describe' as const), target: fc.constant('S' as const), name }),
  fc.record({ type: fc.constant('Describe' as const), target: fc.constant('P' as const), name: fc.constantFrom('', 's1') }),
  fc.record({ type: fc.constant('Close' as const), target: fc.constant('S' as const), name }),
  fc.record({ type: fc.constant('Execute' as const), portal: fc.constant(''), maxRows: fc.constant(0) }),
  fc.constant({ type: 'Sync' as const }), // several Sync groups in one pipeline
);
/** One request group: a pipeline ending with Sync, or a simple DEALLOCATE query. */
const batch: fc.Arbitrary<FrontendMessage[]> = fc.oneof(
  { weight: 6, arbitrary: fc.array(op, { minLength: 1, maxLength: 7 }).map((ops) => [...ops, { type: 'Sync' as const }]) },
  { weight: 1, arbitrary: fc.constantFrom('DEALLOCATE ALL', 'DEALLOCATE s1', 'deallocate "s2"').map((query) => [{ type: 'Query' as const, query }]) },
);
const step = fc.record({ client: fc.nat(2), backend: fc.nat(1), batch, pipelined: fc.boolean() });

/** The answers as text: each message's type, and the whole message where it says more (tags, errors). */
function typesOf(bytes: Buffer[]): string {
  return bytes.map((b) => (b[0] === 0x43 || b[0] === 0x45 ? b.toString('latin1') : String.fromCharCode(b[0] ?? 0))).join('|');
}

describe('StatementRouter (property)', () => {
  it('gives every client the answers of its own direct connection', () => {
    fc.assert(
      fc.property(fc.array(step, { minLength: 1, maxLength: 40 }), fc.integer({ min: 1, max: 3 }), (steps, limit) => {
        const backends = [new FakePostgres(), new FakePostgres()];
        const caches = [new BackendStatements(limit), new BackendStatements(limit)];
        const clients = [0, 1, 2].map(() => {
          const seen: Buffer[] = [];
          let toBackend: Buffer[] = [];
          const router = new StatementRouter({
            toBackend: (b) => toBackend.push(Buffer.from(b)),
            toClient: (b) => seen.push(b),
            pass: (_t, b) => seen.push(b),
            readyDropped: () => undefined,
          });
          return { router, seen, direct: new FakePostgres(), expected: [] as Buffer[], take: () => [toBackend, (toBackend = [])][0] as Buffer[] };
        });
        for (const s of steps) {
          const c = clients[s.client]!;
          const pg = backends[s.backend]!;
          for (const m of s.batch) c.expected.push(...c.direct.receive(encodeFrontend(m)));
          c.router.attach(caches[s.backend]!);
          const feed = (): void => {
            // Answers may release held messages, which are sent in turn.
            for (let outs = c.take(); outs.length > 0; outs = c.take()) for (const out of outs) for (const r of pg.receive(out)) c.router.backend(r[0]!, r);
          };
          for (const m of s.batch) {
            const bytes = encodeFrontend(m);
            c.router.client(bytes[0]!, bytes, '');
            if (!s.pipelined) feed(); // answers arrive between the client's messages
          }
          feed();
          expect(c.router.pending).toBe(0);
          c.router.detach(false);
          // The cache never claims a statement the backend lacks, and knows (or knows it is unsure
          // about) every pooler statement the backend has.
          const cache = caches[s.backend]!;
          const onBackend = [...pg.statements.keys()].filter((n) => n.startsWith('qp_'));
          for (const n of onBackend) expect(cache.has(n) || cache.unsure.has(n)).toBe(true);
          expect(cache.size).toBeLessThanOrEqual(onBackend.length);
        }
        for (const c of clients) expect(typesOf(c.seen)).toBe(typesOf(c.expected));
      }),
      { numRuns: 500 },
    );
  });
});
