// A server that reported a new role (PostgreSQL 14+: a standby promoted) and no longer suits the
// pool (target_session_attrs): the next login tries the other hosts first, the move is told, and
// the pool's busy connections there close as they come back. Idle ones close as every pool hears
// of the change (Pool.dropIdleOf).
import type { Backend } from '../backend/backend.js';
import { describeServer, sameServer } from '../backend/dial.js';
import type { HostChoice } from '../upstream/host-choice.js';
import type { BackendLists } from './backend-lists.js';
import type { PoolUpstreamEvent } from './types.js';

/** `b` reported a new role for its server: when that server no longer suits the pool, the pool leaves it. */
export function leaveIfUnsuitable(b: Backend, hosts: HostChoice, lists: BackendLists, tell: (e: PoolUpstreamEvent) => void): void {
  if (hosts.suits(b)) return;
  const server = describeServer(b.server);
  hosts.leave(b.server);
  tell({ type: 'hostChanged', from: server, to: describeServer(hosts.host), why: `${server} is no longer ${hosts.attrs()}` });
  for (const x of [...lists.active, ...lists.resetting]) if (sameServer(x.server, b.server)) x.unsuitable = true;
}
