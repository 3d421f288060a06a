// A child process of this program driven over IPC (the transport ping-pong sides): request() waits for the reply
// of the kind asked for; exit() asks it to go, SIGKILL after 5 s. BENCH_WORKER_NODE_ARGS (e.g. "--cpu-prof") replaces
// its Node flags; without it the child gets `defaultExecArgv` (fork()'s default: this process's own flags).
import type { ChildProcess } from 'node:child_process';
import { fork } from 'node:child_process';
import { once } from 'node:events';

type Message = { readonly t: string };

export class IpcChild<To extends Message, From extends Message> {
  private readonly child: ChildProcess;

  constructor(script: string, args: readonly string[], defaultExecArgv?: readonly string[]) {
    const execArgv = process.env.BENCH_WORKER_NODE_ARGS?.split(' ').filter((arg) => arg !== '') ?? defaultExecArgv;
    this.child = fork(script, [...args], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], ...(execArgv !== undefined ? { execArgv: [...execArgv] } : {}) });
  }

  request<K extends From['t']>(message: To, want: K): Promise<Extract<From, { t: K }>> {
    return new Promise((resolve, reject) => {
      const onMessage = (reply: From): void => {
        if (reply.t === 'failed') finish(() => reject(new Error(`worker failed: ${'message' in reply ? String(reply.message) : ''}`)));
        else if (reply.t === want) finish(() => resolve(reply as Extract<From, { t: K }>));
      };
      const onExit = (code: number | null): void => finish(() => reject(new Error(`worker exited (${code}) waiting for ${want}`)));
      const finish = (settle: () => void): void => {
        this.child.off('message', onMessage);
        this.child.off('exit', onExit);
        settle();
      };
      this.child.on('message', onMessage);
      this.child.once('exit', onExit);
      this.child.send(message);
    });
  }

  async exit(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = once(this.child, 'exit');
    if (this.child.connected) this.child.send({ t: 'exit' });
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(timer);
  }
}
