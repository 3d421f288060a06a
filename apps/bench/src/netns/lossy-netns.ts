// Real packet loss for TCP (and UDP) without touching the host's own interfaces: a network
// namespace joined to the host by a veth pair, with iptables `statistic` rules inside the
// namespace dropping a random share of the packets to and from chosen ports. Needs root, the
// `ip` tool and iptables with the statistic match; `createLossyNetns` throws with the reason
// otherwise so the caller can skip and say why. The namespace (and with it the veth pair and
// every rule) is deleted by close(), and at process exit if close() was never reached.
//
// netem would add the delay in the kernel too, but this machine's kernel has no sch_netem
// ("Specified qdisc kind is unknown"), so the delay stays in the WAN emulator (user space).
import { execFileSync } from 'node:child_process';

export interface LossyNetns {
  readonly name: string;
  /** The host's end of the veth pair (reachable from inside the namespace). */
  readonly hostIp: string;
  /** The namespace's end (where its processes listen). */
  readonly nsIp: string;
  /** How loss is produced, for the report. */
  readonly method: string;
  /** Drops `lossRate` of the packets arriving at and leaving from `port` (tcp and udp) inside the namespace. */
  dropOnPort(port: number): void;
  /** Packets dropped so far by the rules (iptables counters), per direction. */
  dropped(): { up: number; down: number };
  close(): void;
}

const run = (bin: string, args: readonly string[]): string => execFileSync(bin, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

function errorText(error: unknown): string {
  if (error instanceof Error && 'stderr' in error) {
    const stderr = String((error as Error & { stderr: unknown }).stderr ?? '').trim();
    if (stderr !== '') return stderr;
  }
  return error instanceof Error ? error.message : String(error);
}

let sequence = 0;
const open = new Set<string>();
let exitHook = false;

function deleteNetns(name: string): void {
  try {
    run('ip', ['netns', 'del', name]);
  } catch {
    // already gone
  }
  open.delete(name);
}

/** Why the lossy namespace cannot be built here, or null when it can (cheap checks only). */
export function netnsUnavailableReason(): string | null {
  if (process.platform !== 'linux') return 'network namespaces need Linux';
  if (typeof process.getuid === 'function' && process.getuid() !== 0) return 'needs root (network namespace + iptables)';
  for (const [bin, args] of [
    ['ip', ['-V']],
    ['iptables', ['--version']],
  ] as const) {
    try {
      run(bin, args);
    } catch {
      return `${bin} is not installed${bin === 'iptables' ? ' (apt-get install iptables)' : ''}`;
    }
  }
  return null;
}

export function createLossyNetns(lossRate: number): LossyNetns {
  const reason = netnsUnavailableReason();
  if (reason !== null) throw new Error(reason);
  sequence += 1;
  const tag = `${process.pid % 100_000}${sequence}`;
  const name = `qpbench-${process.pid}-${sequence}`;
  const hostIf = `qpb${tag}h`.slice(0, 15);
  const nsIf = `qpb${tag}n`.slice(0, 15);
  const subnet = 16 + ((process.pid * 7 + sequence) % 200);
  const hostIp = `10.203.${subnet}.1`;
  const nsIp = `10.203.${subnet}.2`;
  if (!exitHook) {
    exitHook = true;
    process.on('exit', () => {
      for (const n of [...open]) deleteNetns(n);
    });
  }
  try {
    run('ip', ['netns', 'add', name]);
    open.add(name);
    run('ip', ['link', 'add', hostIf, 'type', 'veth', 'peer', 'name', nsIf, 'netns', name]);
    run('ip', ['addr', 'add', `${hostIp}/30`, 'dev', hostIf]);
    run('ip', ['link', 'set', hostIf, 'up']);
    run('ip', ['netns', 'exec', name, 'ip', 'addr', 'add', `${nsIp}/30`, 'dev', nsIf]);
    run('ip', ['netns', 'exec', name, 'ip', 'link', 'set', nsIf, 'up']);
    run('ip', ['netns', 'exec', name, 'ip', 'link', 'set', 'lo', 'up']);
  } catch (error) {
    try {
      run('ip', ['link', 'del', hostIf]);
    } catch {
      // deleted with the namespace, or never created
    }
    deleteNetns(name);
    throw new Error(`could not build the network namespace: ${errorText(error)}`);
  }
  const probability = String(lossRate);
  const ipt = (args: readonly string[]): string => run('ip', ['netns', 'exec', name, 'iptables', ...args]);
  const counters = (chain: 'INPUT' | 'OUTPUT'): number => {
    const out = ipt(['-L', chain, '-n', '-v', '-x']);
    let total = 0;
    for (const line of out.split('\n')) if (line.includes('statistic')) total += Number(line.trim().split(/\s+/)[0]) || 0;
    return total;
  };
  let closed = false;
  return {
    name,
    hostIp,
    nsIp,
    method: `iptables statistic (random ${lossRate * 100}% per direction) in network namespace ${name} on veth ${hostIf}/${nsIf}; delay from the WAN emulator inside the namespace`,
    dropOnPort(port: number): void {
      try {
        for (const proto of ['tcp', 'udp']) {
          ipt(['-A', 'INPUT', '-i', nsIf, '-p', proto, '--dport', String(port), '-m', 'statistic', '--mode', 'random', '--probability', probability, '-j', 'DROP']);
          ipt(['-A', 'OUTPUT', '-o', nsIf, '-p', proto, '--sport', String(port), '-m', 'statistic', '--mode', 'random', '--probability', probability, '-j', 'DROP']);
        }
      } catch (error) {
        throw new Error(`iptables statistic rules failed: ${errorText(error)}`);
      }
    },
    dropped: () => ({ up: counters('INPUT'), down: counters('OUTPUT') }),
    close(): void {
      if (closed) return;
      closed = true;
      try {
        run('ip', ['link', 'del', hostIf]);
      } catch {
        // goes with the namespace
      }
      deleteNetns(name);
    },
  };
}

/** Namespaces that process `pid` created and left behind (it was killed before close()). */
export function leftoverNetns(pid: number): string[] {
  try {
    return run('ip', ['netns', 'list'])
      .split('\n')
      .map((line) => line.split(' ')[0] ?? '')
      .filter((name) => name.startsWith(`qpbench-${pid}-`));
  } catch {
    return [];
  }
}

/** Deletes what leftoverNetns(pid) finds (the veth pairs go with them). */
export function removeLeftoverNetns(pid: number): string[] {
  const names = leftoverNetns(pid);
  for (const name of names) deleteNetns(name);
  return names;
}
