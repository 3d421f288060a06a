// The workers of one daemon tell each other a few things, over a BroadcastChannel named after the
// daemon: a pool's server budget is wanted (give back what you can spare) or was freed (try
// again), the server's parameters of a pool (so a worker logs clients in without a server
// connection of its own), and a CancelRequest that landed on the wrong worker goes to the worker
// its key names.
// Messages are small and rare (never one per transaction). The channel never delivers a message
// back to its sender (Budgets hands a worker its own news).
import { BroadcastChannel } from 'node:worker_threads';

/** What one worker tells the others. */
export type PeerMessage =
  /** Worker `from` has clients waiting for a server connection of pool `key` that the budget refuses. */
  | { readonly type: 'want'; readonly from: number; readonly key: string }
  /** The daemon-wide limit refused worker `from`: idle server connections of any pool may go. */
  | { readonly type: 'wantAny'; readonly from: number }
  /** A server connection of `key` was closed: workers that want one may take it now. */
  | { readonly type: 'freed'; readonly key: string }
  /** Worker `from` logs clients in to pool `key` and has no server connection to learn the server's parameters from. */
  | { readonly type: 'parametersWanted'; readonly from: number; readonly key: string }
  /** The parameters (ParameterStatus) the server reports to pool `key`'s connections. */
  | { readonly type: 'parameters'; readonly key: string; readonly values: readonly (readonly [string, string])[] }
  /** A CancelRequest for a session of worker `to`. */
  | { readonly type: 'cancel'; readonly to: number; readonly processId: number; readonly secretKey: Uint8Array };

export interface Peers {
  post(m: PeerMessage): void;
  close(): void;
}

/** Messages from the other workers of group `groupId` reach `onMessage`. */
export function joinPeers(groupId: string, onMessage: (m: PeerMessage) => void): Peers {
  const channel = new BroadcastChannel(`quicpool:${groupId}`);
  channel.onmessage = (e: unknown) => onMessage((e as { data: PeerMessage }).data);
  // The channel must not keep a worker's event loop alive on its own.
  (channel as unknown as { unref?: () => void }).unref?.();
  let open = true;
  return {
    post(m: PeerMessage): void {
      if (open) channel.postMessage(m);
    },
    close(): void {
      if (!open) return;
      open = false;
      channel.close();
    },
  };
}
