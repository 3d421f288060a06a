// A connection's streams, most recently active first: the order in which `service` asks quiche
// which of them has data. quiche offers no cheap "which stream is readable" call (its readable()
// iterator is a napi generator, several µs a pass), so a flush asks stream by stream, each
// question a napi call into a hash-map lookup; at a far client's steady load one datagram brings
// one request on one of 40 mostly idle streams. Asked in the order they were last read, newest
// first, that stream is usually among the first few: a client whose pool hands out its most
// recently freed session (pg.Pool and the bench's own do) writes its next request on the stream
// answered last, and that request's answer is then the newest read on the client's side too. The
// caller stops asking once quiche reports nothing readable any more.
//
// An intrusive doubly linked list: moving a stream to the front is O(1), and a stream removed
// while a caller walks the list keeps its link to the next older one, so the walk goes on.

export interface RecentNode<T> {
  /** The next more recently active stream (toward the front), null at the front. */
  newer: T | null;
  /** The next less recently active stream, null at the back. */
  older: T | null;
  /** Whether the node is in a list now. */
  listed: boolean;
}

export class RecentStreams<T extends RecentNode<T>> {
  private front: T | null = null;

  /** The most recently active stream, null when there is none. */
  get first(): T | null {
    return this.front;
  }

  /** The stream after `node`, walking from newest to oldest (also when `node` was removed meanwhile). */
  next(node: T): T | null {
    return node.older;
  }

  /** Adds a new stream at the front. */
  add(node: T): void {
    node.listed = true;
    node.newer = null;
    node.older = this.front;
    if (this.front !== null) this.front.newer = node;
    this.front = node;
  }

  /** Moves a listed stream to the front (one removed meanwhile stays out). */
  touch(node: T): void {
    if (!node.listed || this.front === node) return;
    this.unlink(node);
    this.add(node);
  }

  remove(node: T): void {
    if (!node.listed) return;
    this.unlink(node);
    node.listed = false;
    // node.older stays: a walk standing on this node continues to what followed it.
  }

  clear(): void {
    for (let n = this.front; n !== null; n = n.older) n.listed = false;
    this.front = null;
  }

  private unlink(node: T): void {
    const { newer, older } = node;
    if (newer !== null) newer.older = older;
    else this.front = older;
    if (older !== null) older.newer = newer;
    node.newer = null;
  }
}
