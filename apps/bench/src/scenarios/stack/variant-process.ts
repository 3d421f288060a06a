// One client variant's run (load generator + client library) in a fresh child process, so its CPU
// and RSS columns are that variant's alone: in one long-lived process the second variant would
// inherit the first one's heap. The child rebuilds the variant from the scenario registry by name
// and streams its telemetry rows back over IPC.
import { spawn } from 'node:child_process';
import type { Ramp } from '../../load/schedule.js';
import type { ProgressEvent, ScenarioContext, ScenarioOverrides, VariantRun } from '../types.js';
import { removeLeftoverNetns } from '../../netns/lossy-netns.js';
import { workerCommand } from './child.js';

export interface VariantWorkerConfig {
  scenario: string;
  variant: string;
  ramp: Ramp;
  tickMs: number;
  timeoutMs: number;
  ctx: { pg: ScenarioContext['pg']; quick: boolean; originalExact: boolean; overrides: ScenarioOverrides | null; script: string };
}

export type VariantMessage =
  | { type: 'progress'; event: ProgressEvent }
  | { type: 'log'; line: string }
  | { type: 'result'; run: VariantRun }
  | { type: 'error'; message: string };

export function runVariantInChild(ctx: ScenarioContext, script: string, options: Omit<VariantWorkerConfig, 'ctx'>): Promise<VariantRun> {
  const config: VariantWorkerConfig = {
    ...options,
    ctx: { pg: ctx.pg, quick: ctx.quick, originalExact: ctx.originalExact, overrides: ctx.overrides ?? null, script },
  };
  const { bin, args } = workerCommand(script, 'variant', config, undefined);
  const child = spawn(bin, args, { stdio: ['pipe', 'inherit', 'pipe', 'ipc'] });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  // Open (up to 2,000 sessions over the WAN) + ramp + drain bounded by the timeout, plus margin.
  const limitMs = options.ramp.durationMs + options.timeoutMs + 180_000;
  return new Promise<VariantRun>((resolve, reject) => {
    let result: VariantRun | null = null;
    let failure: string | null = null;
    const timer = setTimeout(() => {
      failure = `${options.scenario}/${options.variant}: no result within ${limitMs} ms`;
      child.kill('SIGKILL');
    }, limitMs);
    child.on('message', (message: VariantMessage) => {
      switch (message.type) {
        case 'progress':
          ctx.onProgress(message.event);
          break;
        case 'log':
          ctx.log(message.line);
          break;
        case 'result':
          result = message.run;
          break;
        case 'error':
          failure = message.message;
          break;
        default: {
          const never: never = message;
          failure = `unknown message ${JSON.stringify(never)}`;
        }
      }
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      // A worker killed mid-run cannot delete the network namespace it made: do it here.
      if (child.pid !== undefined && process.platform === 'linux') {
        const left = removeLeftoverNetns(child.pid);
        if (left.length > 0) ctx.log(`removed network namespace(s) left by ${options.scenario}/${options.variant}: ${left.join(', ')}`);
      }
      if (result !== null) resolve(result);
      else reject(new Error(failure ?? `${options.scenario}/${options.variant}: worker exited (${code ?? signal}) without a result: ${stderr.trim()}`));
    });
  });
}
