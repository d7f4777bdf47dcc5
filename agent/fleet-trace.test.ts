import { Duplex } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { encodePacket } from '../firmware-bridge/serial/codec.js';
import { LineTrace, maskDigitRuns } from './fleet-trace.js';

const clock = { now: () => new Date('2026-11-24T10:00:00Z') };

/** A DATA frame on the wire: its packet, SLIP-stuffed between two END bytes. */
function frame(seq: number, message: object): Buffer {
  const packet = encodePacket({
    type: 'DATA',
    seq,
    payload: Buffer.from(JSON.stringify({ v: 1, ...message })),
  });
  const bytes: number[] = [0xc0];
  for (const byte of packet) {
    if (byte === 0xc0) bytes.push(0xdb, 0xdc);
    else if (byte === 0xdb) bytes.push(0xdb, 0xdd);
    else bytes.push(byte);
  }
  bytes.push(0xc0);
  return Buffer.from(bytes);
}

describe('the trace of the reader line', () => {
  it('masks card numbers in any text', () => {
    expect(maskDigitRuns('pan 4761739001010119 ref 12345')).toBe('pan 476173******0119 ref 12345');
  });

  it('follows both directions from the last start, bounded, without card numbers or secrets', async () => {
    const trace = new LineTrace(clock, 4);
    // The host's end of a line: what it writes goes to the reader, what it reads came from it.
    const line = new Duplex({
      read() {},
      write(_chunk, _encoding, done) {
        done();
      },
    });
    trace.tap(line);
    line.write(frame(1, { type: 'status.query', query_id: 'q' }));
    line.write(frame(2, { type: 'transaction.start', transaction_id: 'txn-1', kind: 'PURCHASE' }));
    line.push(
      frame(7, {
        type: 'transaction.result',
        transaction_id: 'txn-1',
        details: {
          payment_method_details: { card_number_merchant: '476173******0119' },
          note: '4761739001010119',
        },
      }),
    );
    await new Promise((resolve) => setImmediate(resolve));
    const { transactionId, frames, dropped } = trace.snapshot();
    expect(transactionId).toBe('txn-1');
    expect(dropped).toBe(0);
    expect(frames.map((f) => f.direction)).toEqual(['host→reader', 'reader→host']);
    const text = frames.map((f) => f.text).join('\n');
    expect(text).not.toContain('4761739001010119');
    expect(text).toContain('"card_number_merchant":"[redacted]"');
    // A number the reader failed to mask leaves only its first 6 and last 4 digits.
    expect(text).toContain('"note":"476173******0119"');
    for (let seq = 3; seq < 10; seq++)
      line.write(frame(seq, { type: 'status.query', query_id: `q${seq}` }));
    expect(trace.snapshot()).toMatchObject({ transactionId: 'txn-1', dropped: 5 });
    expect(trace.snapshot().frames).toHaveLength(4);
  });
});
