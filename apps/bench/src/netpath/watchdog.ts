// A detached sidecar (its own session: a Ctrl-C to our group spares it) that deletes a path's namespaces and stops its
// forwarder when the process that built the path dies without closing it (README.md, "Cleanup"): it reads EOF on a pipe
// only we hold; over it (a JSON object a line) we tell it the forwarder's pid, and that close() cleaned up itself.
import { spawn } from 'node:child_process';

// Plain JavaScript for `node -e`: it must run from the bundled bench too, where no .ts exists.
const WATCHDOG_SOURCE = `
const { execFileSync } = require('node:child_process');
const { readFileSync, readlinkSync } = require('node:fs');
const names = process.argv.slice(1);
let forwarder = null;
let done = false;
// A zombie (exited, not yet reaped) holds no TUN fd any more: it counts as gone (state letter after the last ')').
const alive = (pid) => { try { const s = readFileSync('/proc/' + pid + '/stat', 'utf8'); return s[s.lastIndexOf(')') + 2] !== 'Z'; } catch { return false; } };
// Only the forwarder we were told about: a recycled pid running something else is left alone.
const isForwarder = () => { try { return forwarder !== null && readlinkSync('/proc/' + forwarder.pid + '/exe') === forwarder.exe; } catch { return false; } };
function cleanUp() {
  if (done) process.exit(0);
  if (isForwarder()) { try { process.kill(forwarder.pid, 'SIGTERM'); } catch {} }
  const deadline = Date.now() + 3000;
  const wait = setInterval(() => {
    if (forwarder !== null && alive(forwarder.pid) && Date.now() < deadline) return;
    clearInterval(wait);
    if (isForwarder()) { try { process.kill(forwarder.pid, 'SIGKILL'); } catch {} }
    for (const name of names) { try { execFileSync('ip', ['netns', 'del', name], { stdio: 'ignore' }); } catch {} }
    process.exit(0);
  }, 50);
}
const lines = require('node:readline').createInterface({ input: process.stdin });
lines.on('line', (line) => {
  let message = {};
  try { message = JSON.parse(line) ?? {}; } catch {}
  if (typeof message.forwarder === 'number') forwarder = { pid: message.forwarder, exe: message.exe };
  if (message.done === true) done = true;
});
process.stdin.on('end', cleanUp);
// readline passes the pipe's errors on (and throws them if nobody listens).
lines.on('error', cleanUp);
`;

/** Starts the watchdog for `namespaces` (before they exist, so no moment is unguarded). */
export function startPathWatchdog(namespaces: readonly string[]) {
  const child = spawn(process.execPath, ['-e', WATCHDOG_SOURCE, ...namespaces], { detached: true, stdio: ['pipe', 'ignore', 'ignore'] });
  child.unref();
  const pipe = child.stdin;
  if (pipe === null || child.pid === undefined) throw new Error('could not start the packet path watchdog');
  pipe.on('error', () => undefined); // the watchdog is gone: nothing to tell it
  // An idle pipe must not keep our event loop alive (the watchdog exists for when we are gone).
  if ('unref' in pipe && typeof pipe.unref === 'function') pipe.unref();
  return {
    pid: child.pid,
    /** Tells the watchdog which forwarder to stop if we die. */
    forwarder: (pid: number, exe: string) => void pipe.write(`${JSON.stringify({ forwarder: pid, exe })}\n`),
    /** We cleaned up ourselves: the watchdog exits without doing anything. */
    done: () => void pipe.end(`${JSON.stringify({ done: true })}\n`),
  };
}
