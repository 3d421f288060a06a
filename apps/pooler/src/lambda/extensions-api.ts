// The AWS Lambda Extensions API, as an external extension uses it
// (https://docs.aws.amazon.com/lambda/latest/dg/runtimes-extensions-api.html): register for
// events, then long-poll for the next one; report a failure at init or before exit. The API is
// plain HTTP on $AWS_LAMBDA_RUNTIME_API. node:http, not fetch: /event/next answers only when the
// next invoke or the shutdown comes, which can be hours, and fetch gives up on headers after 300 s.
import { request } from 'node:http';

const VERSION = '2020-01-01';
/** An answer larger than this is not the API's: refused. */
const MAX_BODY_BYTES = 1 << 20;

export type LambdaEventType = 'INVOKE' | 'SHUTDOWN';

export type LambdaEvent =
  | { readonly eventType: 'INVOKE'; readonly deadlineMs: number; readonly requestId: string }
  /** shutdownReason: "spindown", "timeout" or "failure"; deadlineMs: epoch ms by which to be gone. */
  | { readonly eventType: 'SHUTDOWN'; readonly deadlineMs: number; readonly shutdownReason: string };

interface Answer {
  readonly status: number;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly body: string;
}

export class ExtensionsApi {
  private id: string | null = null;

  /** `runtimeApi`: host:port, as Lambda sets AWS_LAMBDA_RUNTIME_API. */
  constructor(private readonly runtimeApi: string) {}

  /** Registers as `name` (the file name in /opt/extensions, as Lambda requires) for `events`. */
  async register(name: string, events: readonly LambdaEventType[]): Promise<void> {
    const a = await this.call('POST', 'extension/register', { 'Lambda-Extension-Name': name }, JSON.stringify({ events }));
    const id = a.headers['lambda-extension-identifier'];
    if (a.status !== 200 || typeof id !== 'string' || id === '') throw new Error(`register: HTTP ${a.status} ${a.body}`);
    this.id = id;
  }

  /** The next event; resolves when Lambda sends one (the first call also says: init is done). */
  async next(): Promise<LambdaEvent> {
    const a = await this.call('GET', 'extension/event/next', this.identified());
    if (a.status !== 200) throw new Error(`event/next: HTTP ${a.status} ${a.body}`);
    return parseEvent(a.body);
  }

  /** Init failed: Lambda ends the environment and reports `errorType` for the invoke. */
  initError(errorType: string, message: string): Promise<void> {
    return this.report('extension/init/error', errorType, message);
  }

  /** Going away because of an error after init. */
  exitError(errorType: string, message: string): Promise<void> {
    return this.report('extension/exit/error', errorType, message);
  }

  private async report(path: string, errorType: string, message: string): Promise<void> {
    await this.call('POST', path, { ...this.identified(), 'Lambda-Extension-Function-Error-Type': errorType }, JSON.stringify({ errorMessage: message, errorType }));
  }

  private identified(): Record<string, string> {
    if (this.id === null) throw new Error('not registered with the Extensions API');
    return { 'Lambda-Extension-Identifier': this.id };
  }

  private call(method: 'GET' | 'POST', path: string, headers: Record<string, string>, body?: string): Promise<Answer> {
    return new Promise((resolve, reject) => {
      const req = request(`http://${this.runtimeApi}/${VERSION}/${path}`, { method, headers: { ...headers, ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}) } }, (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          size += c.length;
          if (size > MAX_BODY_BYTES) return req.destroy(new Error(`${path}: answer over ${MAX_BODY_BYTES} bytes`));
          chunks.push(c);
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end(body);
    });
  }
}

/** An /event/next body; anything else is an error. */
export function parseEvent(body: string): LambdaEvent {
  const e = JSON.parse(body) as Record<string, unknown>;
  const deadlineMs = e['deadlineMs'];
  if (typeof deadlineMs !== 'number') throw new Error(`event without deadlineMs: ${body.slice(0, 200)}`);
  switch (e['eventType']) {
    case 'INVOKE':
      return { eventType: 'INVOKE', deadlineMs, requestId: String(e['requestId'] ?? '') };
    case 'SHUTDOWN':
      return { eventType: 'SHUTDOWN', deadlineMs, shutdownReason: String(e['shutdownReason'] ?? '') };
    default:
      throw new Error(`unknown event type ${JSON.stringify(e['eventType'])}`);
  }
}
