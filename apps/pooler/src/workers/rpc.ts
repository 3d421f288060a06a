// Calls between the daemon's main thread and its worker threads, over a worker's message port:
// each side serves the operations of its interface and calls those of the other's. A call
// resolves with the other side's return value (structured-cloned) or rejects with its error's
// message; calls still open when the port goes away (the worker died) reject at once.

/** The port of a Worker (main side) or `parentPort` (worker side). */
export interface RpcPort {
  postMessage(message: unknown): void;
  on(event: 'message', listener: (message: unknown) => void): unknown;
}

type Fn = (...args: never[]) => unknown;
/** The operations one side serves, each returning a value or a promise of one. */
export type Handlers<T> = { [K in keyof T]: T[K] extends Fn ? (...args: Parameters<T[K]>) => ReturnType<T[K]> | Promise<Awaited<ReturnType<T[K]>>> : never };

type Message =
  | { readonly rpc: 'call'; readonly id: number; readonly op: string; readonly args: readonly unknown[] }
  | { readonly rpc: 'reply'; readonly id: number; readonly ok: true; readonly value: unknown }
  | { readonly rpc: 'reply'; readonly id: number; readonly ok: false; readonly error: string };

const isMessage = (m: unknown): m is Message => typeof m === 'object' && m !== null && 'rpc' in m;

export class Rpc<Remote, Local> {
  private nextId = 1;
  private readonly open = new Map<number, { resolve(v: unknown): void; reject(e: Error): void }>();
  private closed: Error | null = null;

  constructor(
    private readonly port: RpcPort,
    private readonly handlers: Handlers<Local>,
  ) {
    port.on('message', (m) => {
      if (isMessage(m)) this.receive(m);
    });
  }

  call<K extends keyof Remote & string>(op: K, ...args: Remote[K] extends Fn ? Parameters<Remote[K]> : never): Promise<Remote[K] extends Fn ? Awaited<ReturnType<Remote[K]>> : never> {
    if (this.closed !== null) return Promise.reject(this.closed);
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.open.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.port.postMessage({ rpc: 'call', id, op, args } satisfies Message);
    });
  }

  /** The other side is gone: open and later calls reject with `error`. */
  close(error: Error): void {
    this.closed ??= error;
    for (const c of this.open.values()) c.reject(error);
    this.open.clear();
  }

  private receive(m: Message): void {
    if (m.rpc === 'reply') {
      const c = this.open.get(m.id);
      if (c === undefined) return;
      this.open.delete(m.id);
      if (m.ok) c.resolve(m.value);
      else c.reject(new Error(m.error));
      return;
    }
    const handler = (this.handlers as unknown as Record<string, ((...a: unknown[]) => unknown) | undefined>)[m.op];
    const reply = (r: Message): void => {
      if (this.closed === null) this.port.postMessage(r);
    };
    if (handler === undefined) return reply({ rpc: 'reply', id: m.id, ok: false, error: `unknown operation ${m.op}` });
    Promise.resolve()
      .then(() => handler(...m.args))
      .then(
        (value) => reply({ rpc: 'reply', id: m.id, ok: true, value }),
        (e: unknown) => reply({ rpc: 'reply', id: m.id, ok: false, error: e instanceof Error ? e.message : String(e) }),
      );
  }
}
