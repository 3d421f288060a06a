// The cheapest way Node 20 allows to move one datagram: straight through the socket's UDP handle.
//
// `socket.send()` costs ~3-4 µs per datagram in JavaScript before the syscall: argument
// validation, a new Buffer view (`sliceBuffer`), a list array, the connect-state and bind-state
// checks and, above all, a new native `SendWrap` object per datagram. Receiving, dgram's
// `onMessage` re-emits every datagram through the EventEmitter. An endpoint sends and receives a
// datagram per packet (quiche puts one STREAM frame in each), so both run tens of thousands of
// times per second.
//
// Here the endpoint calls `handle.send(req, [view], 1, [port, ip,] false)` itself, reusing one
// `SendWrap` for every datagram that completes synchronously (libuv's `uv_udp_try_send`, the
// normal case), and takes the handle's `onmessage` callback directly. Both rely on Node's
// internals (the socket's `state symbol`, `process.binding('udp_wrap').SendWrap`); when any piece
// is missing or has another shape, `fastUdp()` returns null and the endpoint keeps using the
// public dgram API. Behaviour is the same either way: a send error without a callback is dropped
// by dgram too (QUIC recovers lost datagrams), and a receive error is emitted as the socket's
// 'error' event.
import type dgram from 'node:dgram';
import { getSystemErrorName } from 'node:util';

/** Puts one datagram (`len` bytes of `buf`) on the wire; `port`/`host` are ignored when connected. */
export type DatagramSend = (buf: Buffer, len: number, port: number, host: string) => void;
/** Receives one datagram: the same arguments dgram's 'message' event carries. */
export type DatagramReceive = (msg: Buffer, rinfo: dgram.RemoteInfo) => void;

interface UdpHandle {
  send(req: object, list: Uint8Array[], count: number, ...rest: Array<number | string | boolean>): number;
  onmessage: (nread: number, handle: unknown, buf: Buffer | undefined, rinfo: dgram.RemoteInfo) => void;
}

interface SendWrapCtor {
  new (): SendWrapObj;
}
interface SendWrapObj {
  list?: Uint8Array[];
}

export interface FastUdp {
  send: DatagramSend;
  /** Routes the handle's received datagrams to `onMessage` instead of dgram's 'message' event. */
  takeReceive(onMessage: DatagramReceive): void;
  /** Datagrams the kernel could not take synchronously (queued by libuv) since creation. */
  readonly queuedSends: number;
}

let sendWrapCtor: SendWrapCtor | null | undefined;

function findSendWrap(): SendWrapCtor | null {
  if (sendWrapCtor !== undefined) return sendWrapCtor;
  sendWrapCtor = null;
  try {
    // Documentation-only deprecated (DEP0111); no warning at runtime in Node 20.
    const binding = (process as unknown as { binding(name: string): unknown }).binding('udp_wrap') as { SendWrap?: unknown };
    if (typeof binding.SendWrap === 'function') sendWrapCtor = binding.SendWrap as SendWrapCtor;
  } catch {
    sendWrapCtor = null;
  }
  return sendWrapCtor;
}

function handleOf(socket: dgram.Socket): UdpHandle | null {
  const sym = Object.getOwnPropertySymbols(socket).find((s) => s.description === 'state symbol');
  if (sym === undefined) return null;
  const state = (socket as unknown as Record<symbol, unknown>)[sym] as { handle?: unknown } | undefined;
  const h = state?.handle as Partial<UdpHandle> | undefined | null;
  if (h === undefined || h === null || typeof h.send !== 'function' || typeof h.onmessage !== 'function') return null;
  return h as UdpHandle;
}

/** The direct path for a bound (and, for clients, connected) socket, or null when unavailable. */
export function fastUdp(socket: dgram.Socket, connected: boolean): FastUdp | null {
  if (process.env.QUICPOOL_DGRAM_API === '1') return null;
  const SendWrap = findSendWrap();
  const handle = handleOf(socket);
  if (SendWrap === null || handle === null) return null;
  let req = new SendWrap();
  const list: Uint8Array[] = [new Uint8Array(0)];
  const out = {
    queuedSends: 0,
    send: (buf: Buffer, len: number, port: number, host: string): void => {
      const view = new Uint8Array(buf.buffer, buf.byteOffset, len);
      list[0] = view;
      const r = connected ? handle.send(req, list, 1, false) : handle.send(req, list, 1, port, host, false);
      // r >= 1: sent synchronously; r < 0: an errno (dropped, as dgram does without a callback);
      // r === 0: libuv queued it and the native request now owns `req`: it keeps the bytes alive
      // (`list`, like dgram) and the next datagram gets a fresh request object.
      if (r === 0) {
        req.list = [view];
        req = new SendWrap();
        out.queuedSends++;
      }
    },
    takeReceive: (onMessage: DatagramReceive): void => {
      handle.onmessage = (nread, _h, buf, rinfo) => {
        if (nread < 0 || buf === undefined) {
          const code = nread < 0 ? getSystemErrorName(nread) : 'EIO';
          const err = Object.assign(new Error(`recvmsg ${code}`), { errno: nread, code, syscall: 'recvmsg' });
          socket.emit('error', err);
          return;
        }
        onMessage(buf, rinfo);
      };
    },
  };
  return out;
}
