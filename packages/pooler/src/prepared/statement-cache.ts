// Which pooler-wide prepared statements exist on one backend: a bounded LRU (Map order = use
// order). One cache per backend object, so a replaced backend starts empty and its client's
// statements are prepared again there, lazily.

export class BackendStatements {
  private readonly names = new Map<string, true>();
  /**
   * Statements whose existence on the backend is not known: a pipelined message about them was
   * skipped after an error. They are closed and prepared again when next needed.
   */
  readonly unsure = new Set<string>();

  constructor(readonly limit: number) {}

  has(name: string): boolean {
    return this.names.has(name);
  }

  /** Marks a statement recently used. */
  touch(name: string): void {
    if (this.names.delete(name)) this.names.set(name, true);
  }

  /** Adds a statement; returns the least recently used ones that must now be closed on the backend. */
  add(name: string, keep?: string): string[] {
    this.names.delete(name);
    this.names.set(name, true);
    const evicted: string[] = [];
    for (const old of this.names.keys()) {
      if (this.names.size <= this.limit) break;
      if (old === name || old === keep) continue;
      this.names.delete(old);
      evicted.push(old);
    }
    return evicted;
  }

  /** Forgets a statement without closing it (it is gone, or was never made). */
  delete(name: string): void {
    this.names.delete(name);
  }

  clear(): void {
    this.names.clear();
    this.unsure.clear();
  }

  get size(): number {
    return this.names.size;
  }
}
