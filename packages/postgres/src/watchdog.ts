// A tiny sidecar that ends Postgres if the process that started it dies without stopping it
// (a crashed or SIGKILLed test runner). It polls the owner's pid; Postgres has no "exit with
// parent" option, so without this an interrupted run would leave a postmaster behind.
import { spawn } from 'node:child_process';

const WATCHDOG_SOURCE = `
const [owner, postmaster, dir] = process.argv.slice(1).map((v, i) => (i < 2 ? Number(v) : v));
const alive = (pid) => { try { process.kill(pid, 0); return true; } catch (e) { return e.code === 'EPERM'; } };
const timer = setInterval(() => {
  if (!alive(postmaster)) process.exit(0);
  if (alive(owner)) return;
  clearInterval(timer);
  try { process.kill(postmaster, 'SIGINT'); } catch {}
  const deadline = Date.now() + 5000;
  const wait = setInterval(() => {
    if (alive(postmaster) && Date.now() < deadline) return;
    clearInterval(wait);
    try { process.kill(postmaster, 'SIGKILL'); } catch {}
    if (dir) { try { require('node:fs').rmSync(dir, { recursive: true, force: true }); } catch {} }
    process.exit(0);
  }, 100);
}, 500);
`;

/** Starts the watchdog; returns a function that stops it (when the owner stops Postgres itself). */
export function startWatchdog(postmasterPid: number, removeDirOnOrphan: string | null): () => void {
  const child = spawn(
    process.execPath,
    ['-e', WATCHDOG_SOURCE, String(process.pid), String(postmasterPid), removeDirOnOrphan ?? ''],
    { detached: true, stdio: 'ignore' },
  );
  child.unref();
  return () => {
    try {
      child.kill('SIGKILL');
    } catch {
      // already gone
    }
  };
}
