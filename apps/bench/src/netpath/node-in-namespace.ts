// A short Node.js program inside one of the path's namespaces (through `ip netns exec`), or in
// the host's own namespace when `ns` is null (the path's server side may be the host): it prints
// a JSON line {"ready":true,...} when set up and a JSON line {"result":...} when done, on its own
// or on SIGTERM. Its source is plain JavaScript for `node -e`, so the bundled bench can run it too.
import { jsonLine, startWorkerProcess } from '../process/worker-process.js';

export type NamespacedNode = Awaited<ReturnType<typeof startNodeInNamespace>>;

export async function startNodeInNamespace(ns: string | null, name: string, source: string, args: readonly (string | number)[]) {
  let result: { readonly value: unknown } | null = null;
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
      if (o !== null && 'result' in o) result ??= { value: o.result };
    },
  });
  const ended = worker.outputEnded.then(() => {
    if (result === null) throw new Error(`${name} ended without a result`);
    return result.value;
  });
  // A caller that only stops the program and never asks for its result must not see an unhandled rejection.
  ended.catch(() => undefined);
  return {
    ready: worker.ready,
    /** The result line's `result` once the program's output has ended; rejects if it ended without one. */
    result: ended,
    /** SIGTERM (the program reports and exits; SIGKILL after 5 s); resolves when it has exited. */
    stop: () => worker.stop(),
  };
}
