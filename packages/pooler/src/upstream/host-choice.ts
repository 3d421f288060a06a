// Which of upstream's hosts one pool logs in to (libpq's host=a,b,c with target_session_attrs):
// the host it used last first, then the others in the configured order; the first whose server
// qualifies is used (for prefer-standby: the first standby, else the first server at all). A
// connection that reached a server of the wrong kind is closed at once. When every host that
// answered is of the wrong kind (a failover under way: the primary gone, the standby not yet
// promoted), the error passes (NO_TARGET), so the pool waits and asks again.
import type { BackendConnection } from '../backend/connect.js';
import { describeServer, sameServer } from '../backend/dial.js';
import type { ServerAddress } from '../backend/dial.js';
import { BackendLoginError } from '../backend/login.js';
import { describeRole, qualifies } from '../backend/server-role.js';
import type { TargetSessionAttrs } from '../backend/server-role.js';
import { NO_TARGET } from './login-failure.js';

export class HostChoice {
  /** Index into hosts() of the host the pool uses (or will try first). */
  private current = 0;
  /** False when prefer-standby found no standby on its last search and took another server. */
  private standbyPreferred = true;

  constructor(
    private readonly hosts: () => readonly ServerAddress[],
    readonly attrs: () => TargetSessionAttrs,
    private readonly dial: (server: ServerAddress) => Promise<BackendConnection>,
    /** The pool moved to another host (for the log and the metrics). */
    private readonly moved: (from: ServerAddress, to: ServerAddress) => void,
  ) {}

  /** The host the pool uses now. */
  get host(): ServerAddress {
    const hosts = this.hosts();
    return hosts[this.current % hosts.length]!;
  }

  /** Does a connection to `server`, whose role is now `c.role`, still suit the pool? */
  suits(c: Pick<BackendConnection, 'role'>): boolean {
    return qualifies(this.attrs(), c.role, this.attrs() === 'prefer-standby' && !this.standbyPreferred ? 'fallback' : 'preferred');
  }

  /** `server` no longer suits the pool: the next login starts with the host after it. */
  leave(server: ServerAddress): void {
    const hosts = this.hosts();
    const i = hosts.findIndex((h) => sameServer(h, server));
    if (i >= 0 && i === this.current % hosts.length) this.current = (i + 1) % hosts.length;
    this.standbyPreferred = true;
  }

  /** Logs in to the first host that qualifies; throws the last error when none does. */
  async connect(): Promise<BackendConnection> {
    const hosts = this.hosts();
    const attrs = this.attrs();
    const start = this.current % hosts.length;
    const order = hosts.map((_, k) => (start + k) % hosts.length);
    const wrongKind: string[] = [];
    /** Hosts whose dial failed: prefer-standby's fallback pass does not dial them again. */
    const unreachable = new Set<number>();
    let lastError: unknown;
    for (const pass of attrs === 'prefer-standby' ? (['preferred', 'fallback'] as const) : (['preferred'] as const)) {
      for (const i of order) {
        if (unreachable.has(i)) continue;
        const server = hosts[i]!;
        let c: BackendConnection;
        try {
          c = await this.dial(server);
        } catch (e) {
          lastError = e;
          unreachable.add(i);
          continue;
        }
        if (qualifies(attrs, c.role, pass)) {
          const from = this.host;
          this.current = i;
          this.standbyPreferred = pass === 'preferred';
          if (i !== start) this.moved(from, server);
          return c;
        }
        c.stream.destroy();
        if (pass === 'preferred') wrongKind.push(`${describeServer(server)} is ${describeRole(c.role)}`);
      }
    }
    if (wrongKind.length === 0) throw lastError;
    throw new BackendLoginError(`no server is ${attrs} (target_session_attrs): ${wrongKind.join('; ')}`, undefined, NO_TARGET);
  }
}
