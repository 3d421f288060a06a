// A short Node.js program inside one of the path's namespaces (through `ip netns exec`), or in
// the host's own namespace when `ns` is null (the path's server side may be the host): it prints
// a JSON line {"ready":true,...} when set up and a JSON line {"result":...} when done, on its own
// or on SIGTERM. Its source is plain JavaScript for `node -e`, so the bundled bench can run it too.
import { jsonLine, startWorkerProcess } from '../process/worker-process.js';

export interface NamespacedNode {
  readonly pid: number;
  /** The ready line's fields. */
  readonly ready: Readonly<Record<string, unknown>>;
  /** The result line's `result`; rejects if the program's output ends without one. */
  readonly result: Promise<unknown>;
  /** SIGTERM (the program reports and exits; SIGKILL after 5 s); resolves when it has exited. */
  stop(): Promise<void>;
}

export async function startNodeInNamespace(ns: string | null, name: string, source: string, args: readonly (string | number)[]): Promise<NamespacedNode> {
  let resolveResult: (value: unknown) => void = () => undefined;
  let rejectResult: (error: Error) => void = () => undefined;
  const result = new Promise<unknown>((resolve, reject) => {
    resolveResult = resolve;
    rejectResult = reject;
  });
  // A caller that only stops the program and never asks for its result must not see an unhandled rejection.
  result.catch(() => undefined);
  const worker = await startWorkerProcess<Record<string, unknown>>({
    name,
    ...(ns === null ? {} : { command: 'ip' }),
    args: [...(ns === null ? [] : ['netns', 'exec', ns, process.execPath]), '-e', source, ...args.map(String)],
    startTimeoutMs: 10_000,
    ready: (line) => {
      const o = jsonLine(line);
      return o !== null && o.ready === true ? o : null;
    },
    onLine: (line) => {
      const o = jsonLine(line);
      if (o !== null && 'result' in o) resolveResult(o.result);
    },
  });
  void worker.outputEnded.then(() => rejectResult(new Error(`${name} ended without a result`)));
  return { pid: worker.pid, ready: worker.ready, result, stop: () => worker.stop() };
}
