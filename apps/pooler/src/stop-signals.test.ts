import { describe, expect, it } from 'vitest';
import { SECOND_SIGNAL_AFTER_MS, stopSignals } from './stop-signals.js';

describe('stopSignals', () => {
  it('drains on the first signal, ignores repeats inside the window, stops at once after it', () => {
    const decide = stopSignals();
    expect(decide(1_000)).toBe('drain');
    expect(decide(1_000)).toBe('ignore'); // the same Ctrl-C, forwarded by a script runner
    expect(decide(1_000 + SECOND_SIGNAL_AFTER_MS - 1)).toBe('ignore');
    expect(decide(1_000 + SECOND_SIGNAL_AFTER_MS)).toBe('stopNow');
    expect(decide(1_000 + SECOND_SIGNAL_AFTER_MS + 5_000)).toBe('stopNow');
  });

  it('measures the window from the first signal, not from the last ignored one', () => {
    const decide = stopSignals(100);
    expect(decide(0)).toBe('drain');
    expect(decide(60)).toBe('ignore');
    expect(decide(99)).toBe('ignore');
    expect(decide(100)).toBe('stopNow');
  });

  it('each daemon has its own first signal', () => {
    const a = stopSignals(100);
    const b = stopSignals(100);
    expect(a(0)).toBe('drain');
    expect(b(50)).toBe('drain');
    expect(a(120)).toBe('stopNow');
    expect(b(120)).toBe('ignore');
  });
});
