// `quicpool-bench soak` (`pnpm bench:soak`): steady mixed load over TCP and QUIC through the WAN
// relay with a fault every few seconds; exit 1 when memory or counts grew without bound, an answer
// was wrong, or errors happened outside fault windows (see soak/run-soak.ts).
import { defineCommand } from '../command-line.js';
import { SOAK_OPTIONS, soakOptionsOf } from '../soak/options.js';
import { runSoak } from '../soak/run-soak.js';

export const command = defineCommand({
  options: SOAK_OPTIONS,
  run: ({ values }) => runSoak(soakOptionsOf(values)),
});
