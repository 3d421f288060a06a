// The differences the differential test allows, each documented in docs/compatibility.md.
//
// Always allowed (the tokens leave them out, see wire-session.ts):
// - BackendKeyData values: the pooler hands out its own process id and secret key (a cancel goes
//   to the pooler, which forwards it to whichever server process runs the client's query).
// - The process id in a NotificationResponse: the notifying server process, which through the
//   pooler is not the id of any BackendKeyData the client has seen.
// - The order of the ParameterStatus messages of the startup (compared as a sorted set).
//
// Known differences: a script whose transcript through the pooler is not the direct one, with
// the reason. The test fails when a listed difference no longer shows (remove it then), and for
// every difference that is not listed.
import type { PoolMode } from './scripts.js';

export interface KnownDifference {
  readonly script: string;
  readonly mode: PoolMode;
  /** What the client sees instead, and why (as in docs/compatibility.md). */
  readonly note: string;
}

const STARTUP_RESET = 'session state: RESET and DISCARD ALL of a parameter set in the StartupMessage';
const STARTUP_RESET_NOTE =
  'RESET (RESET ALL, SET ... TO DEFAULT, DISCARD ALL) of a parameter the client set in its StartupMessage returns to the server\'s ' +
  'default instead of the startup value: the pooler applies startup values with set_config on a backend it logged in ' +
  'itself, so they are session values there, not connection defaults (a fix needs backends logged in with the ' +
  'client\'s parameters, or the pooler answering RESET itself)';

export const knownDifferences: readonly KnownDifference[] = [
  { script: STARTUP_RESET, mode: 'session', note: STARTUP_RESET_NOTE },
  { script: STARTUP_RESET, mode: 'transaction', note: STARTUP_RESET_NOTE },
];

export function knownDifference(script: string, mode: PoolMode): KnownDifference | undefined {
  return knownDifferences.find((d) => d.script === script && d.mode === mode);
}
