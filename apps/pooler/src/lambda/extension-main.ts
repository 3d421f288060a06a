// The `quicpool connect` AWS Lambda extension (deploy/lambda: the layer's start script runs this
// file). Lambda starts every extension before the function's runtime; this one registers for
// INVOKE and SHUTDOWN, starts the agent beside the function, and asks for its first event (which
// tells Lambda its init is done) only once the agent listens and, for up to
// QUICPOOL_LAMBDA_READY_WAIT_MS, has a QUIC connection open: the function's first query finds the
// agent ready. INVOKE needs nothing from it; SHUTDOWN drains the agent (SIGTERM) and kills it if
// it is still there just before the event's deadline. Configuration: QUICPOOL_CONNECT_* variables
// (or a quicpool.toml in the function's directory), with Lambda's defaults below.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AgentProcess } from './agent-process.js';
import { ExtensionsApi } from './extensions-api.js';

/** The name Lambda knows the extension by: the start script's file name in /opt/extensions. */
const NAME = process.env['QUICPOOL_LAMBDA_EXTENSION_NAME'] ?? 'quicpool-connect';
const READY_WAIT_MS = Number(process.env['QUICPOOL_LAMBDA_READY_WAIT_MS'] ?? '3000');
/** SIGKILL this long before SHUTDOWN's deadline, so the extension itself exits in time. */
const KILL_MARGIN_MS = 100;

/**
 * Defaults for Lambda, each kept when the variable is set: /tmp is the only writable place, and
 * Lambda's shutdown phase gives extensions about 2 s, so local sessions drain for 1.5 s at most.
 */
const LAMBDA_DEFAULTS: Readonly<Record<string, string>> = {
  QUICPOOL_CONNECT_SOCKET_DIR: '/tmp',
  QUICPOOL_CONNECT_TICKET_FILE: '/tmp/quicpool/connect-tickets',
  QUICPOOL_CONNECT_LOGIN_CACHE_FILE: '/tmp/quicpool/connect-logins',
  QUICPOOL_CONNECT_DRAIN_TIMEOUT_MS: '1500',
};

const say = (msg: string, extra: Record<string, unknown> = {}): void =>
  void process.stdout.write(`${JSON.stringify({ time: Date.now(), pid: process.pid, name: NAME, msg, ...extra })}\n`);

async function main(): Promise<number> {
  const runtimeApi = process.env['AWS_LAMBDA_RUNTIME_API'];
  if (runtimeApi === undefined || runtimeApi === '') {
    say('AWS_LAMBDA_RUNTIME_API is not set: this runs as a Lambda extension only');
    return 1;
  }
  const api = new ExtensionsApi(runtimeApi);
  await api.register(NAME, ['INVOKE', 'SHUTDOWN']);

  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const [key, value] of Object.entries(LAMBDA_DEFAULTS)) env[key] ??= value;
  const agent = new AgentProcess({
    cli: join(dirname(fileURLToPath(import.meta.url)), 'cli.js'),
    env,
    cwd: process.env['LAMBDA_TASK_ROOT'] ?? process.cwd(),
    log: (line) => void process.stdout.write(`${line}\n`),
  });
  say('agent started', { agentPid: agent.pid });
  if (!(await agent.listens())) {
    const exit = await agent.exited;
    const message = `quicpool connect exited at start (code ${exit.code ?? 'none'}, signal ${exit.signal ?? 'none'}): see its log above`;
    say(message);
    await api.initError('Extension.QuicpoolConnectFailed', message);
    return 1;
  }
  const connected = await agent.ready(READY_WAIT_MS);
  say(connected ? 'agent ready' : 'agent listens; no QUIC connection yet', { readyWaitMs: READY_WAIT_MS });

  // An agent that dies between events is an error Lambda should know of (the next invoke fails).
  let shuttingDown = false;
  void agent.exited.then(async (exit) => {
    if (shuttingDown) return;
    const message = `quicpool connect exited (code ${exit.code ?? 'none'}, signal ${exit.signal ?? 'none'})`;
    say(message);
    await api.exitError('Extension.QuicpoolConnectExited', message).catch(() => undefined);
    process.exit(1);
  });
  for (;;) {
    const event = await api.next();
    switch (event.eventType) {
      case 'INVOKE':
        continue;
      case 'SHUTDOWN': {
        shuttingDown = true;
        say('shutdown: draining the agent', { reason: event.shutdownReason, deadlineMs: event.deadlineMs });
        const exit = await agent.stop(event.deadlineMs - KILL_MARGIN_MS);
        say('agent stopped', { code: exit.code, signal: exit.signal });
        return exit.code === 0 ? 0 : 1;
      }
      default: {
        const never: never = event;
        throw new Error(`unknown event ${JSON.stringify(never)}`);
      }
    }
  }
}

main().then(
  (code) => process.exit(code),
  (e: unknown) => {
    say('failed', { err: e instanceof Error ? e.message : String(e) });
    process.exit(1);
  },
);
