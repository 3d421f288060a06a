// Where the CPU went, in words, for a scenario's report section: per variant, CPU per query of
// each process at the busiest step of the load, what each spends at the low constant rate of the
// probe (its fixed cost), and how busy the whole machine was, so a latency can be read as the
// network's or as a starved CPU's.
import { cpus } from 'node:os';
import type { ProcessName, StepFigures } from '../report/figures.js';
import { busiestStep, variantFigures } from '../report/figures.js';
import { PROCESS_CPU } from '../telemetry/csv.js';
import type { VariantRun } from './types.js';

const f0 = (v: number | null): string => (v === null ? 'n/a' : v.toFixed(0));
const list = (pick: (p: ProcessName) => number | null): string => PROCESS_CPU.map(({ process: p }) => `${p} ${f0(pick(p))}`).join(', ');

function busyText(top: StepFigures, cores: number): string {
  if (top.machineMsPerSec === null) return '';
  const ours = PROCESS_CPU.reduce((t, p) => t + (top.msPerSec[p.process] ?? 0), 0);
  return ` The machine was ${(top.machineMsPerSec / (10 * cores)).toFixed(0)}% busy (${cores} cores; ${f0(top.machineMsPerSec - ours)} ms/s of it outside these four processes).`;
}

export function cpuNotes(runs: readonly VariantRun[]): string[] {
  const cores = cpus().length;
  return runs.flatMap((run) => {
    const f = variantFigures(run);
    const top = busiestStep(f);
    if (top === null) return [];
    const probe = f.steps.find((s) => s.label === 'probe');
    const fixed = probe === undefined ? '' : ` At the probe's ${f0(probe.qps)} q/s, CPU ms per second: ${list((p) => probe.msPerSec[p])} (mostly fixed cost).`;
    const pooler = f.cpuFit.pooler;
    const fit = pooler === null ? '' : ` Straight-line fit over the run: the pooler costs ${f0(pooler.fixedMsPerSec)} ms/s plus ${f0(pooler.usPerQuery)} µs per query.`;
    return [`${run.variant}: at ${f0(top.qps)} q/s (its busiest step) CPU µs per query: ${list((p) => top.usPerQuery[p])}.${busyText(top, cores)}${fixed}${fit}`];
  });
}
