// Events into a session machine one at a time, in order, even when carrying out an action causes
// another event (it waits in the queue, which stays empty nearly always). Malformed client bytes
// can surface late (a queued Parse or Bind is only decoded when a backend arrives, inside a pool
// or socket callback): the first such throw becomes a 'protocolError' event that ends the session
// with 08P01 instead of escaping into that callback, where it would crash the pooler; a second
// throw is a bug and escapes.
import type { SessionAction, SessionEvent } from '../session/types.js';

export class EventQueue {
  private readonly queue: SessionEvent[] = [];
  private dispatching = false;
  private broken = false;

  constructor(
    private readonly handle: (e: SessionEvent) => readonly SessionAction[],
    private readonly perform: (a: SessionAction) => void,
  ) {}

  /** An event is being handled now (what arrives meanwhile queues behind it). */
  get busy(): boolean {
    return this.dispatching;
  }

  dispatch(e: SessionEvent): void {
    if (this.dispatching) {
      this.queue.push(e);
      return;
    }
    this.dispatching = true;
    let first: SessionEvent | undefined = e;
    if (this.queue.length > 0) {
      // Left over by a throw: those events still go first.
      this.queue.push(e);
      first = this.queue.shift();
    }
    try {
      // The event itself first, then whatever its actions queued.
      for (let ev = first; ev !== undefined; ev = this.queue.length > 0 ? this.queue.shift() : undefined) {
        for (const a of this.handle(ev)) this.perform(a);
      }
    } catch (err) {
      this.queue.length = 0;
      this.dispatching = false;
      if (this.broken) throw err;
      this.broken = true;
      this.dispatch({ type: 'protocolError', message: err instanceof Error ? err.message : String(err) });
    } finally {
      this.dispatching = false;
    }
  }
}
