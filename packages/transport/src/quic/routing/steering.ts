// Which worker of a multi-worker server gets a datagram: the kernel runs `quicSteeringProgram` (a
// classic BPF program on the UDP port's reuseport group) for every datagram, and the program's
// answer is the index of the worker's socket. It reads the first byte of the destination
// connection id (short header: right after the first byte; long header: after version and DCID
// length) modulo the worker count. Every connection id a worker issues has a first byte that names
// it (`cid.ts`), so all of a connection's packets reach its worker, also after a NAT rebinding, a
// migration or a CID rotation; a client's first Initial carries a DCID the client chose, which
// picks a worker just as deterministically, so its retransmissions land on the same one.
import type { BpfInstruction } from '@quicpool/udp';

/** Most workers a port can be steered to: the worker is one byte of the connection id. */
export const MAX_STEERED_WORKERS = 256;

// Classic BPF opcodes (linux/filter.h).
const LDB_ABS = 0x30; // A = byte at [k]
const JSET_K = 0x45; // if (A & k) pc += jt else pc += jf
const JA = 0x05; // pc += k
const MOD_K = 0x94; // A %= k
const RET_A = 0x16; // return A

/** Offset of the DCID's first byte: after the first byte (short) or after byte 5, the DCID length (long). */
const SHORT_DCID = 1;
const LONG_DCID = 6;

/**
 * The steering program for `workers` sockets. A datagram too short to hold the byte it reads
 * ends the program with 0 (the kernel's rule), so it goes to worker 0, which drops it.
 */
export function quicSteeringProgram(workers: number): BpfInstruction[] {
  if (!Number.isInteger(workers) || workers < 1 || workers > MAX_STEERED_WORKERS) throw new RangeError(`workers must be 1-${MAX_STEERED_WORKERS}, got ${workers}`);
  return [
    [LDB_ABS, 0, 0, 0],
    [JSET_K, 2, 0, 0x80], // long header form: skip the next two
    [LDB_ABS, 0, 0, SHORT_DCID],
    [JA, 0, 0, 1],
    [LDB_ABS, 0, 0, LONG_DCID],
    [MOD_K, 0, 0, workers],
    [RET_A, 0, 0, 0],
  ];
}

/** What the program answers for `datagram` (for tests and for logs): the worker's index. */
export function steeredWorker(datagram: Uint8Array, workers: number): number {
  const at = datagram.length > 0 && (datagram[0]! & 0x80) !== 0 ? LONG_DCID : SHORT_DCID;
  return datagram.length > at ? datagram[at]! % workers : 0;
}
