/**
 * Two connected in-memory Duplex streams, a serial cable for tests and simulators: what
 * one side writes, the other reads, a setImmediate later. Each direction can be made a
 * noisy line, driven by a seeded generator so a test sees the same damage every run.
 *
 * ```
 *   a.write ──▶ [garbage?] [drop byte?] [flip a bit?] [split into chunks] ──▶ b 'data'
 *   a 'data' ◀──────────────── same, with the bToA faults ◀─────────────── b.write
 * ```
 *
 * Ending one side's writing ends the other's reading; destroying one side destroys both
 * (a pulled cable).
 */
import { Duplex } from 'node:stream';

export interface LineFaults {
  /** Probability that a byte is lost (default 0). */
  dropRate?: number;
  /** Probability that a byte arrives with one bit flipped (default 0). */
  flipRate?: number;
  /** Probability that random bytes arrive before a write's bytes (default 0). */
  garbageRate?: number;
  /** Most garbage bytes injected at once (default 16). */
  garbageLength?: number;
  /** Deliver in chunks of 1 to maxChunk bytes (default: one chunk per write). */
  maxChunk?: number;
  /**
   * Lose the middle byte of every write whose number (1, 2, …) this divides: damage that
   * happens whatever the generator draws, for a test that must see some.
   */
  dropInEveryNthWrite?: number;
}

export interface LineStats {
  bytesWritten: number;
  bytesDelivered: number;
  droppedBytes: number;
  flippedBytes: number;
  garbageBytes: number;
  chunks: number;
}

export interface StreamPairOptions {
  /** Seed of the fault generator (default 1). */
  seed?: number;
  aToB?: LineFaults;
  bToA?: LineFaults;
}

export interface StreamPair {
  a: Duplex;
  b: Duplex;
  /** The faults in force; change them at any time (e.g. clean up the line mid-test). */
  faults: { aToB: LineFaults; bToA: LineFaults };
  stats: { aToB: LineStats; bToA: LineStats };
  /** Resolves once nothing written is still on its way. */
  idle(): Promise<void>;
}

/** mulberry32: a small, fast, seeded generator of numbers in [0, 1). */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const newStats = (): LineStats => ({
  bytesWritten: 0,
  bytesDelivered: 0,
  droppedBytes: 0,
  flippedBytes: 0,
  garbageBytes: 0,
  chunks: 0,
});

export function createStreamPair(options: StreamPairOptions = {}): StreamPair {
  const random = seededRandom(options.seed ?? 1);
  const faults = { aToB: { ...options.aToB }, bToA: { ...options.bToA } };
  const stats = { aToB: newStats(), bToA: newStats() };
  let inFlight = 0;

  const later = (task: () => void) => {
    inFlight++;
    setImmediate(() => {
      inFlight--;
      task();
    });
  };

  const damage = (bytes: Buffer, f: LineFaults, s: LineStats, write: number): Buffer => {
    if (f.dropInEveryNthWrite && write % f.dropInEveryNthWrite === 0 && bytes.length > 0) {
      const middle = bytes.length >> 1;
      bytes = Buffer.concat([bytes.subarray(0, middle), bytes.subarray(middle + 1)]);
      s.droppedBytes++;
    }
    const out: number[] = [];
    if (f.garbageRate && random() < f.garbageRate) {
      const count = 1 + Math.floor(random() * (f.garbageLength ?? 16));
      for (let i = 0; i < count; i++) out.push(Math.floor(random() * 256));
      s.garbageBytes += count;
    }
    for (const byte of bytes) {
      if (f.dropRate && random() < f.dropRate) {
        s.droppedBytes++;
      } else if (f.flipRate && random() < f.flipRate) {
        s.flippedBytes++;
        out.push(byte ^ (1 << Math.floor(random() * 8)));
      } else {
        out.push(byte);
      }
    }
    return Buffer.from(out);
  };

  class LineEnd extends Duplex {
    peer!: LineEnd;
    private writes = 0;

    constructor(
      private readonly faults: LineFaults,
      private readonly stats: LineStats,
    ) {
      super();
    }

    override _read(): void {}

    override _write(chunk: Buffer, _encoding: BufferEncoding, callback: () => void): void {
      this.stats.bytesWritten += chunk.length;
      this.writes++;
      const bytes = damage(chunk, this.faults, this.stats, this.writes);
      const maxChunk = this.faults.maxChunk;
      for (let at = 0; at < bytes.length;) {
        const size = maxChunk
          ? Math.min(bytes.length - at, 1 + Math.floor(random() * maxChunk))
          : bytes.length;
        const piece = bytes.subarray(at, at + size);
        at += size;
        later(() => {
          if (this.peer.destroyed) return;
          this.stats.chunks++;
          this.stats.bytesDelivered += piece.length;
          this.peer.push(piece);
        });
      }
      callback();
    }

    override _final(callback: () => void): void {
      later(() => {
        if (!this.peer.destroyed) this.peer.push(null);
      });
      callback();
    }

    override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
      if (!this.peer.destroyed) this.peer.destroy();
      callback(error);
    }
  }

  const a = new LineEnd(faults.aToB, stats.aToB);
  const b = new LineEnd(faults.bToA, stats.bToA);
  a.peer = b;
  b.peer = a;

  return {
    a,
    b,
    faults,
    stats,
    async idle() {
      do {
        await new Promise((resolve) => setImmediate(resolve));
      } while (inFlight > 0);
    },
  };
}
