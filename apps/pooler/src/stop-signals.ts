// What a stop signal (SIGTERM, SIGINT) means, given when the first one came. Ctrl-C under a script
// runner (pnpm, npm) reaches the daemon twice within milliseconds: once from the terminal (the whole
// foreground process group) and once forwarded by the runner. So the first signal drains, a repeat
// within the window is that same Ctrl-C and is ignored, and only a signal after the window means
// "stop at once". No I/O and no clock of its own: the caller gives the time of each signal.

/** A repeated stop signal this soon after the first is the same Ctrl-C, forwarded. */
export const SECOND_SIGNAL_AFTER_MS = 300;

export type StopDecision = 'drain' | 'stopNow' | 'ignore';

/** One daemon's stop signals: call the result with each signal's time (ms, any monotonic origin). */
export function stopSignals(windowMs: number = SECOND_SIGNAL_AFTER_MS): (nowMs: number) => StopDecision {
  let firstAt: number | null = null;
  return (nowMs) => {
    if (firstAt === null) {
      firstAt = nowMs;
      return 'drain';
    }
    return nowMs - firstAt >= windowMs ? 'stopNow' : 'ignore';
  };
}
