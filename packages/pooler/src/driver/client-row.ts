// A client session as SHOW CLIENTS lists it (the core adds its worker).
import type { SessionInfo } from '@quicpool/transport';
import type { ClientRow, ClientState } from '../core/view.js';
import type { ClientSession } from '../session/client-session.js';

export function clientRow(session: ClientSession, info: SessionInfo, connectedAt: number): Omit<ClientRow, 'worker'> {
  return {
    info,
    connectedAt,
    database: session.database,
    user: session.user,
    state: stateOf(session),
    pinned: session.pinnedReason,
    preparedStatements: session.preparedStatementCount,
  };
}

function stateOf(session: ClientSession): ClientState {
  switch (session.phase) {
    case 'startup':
    case 'authenticating':
    case 'connecting':
      return 'login';
    case 'waiting':
      return 'waiting';
    case 'attached':
      return 'active';
    case 'idle':
    case 'closed':
      return 'idle';
    default: {
      const never: never = session.phase;
      throw new Error(`unhandled phase ${String(never)}`);
    }
  }
}
