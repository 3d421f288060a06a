// What the pooler answered the last login of each StartupMessage (same user, database and
// parameters, byte for byte): the ParameterStatus values a fast start announces before the pooler
// has answered. Share one cache between agents (or keep it in a file, as `quicpool connect` does)
// so that an agent started again fast-starts its first sessions too.
import type { LoginRecord } from './login-answer.js';

/** Most StartupMessages remembered; the oldest is forgotten first. */
export const MAX_LOGIN_RECORDS = 1_000;
/** A StartupMessage longer than this is not remembered (Postgres allows 10,000 bytes). */
const MAX_KEY_BYTES = 2_048;

export class LoginCache {
  private readonly records = new Map<string, LoginRecord>();

  constructor(private readonly max = MAX_LOGIN_RECORDS) {}

  /** The key of a StartupMessage (its bytes), or null for one too long to remember. */
  static key(startup: Buffer): string | null {
    return startup.length > MAX_KEY_BYTES ? null : startup.toString('base64');
  }

  get(key: string): LoginRecord | undefined {
    return this.records.get(key);
  }

  set(key: string, record: LoginRecord): void {
    this.records.delete(key);
    this.records.set(key, record);
    while (this.records.size > this.max) this.records.delete(this.records.keys().next().value as string);
  }

  delete(key: string): void {
    this.records.delete(key);
  }

  get size(): number {
    return this.records.size;
  }

  entries(): IterableIterator<[string, LoginRecord]> {
    return this.records.entries();
  }
}

/** Two records announce the same values (a repeated login changes nothing worth saving). */
export function sameRecord(a: LoginRecord, b: LoginRecord): boolean {
  if (a.keyLength !== b.keyLength || a.parameters.length !== b.parameters.length) return false;
  return a.parameters.every(([n, v], i) => b.parameters[i]![0] === n && b.parameters[i]![1] === v);
}
