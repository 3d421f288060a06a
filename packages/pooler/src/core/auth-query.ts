// auth_query (as PgBouncer's auth_user/auth_query): a user the config does not list is looked up
// on the server with a configured query (default: name and SCRAM secret from pg_shadow), over a
// dedicated pool of one connection logged in as the configured auth user. Results (found or not)
// are cached on the pooler's clock with a bound and a TTL, so a flood of logins, or of made-up
// names, costs the server one query per name per TTL. A user found this way authenticates with
// SCRAM against its server secret; the pool then logs in to the server as that user with the keys
// the client's own proof revealed (no password is ever known to the pooler).
import { decodeBackendMessage, encodeFrontend, MessageType, readyForQueryStatus } from '@quicpool/wire';
import type { RawMessage } from '@quicpool/wire';
import type { Backend } from '../backend/backend.js';
import type { Waiter } from '../backend/link.js';
import type { Clock, Timer } from '../runtime/clock.js';
import type { AuthQuerySettings, ResolvedUser } from '../config/pooler-config.js';
import type { EncodedError } from '../session/types.js';
import { parseScramSecret } from '../auth/scram.js';

/** Users found by auth_query map no certificates. */
const NO_NAMES: ReadonlySet<string> = new Set();

/** The lookup connection's pool, as this module uses it. */
export interface LookupPool {
  acquire(w: Waiter): void;
  release(b: Backend, facts: { status: 'I' | 'T' | 'E'; busy: boolean; dirty: boolean }): void;
  withdraw(w: Waiter): void;
}

interface Entry {
  readonly user: ResolvedUser | undefined;
  /** Why not found (for the operator's log), when not. */
  readonly reason: string;
  readonly expiresAt: number;
}

/** Lookups waiting for the one connection at most; later ones fail at once (not cached). */
const MAX_IN_FLIGHT = 256;

export class AuthQuery {
  private readonly cache = new Map<string, Entry>();
  private readonly inFlight = new Map<string, Promise<void>>();

  constructor(
    private readonly settings: () => AuthQuerySettings,
    private readonly pool: () => LookupPool,
    private readonly clock: Clock,
  ) {}

  /** A fresh result for `name`: the user found, or undefined (not found, or not looked up yet). */
  cached(name: string): ResolvedUser | undefined {
    return this.fresh(name)?.user;
  }

  /** Why `name` is not a user, for the log: what the lookup said, or that none was made. */
  reason(name: string): string {
    return this.fresh(name)?.reason ?? 'not looked up';
  }

  /** True when a lookup is needed before `name` can log in (no fresh result). */
  needsLookup(name: string): boolean {
    return this.fresh(name) === undefined;
  }

  /** Looks `name` up (one query for concurrent logins of the same name); resolves when cached. */
  lookup(name: string): Promise<void> {
    const running = this.inFlight.get(name);
    if (running !== undefined) return running;
    if (this.inFlight.size >= MAX_IN_FLIGHT) return Promise.resolve();
    const p = new Promise<Entry>((resolve) => new Lookup(name, this.settings(), this.pool(), this.clock, resolve).start()).then((entry) => {
      this.inFlight.delete(name);
      this.remember(name, entry);
    });
    this.inFlight.set(name, p);
    return p;
  }

  private fresh(name: string): Entry | undefined {
    const e = this.cache.get(name);
    if (e === undefined) return undefined;
    if (e.expiresAt > this.clock.now()) return e;
    this.cache.delete(name);
    return undefined;
  }

  private remember(name: string, e: Entry): void {
    this.cache.delete(name); // re-inserted last: Map order is age order
    this.cache.set(name, e);
    const bound = this.settings().cacheSize;
    for (const oldest of this.cache.keys()) {
      if (this.cache.size <= bound) break;
      this.cache.delete(oldest);
    }
  }
}

/** One query on the lookup connection: Parse/Bind/Execute/Sync, the first DataRow, ReadyForQuery. */
class Lookup implements Waiter {
  private backend: Backend | null = null;
  private timer: Timer | null = null;
  private row: readonly (Buffer | null)[] | null = null;
  private error: string | null = null;
  private done = false;

