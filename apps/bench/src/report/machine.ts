// What the numbers were measured on, in every report: a 2-core shared machine's and a 64-core server's do not compare.
import { cpus, loadavg, release, totalmem, type as osType } from 'node:os';

export type MachineDescription = ReturnType<typeof describeMachine>;

export const load1 = (): number => Number((loadavg()[0] ?? 0).toFixed(2));

export function describeMachine() {
  const list = cpus();
  return {
    cpuModel: list[0]?.model.trim() ?? 'unknown',
    cores: list.length,
    memoryBytes: totalmem(),
    node: process.version,
    kernel: `${osType()} ${release()}`,
    platform: `${process.platform}-${process.arch}`,
    /** 1-minute load average when the run started: on a shared machine, a busy neighbour explains noise. */
    loadAverage1m: load1(),
  };
}

export function machineLine(m: MachineDescription): string {
  return `${m.cpuModel}, ${m.cores} cores, ${(m.memoryBytes / 2 ** 30).toFixed(1)} GiB, Node ${m.node}, ${m.kernel}, load average ${m.loadAverage1m} at start`;
}
