// The real server's reported parameters for one pool (what a client's login answers with): from
// the pool's first server connection, or from another worker that knows them, then cached. Logins
// that come before wait for them; `ask` gets them asked for (the first connection opened).
export class ServerParameters {
  private cache: ReadonlyMap<string, string> | undefined;
  private promise: Promise<ReadonlyMap<string, string>> | undefined;
  private waiters: { resolve(p: ReadonlyMap<string, string>): void; reject(e: unknown): void }[] = [];

  constructor(private readonly ask: () => void) {}

  get known(): ReadonlyMap<string, string> | undefined {
    return this.cache;
  }

  /** Logins wait and nobody knows the parameters yet: a server connection is wanted for them. */
  get wanted(): boolean {
    return this.waiters.length > 0 && this.cache === undefined;
  }

  get(): Promise<ReadonlyMap<string, string>> {
    if (this.cache !== undefined) return Promise.resolve(this.cache);
    this.promise ??= new Promise<ReadonlyMap<string, string>>((resolve, reject) => {
      this.waiters.push({ resolve, reject });
      this.ask();
    });
    return this.promise;
  }

  /** The parameters are known (the first time only: later ones change nothing); the logins go on. */
  learn(values: ReadonlyMap<string, string>): boolean {
    if (this.cache !== undefined) return false;
    this.cache = values;
    this.settle();
    return true;
  }

  /** Logins waiting get the parameters, or `error` when none could be learned. */
  settle(error?: unknown): void {
    const w = this.waiters;
    if (w.length === 0) return;
    this.waiters = [];
    this.promise = undefined;
    for (const x of w) {
      if (this.cache !== undefined) x.resolve(this.cache);
      else x.reject(error);
    }
  }
}
