// quiche, through @matrixai/quic's Node-API binding, loaded when the first QUIC endpoint of this
// thread is made, not when the transport is imported. A process whose worker threads run QUIC must
// not load the binding in its main thread too: with it loaded in the main thread and in workers,
// the binding's global handles go wrong (V8 aborts with "Check failed: object_ !=
// kGlobalHandleZapValue" under connection churn, seen with @matrixai/quic 2.0.9 on Node 20),
// while any number of worker threads alone run it fine. So importing @quicpool/transport (as the
// daemon's main thread does) costs nothing and loads nothing native.
import type * as Native from '@matrixai/quic/native/index.js';

type Quiche = typeof Native.quiche;

/** The binding, once `loadQuiche()` has resolved (every QUIC endpoint awaits it first). */
export let quiche: Quiche = undefined as unknown as Quiche;

let loading: Promise<void> | null = null;

export function loadQuiche(): Promise<void> {
  loading ??= import('@matrixai/quic/native/index.js').then((m) => {
    quiche = m.quiche;
  });
  return loading;
}

/** Whether this thread has loaded the binding (tests check the daemon's main thread never does). */
export function quicheLoaded(): boolean {
  return quiche !== undefined;
}
