// `quicpool-bench soak` (`pnpm bench:soak`, soak/run-soak.ts): exit 1 when the soak finds growth, wrong answers or stray errors.
import { defineCommand } from '../command-line.js';
import { SOAK_OPTIONS, soakOptionsOf } from '../soak/options.js';
import { runSoak } from '../soak/run-soak.js';

export const command = defineCommand({
  options: SOAK_OPTIONS,
  run: ({ values }) => runSoak(soakOptionsOf(values)),
});
