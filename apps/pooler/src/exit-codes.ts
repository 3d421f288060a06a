// quicpool's exit codes (documented in docs/config.md and `quicpool --help`).
export const EXIT = {
  /** Stopped cleanly (SIGTERM/SIGINT drain or SHUTDOWN), or a command succeeded. */
  OK: 0,
  /** Runtime failure: startup failed (port in use, PostgreSQL did not start ...). */
  FAILURE: 1,
  /** Invalid command line or configuration (the message names the key). */
  USAGE: 2,
  /** Stopped at once by a second signal: sessions were cut without draining. */
  FORCED: 3,
} as const;
