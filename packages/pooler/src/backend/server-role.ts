// What kind of server a login reached, and whether a pool may use it: libpq's
// target_session_attrs, with libpq's names and meanings. PostgreSQL 14 and later report both
// facts as ParameterStatus (`in_hot_standby`, `default_transaction_read_only`), also when they
// change (a promoted standby tells its sessions at their next ReadyForQuery); older servers are
// asked once per login (backend/login.ts).

export type TargetSessionAttrs = 'any' | 'read-write' | 'read-only' | 'primary' | 'standby' | 'prefer-standby';

export const TARGET_SESSION_ATTRS: readonly TargetSessionAttrs[] = ['read-write', 'any', 'read-only', 'primary', 'standby', 'prefer-standby'];

export interface ServerRole {
  /** In hot standby: a streaming or archive-recovery replica (`pg_is_in_recovery()`). */
  readonly standby: boolean;
  /** New transactions are read-only: a standby, or `default_transaction_read_only = on`. */
  readonly readOnly: boolean;
}

/** The role a PostgreSQL 14+ server reported, or undefined when it reported no such parameters. */
export function roleFromParameters(parameters: ReadonlyMap<string, string>): ServerRole | undefined {
  const standby = parameters.get('in_hot_standby');
  const readOnly = parameters.get('default_transaction_read_only');
  if (standby === undefined || readOnly === undefined) return undefined;
  return { standby: standby === 'on', readOnly: standby === 'on' || readOnly === 'on' };
}

/** The ParameterStatus names that can change a server's role. */
export const ROLE_PARAMETERS: ReadonlySet<string> = new Set(['in_hot_standby', 'default_transaction_read_only']);

/**
 * May a pool with `attrs` use a server of `role`? `prefer-standby` asks twice: first for a standby
 * ('preferred'), then, when no host is one, for any server ('fallback').
 */
export function qualifies(attrs: TargetSessionAttrs, role: ServerRole | undefined, pass: 'preferred' | 'fallback' = 'preferred'): boolean {
  if (attrs === 'any') return true;
  // A role is always known for the others: the login asks an older server for it.
  if (role === undefined) return false;
  switch (attrs) {
    case 'read-write':
      return !role.readOnly;
    case 'read-only':
      return role.readOnly;
    case 'primary':
      return !role.standby;
    case 'standby':
      return role.standby;
    case 'prefer-standby':
      return pass === 'fallback' || role.standby;
    default: {
      const never: never = attrs;
      throw new Error(`unhandled target_session_attrs ${String(never)}`);
    }
  }
}

export function describeRole(role: ServerRole | undefined): string {
  if (role === undefined) return 'of unknown role';
  if (role.standby) return 'a standby';
  return role.readOnly ? 'a read-only primary' : 'a read-write primary';
}
