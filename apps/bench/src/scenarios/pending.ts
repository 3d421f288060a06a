// Scenarios that need parts being built elsewhere (the pooler daemon, the QUIC client). They report
// what they need instead of running: a benchmark must never print numbers it did not measure.
import type { Scenario, ScenarioResult } from './types.js';

function pending(name: string, title: string, needs: string): Scenario {
  return {
    name,
    title,
    run: async (): Promise<ScenarioResult> => ({ kind: 'unavailable', name, title, needs }),
  };
}

const POOLER_AND_CLIENT = 'the quicpool pooler (apps/pooler) and the QUIC client (@quicpool/client) as client variants';

export const pendingScenarios: readonly Scenario[] = [
  pending('original', 'Original: TCP 500 sessions + TLS vs QUIC 50x40', POOLER_AND_CLIENT),
  pending('sockets', 'Sockets: TCP 50 connections vs QUIC 50x40', POOLER_AND_CLIENT),
  pending('fair', 'Fair: 2,000 TCP sessions vs 2,000 QUIC streams', POOLER_AND_CLIENT),
  pending('loss', 'Loss: fair pair with 1% loss per direction', `${POOLER_AND_CLIENT}, plus real TCP loss (network namespace + iptables, root)`),
  pending('lan', 'LAN: direct vs quicpool TCP vs quicpool QUIC vs PgBouncer', 'the quicpool pooler (TCP and QUIC listeners) and the QUIC client; pgbench and PgBouncer are optional peers'),
];
