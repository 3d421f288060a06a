// Why reading a client is paused: bits, several may hold at once (see SessionDriver.pause).

export const PAUSED_WAITING = 1;
export const PAUSED_BACKEND_FULL = 2;
export const PAUSED_TLS = 4;
/** The StartupMessage names a user auth_query must look up first. */
export const PAUSED_LOOKUP = 8;
/** Reading stops at once (not only new chunks) while one of these holds. */
export const HOLD_MESSAGES = PAUSED_TLS | PAUSED_LOOKUP;

/**
 * A client waiting for a backend is paused only once this much of its input is queued: a client
 * that sends one request and waits (the common case) costs no pause/resume per transaction.
 */
export const WAITING_PAUSE_BYTES = 64 * 1024;
