// Child processes of this program (`quicpool-bench <flag>`): each loads its benchmark's module too, so memory stays as it was.
import { UsageError } from '../command-line.js';
import type { ChildConfig } from '../scenarios/variant-child.js';
import type { ForwarderTarget } from '../lan/node-forwarder.js';
import type { IdleWorkerConfig } from '../client/idle-sessions.js';
import { BENCH_WORKER_FLAG, IDLE_FLAG, NODE_FORWARDER_FLAG, PINGPONG_FLAG, QUIC_SERVER_FLAG } from './worker-flags.js';

/** Runs a worker; resolves to its exit code, or null while it serves its parent. */
type Worker = (args: readonly string[]) => Promise<number | null>;

const jsonArg = <T>(value: string | undefined): T => JSON.parse(value ?? '{}') as T;

export const WORKERS: ReadonlyMap<string, Worker> = new Map<string, Worker>([
  [BENCH_WORKER_FLAG, async ([kind, config]) => {
    if (kind !== 'variant') throw new UsageError(`unknown worker ${String(kind)}`);
    const [{ runVariantChild }] = await Promise.all([import('../scenarios/variant-child.js'), import('./bench.js')]);
    await runVariantChild(jsonArg<ChildConfig>(config));
    return 0;
  }],
  [NODE_FORWARDER_FLAG, async ([target]) => {
    const [{ runNodeForwarder }] = await Promise.all([import('../lan/node-forwarder.js'), import('./lan.js')]);
    await runNodeForwarder(jsonArg<ForwarderTarget>(target));
    return null;
  }],
  [IDLE_FLAG, async ([config]) => {
    const [{ runIdleWorker }] = await Promise.all([import('../client/idle-sessions.js'), import('./client.js')]);
    await runIdleWorker(jsonArg<IdleWorkerConfig>(config));
    return 0;
  }],
  [PINGPONG_FLAG, async () => {
    const [{ runPingPongWorker }, { tcpRoles }, { matrixaiRoles }] = await Promise.all([
      import('../transport/pingpong-worker.js'), import('../transport/tcp-pingpong.js'), import('../transport/matrixai-pingpong.js'), import('./transport.js'),
    ]);
    runPingPongWorker({ ...tcpRoles, ...matrixaiRoles });
    return null;
  }],
  [QUIC_SERVER_FLAG, async () => {
    const [{ runPingPongWorker }, { quicRoles }] = await Promise.all([
      import('../transport/pingpong-worker.js'), import('../transport/quic-pingpong.js'), import('./transport.js'),
    ]);
    runPingPongWorker(quicRoles);
    return null;
  }],
]);
