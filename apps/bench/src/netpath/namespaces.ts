// Named network namespaces of the packet path (`ip netns`): running commands in them, their sysctls, and finding leftovers.
// Names carry the owner's pid (qpwc-<pid>-<n>, qpws-<pid>-<n>), so a later run tells a dead process's from one in use.
import { execFileSync } from 'node:child_process';
import { orNull, parseStatState, readProcText } from '../telemetry/proc.js';

export const CLIENT_NS_PREFIX = 'qpwc';
export const SERVER_NS_PREFIX = 'qpws';
const PATH_NS_NAME = /^qpw[cs]-(\d+)-(\d+)$/;

export function run(bin: string, args: readonly string[], input?: string): string {
  return execFileSync(bin, args, { encoding: 'utf8', stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'], input });
}

/** The command's stderr when it has one (what `ip` says), else the error's message. */
export function errorText(error: unknown): string {
  if (error instanceof Error && 'stderr' in error) {
    const stderr = String((error as Error & { stderr: unknown }).stderr ?? '').trim();
    if (stderr !== '') return stderr;
  }
  return error instanceof Error ? error.message : String(error);
}

/** The packet path's namespaces that exist now; with `ownerPid`, only those of that process. */
export function pathNamespaces(ownerPid?: number): string[] {
  const names = orNull(() => run('ip', ['netns', 'list']))?.split('\n').map((line) => line.split(' ')[0] ?? '') ?? [];
  return names.filter((name) => {
    const match = PATH_NS_NAME.exec(name);
    return match !== null && (ownerPid === undefined || Number(match[1]) === ownerPid);
  });
}

/** Deletes a namespace unless it is gone already. */
export const deleteNamespace = (name: string): void => void orNull(() => run('ip', ['netns', 'del', name]));

/** True while `pid` runs; a zombie (exited, not yet reaped: it holds no fds any more) counts as gone. */
export function processAlive(pid: number): boolean {
  const stat = readProcText(`/proc/${pid}/stat`);
  const state = stat === null ? null : parseStatState(stat);
  return state !== null && state !== 'Z';
}

/** Deletes the path namespaces whose owner process is dead (a run killed before its watchdog acted). */
export function removeStaleNamespaces(): void {
  for (const name of pathNamespaces()) if (!processAlive(Number(PATH_NS_NAME.exec(name)?.[1]))) deleteNamespace(name);
}

// Sets sysctls in `ns` (keys as in /proc/sys) from inside it (/proc/sys/net is the reader's) and returns them as read back.
export function setSysctls(ns: string, values: Readonly<Record<string, string>>): Record<string, string> {
  const script = 'for kv; do k=${kv%%=*}; printf "%s\\n" "${kv#*=}" > "/proc/sys/$k" || exit 1; printf "%s=%s\\n" "$k" "$(cat "/proc/sys/$k")"; done';
  const pairs = Object.entries(values).map(([key, value]) => `${key}=${value}`);
  const out = run('ip', ['netns', 'exec', ns, 'sh', '-c', script, 'sh', ...pairs]);
  const read: Record<string, string> = {};
  for (const line of out.split('\n')) {
    const at = line.indexOf('=');
    if (at > 0) read[line.slice(0, at)] = line.slice(at + 1).replace(/\s+/g, ' ');
  }
  return read;
}
