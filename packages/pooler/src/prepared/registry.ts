// The statements one pool (database, user) knows: pooler-wide names whose Parse a backend of the
// pool accepted, and, once a backend answered a Describe of one, its description
// (ParameterDescription and RowDescription or NoData, as sent). With it a client without a backend
// can prepare or describe such a statement and get its answer from the pooler (idle-answers.ts):
// pgbench -M prepared prepares synchronously per client, and would otherwise wait for a backend
// held by a sibling client of its own thread. A bounded LRU (Map order = use order).

/** A statement's Describe answer, as the backend sent it. */
export interface StatementDescription {
  /** ParameterDescription ('t'). */
  readonly parameters: Buffer;
  /** RowDescription ('T') or NoData ('n'). */
  readonly result: Buffer;
}

/** Larger descriptions are not kept (their Describe goes to a backend): the memory stays bounded. */
export const MAX_DESCRIPTION_BYTES = 16 * 1024;

export class PreparedRegistry {
  /** Name -> its description, or null while none was seen. */
  private readonly known = new Map<string, StatementDescription | null>();

  constructor(private limit: number) {}

  /** How many statements are kept at most (the pool's preparedStatementCacheSize). */
  setLimit(limit: number): void {
    this.limit = limit;
    this.trim();
  }

  get size(): number {
    return this.known.size;
  }

  has(name: string): boolean {
    return this.known.has(name);
  }

  /** Its description, if a backend's was seen (and it was small enough to keep). */
  description(name: string): StatementDescription | undefined {
    return this.known.get(name) ?? undefined;
  }

  /** A backend accepted its Parse. */
  learned(name: string): void {
    const d = this.known.get(name);
    this.known.delete(name);
    this.known.set(name, d ?? null);
    this.trim();
  }

  /** A backend described it (the bytes are copied: they may live in a reused read buffer). */
  described(name: string, parameters: Buffer, result: Buffer): void {
    this.known.delete(name);
    const keep = parameters.length + result.length <= MAX_DESCRIPTION_BYTES;
    this.known.set(name, keep ? { parameters: Buffer.from(parameters), result: Buffer.from(result) } : null);
    this.trim();
  }

  /** A backend refused its Parse (a table is gone, the text no longer parses): not known any more. */
  forget(name: string): void {
    this.known.delete(name);
  }

  clear(): void {
    this.known.clear();
  }

  private trim(): void {
    for (const old of this.known.keys()) {
      if (this.known.size <= this.limit) return;
      this.known.delete(old);
    }
  }
}