  constructor(
    private readonly name: string,
    private readonly s: AuthQuerySettings,
    private readonly pool: LookupPool,
    private readonly clock: Clock,
    private readonly resolve: (e: Entry) => void,
  ) {}

  start(): void {
    this.pool.acquire(this);
  }

  onBackend(b: Backend): void {
    if (this.done) return this.pool.release(b, { status: 'I', busy: false, dirty: false });
    this.backend = b;
    this.timer = this.clock.setTimer(() => this.fail(`auth_query took longer than ${this.s.timeoutMs} ms`, true), this.s.timeoutMs);
    b.writeNow(
      Buffer.concat([
        encodeFrontend({ type: 'Parse', name: '', query: this.s.query, parameterTypes: [] }),
        encodeFrontend({ type: 'Bind', portal: '', statement: '', parameterFormats: [], parameters: [Buffer.from(this.name)], resultFormats: [] }),
        encodeFrontend({ type: 'Execute', portal: '', maxRows: 0 }),
        encodeFrontend({ type: 'Sync' }),
      ]),
    );
  }

  onError(error: EncodedError): void {
    this.finish({ user: undefined, reason: `auth_query connection failed: ${error.message}` }, false);
  }

  onBackendMessage(m: RawMessage): void {
    switch (m.type) {
      case MessageType.DataRow: {
        const d = decodeBackendMessage(m.bytes);
        if (this.row === null && d.type === 'DataRow') this.row = d.values;
        return;
      }
      case MessageType.ErrorResponse: {
        const e = decodeBackendMessage(m.bytes);
        this.error = e.type === 'ErrorResponse' ? `${e.fields['C'] ?? ''} ${e.fields['M'] ?? ''}`.trim() : 'error';
        return;
      }
      case MessageType.ReadyForQuery: {
        const b = this.backend;
        this.backend = null;
        if (b !== null) this.pool.release(b, { status: readyForQueryStatus(m.bytes) ?? 'E', busy: false, dirty: false });
        this.finish(this.error !== null ? { user: undefined, reason: `auth_query failed: ${this.error}` } : this.result(), this.error === null);
        return;
      }
      default:
        return; // ParseComplete, BindComplete, CommandComplete, notices
    }
  }

  onBackendLost(reason: string): void {
    this.backend = null;
    this.fail(`auth_query connection lost: ${reason}`, false);
  }

  /** The first row as a user: a SCRAM-SHA-256 secret is what it takes (never `cert`: no certificate map). */
  private result(): Omit<Entry, 'expiresAt'> {
    const secret = this.row?.[1];
    if (this.row === null) return { user: undefined, reason: 'no such user (auth_query found no row)' };
    if (secret === null || secret === undefined) return { user: undefined, reason: 'auth_query found the user without a password' };
    const scram = parseScramSecret(secret.toString('utf8'));
    if (scram === undefined) return { user: undefined, reason: 'auth_query returned a secret that is not SCRAM-SHA-256 (md5 and plaintext are not used)' };
    return { user: { name: this.name, auth: 'scram-sha-256', password: undefined, scram, md5: undefined, serverPassword: undefined, certCommonNames: NO_NAMES, certFingerprints: NO_NAMES }, reason: '' };
  }

  private fail(reason: string, closeBackend: boolean): void {
    const b = this.backend;
    this.backend = null;
    // Still running: the connection is closed rather than reused.
    if (b !== null && closeBackend) this.pool.release(b, { status: 'I', busy: true, dirty: false });
    this.finish({ user: undefined, reason }, false);
  }

  /** Results of a query are remembered for the TTL; failures (server trouble) only briefly. */
  private finish(e: Omit<Entry, 'expiresAt'>, answered: boolean): void {
    if (this.done) return;
    this.done = true;
    if (this.timer !== null) this.clock.clearTimer(this.timer);
    this.pool.withdraw(this);
    const ttl = answered ? this.s.cacheTtlMs : Math.min(this.s.cacheTtlMs, FAILURE_TTL_MS);
    this.resolve({ ...e, expiresAt: this.clock.now() + ttl });
  }
}

/** A failed lookup (server down, query error) is retried after this long at most. */
const FAILURE_TTL_MS = 1000;
