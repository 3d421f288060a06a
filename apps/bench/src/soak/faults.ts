// Faults injected during a soak, in turn: a backend killed (pg_terminate_backend), a QUIC stream reset under a
// live session, and a whole QUIC connection dropped abruptly (its sessions fail; the client opens a new one).
import type pg from 'pg';
import type { SessionManager } from '@quicpool/client';
import { SOAK_ROLE } from './stack.js';

export type FaultKind = 'backend-kill' | 'stream-reset' | 'connection-drop';

export class FaultInjector {
  readonly injected: Record<FaultKind, number> = { 'backend-kill': 0, 'stream-reset': 0, 'connection-drop': 0 };
  /** Faults that found nothing to hit (no backend, no stream) at their turn. */
  missed = 0;
  private lastAt = -Infinity;
  private turn = 0;

  constructor(
    private readonly monitor: pg.Client,
    private readonly sessions: SessionManager | null,
    /** How long after a fault errors count as caused by it. */
    private readonly windowMs: number,
  ) {}

  recent(): boolean {
    return performance.now() - this.lastAt < this.windowMs;
  }

  get total(): number {
    return this.injected['backend-kill'] + this.injected['stream-reset'] + this.injected['connection-drop'];
  }

  /** Injects the next fault in turn (QUIC faults are skipped without QUIC sessions). */
  async next(): Promise<FaultKind | null> {
    const kinds = Object.keys(this.inject) as FaultKind[];
    const kind = this.sessions === null ? 'backend-kill' : kinds[this.turn++ % kinds.length]!;
    this.lastAt = performance.now();
    const hit = await this.inject[kind]();
    this.lastAt = performance.now();
    if (!hit) {
      this.missed++;
      return null;
    }
    this.injected[kind]++;
    return kind;
  }

  /** The faults, taken in this order; each resolves to whether it found something to hit. */
  private readonly inject: Record<FaultKind, () => Promise<boolean>> = {
    'backend-kill': async () => {
      const r = await this.monitor.query<{ ok: boolean }>(
        `select pg_terminate_backend(pid) as ok from pg_stat_activity where usename = $1 and backend_type = 'client backend' order by random() limit 1`,
        [SOAK_ROLE]);
      return r.rows[0]?.ok === true;
    },
    'stream-reset': async () => {
      for (const c of this.sessions?.connections() ?? []) {
        const streams = [...c.streams.values()];
        const victim = streams[Math.floor(Math.random() * streams.length)];
        if (victim !== undefined) {
          victim.destroy(new Error('soak: stream reset'));
          return true;
        }
      }
      return false;
    },
    'connection-drop': async () => {
      const conns = this.sessions?.connections() ?? [];
      const victim = conns[Math.floor(Math.random() * conns.length)];
      if (victim === undefined) return false;
      await victim.close({ graceful: false, reason: 'soak: connection dropped' });
      return true;
    },
  };
}
