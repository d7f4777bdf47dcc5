/**
 * Serial frames of both reader protocols, bent, as a broken or hostile reader would send
 * them: the native link (docs/serial-protocol.md) gets noise and well-framed DATA packets
 * whose JSON is bent; the ZVT framing and message decoders get arbitrary bytes. Never a
 * throw, never a message handed on that its schema refuses, and the native link stays up.
 * `npm run fuzz` runs the same with many more runs.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ManualTimers } from '../common/testing/manual-timers.js';
import type { Frame } from '../firmware-bridge/serial/codec.js';
import { SerialLink } from '../firmware-bridge/serial/link.js';
import { ReaderMessage } from '../firmware-bridge/serial/messages.js';
import { createStreamPair } from '../firmware-bridge/serial/stream-pair.js';
import { toWire } from '../firmware-bridge/serial/testing/wire.js';
import { decodeMessageBytes } from '../firmware-bridge/zvt/messages.js';
import { ZvtFrameDecoder, type SerialUnit } from '../firmware-bridge/zvt/serial-frame-decoder.js';
import { frameApdu } from '../firmware-bridge/zvt/serial-frame-encoder.js';
import { bentBody, fuzzParameters } from './support/fuzz.js';

const progress = {
  v: 1,
  type: 'transaction.progress',
  transaction_id: 'txn-1',
  screen_text: 'Insert card',
};

describe('native serial link, fed a hostile reader', () => {
  it('hands on only messages its schema accepts, and stays up', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.oneof(
            fc.uint8Array({ maxLength: 300 }).map((bytes) => Buffer.from(bytes)),
            bentBody(progress)
              .map((body) => Buffer.from(JSON.stringify(body) ?? 'null'))
              // Beyond the link's payload limit a frame is dropped unread: not of interest here.
              .filter((payload) => payload.length <= 8000)
              .map((payload): Frame => ({ type: 'DATA', seq: 3, payload })),
            fc
              .uint8Array({ maxLength: 200 })
              .map((bytes): Frame => ({ type: 'DATA', seq: 7, payload: Buffer.from(bytes) })),
          ),
          { maxLength: 12 },
        ),
        async (units) => {
          const pair = createStreamPair();
          const host = new SerialLink(pair.a, { role: 'host', timers: new ManualTimers() });
          const delivered: unknown[] = [];
          let closed = false;
          host.on('message', (message) => delivered.push(message));
          host.on('close', () => (closed = true));
          for (const unit of units) {
            pair.b.write(Buffer.isBuffer(unit) ? unit : toWire(unit as Frame));
          }
          await pair.idle();
          for (const message of delivered) {
            expect(ReaderMessage.safeParse(message).success, JSON.stringify(message)).toBe(true);
          }
          expect(closed).toBe(false);
          await host.close();
        },
      ),
      fuzzParameters(60),
    );
  });
});

describe('ZVT framing and messages, fed arbitrary bytes', () => {
  it('the serial frame decoder never throws, and every frame it passes is decoded or refused', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.oneof(
            fc.uint8Array({ maxLength: 300 }).map((bytes) => Buffer.from(bytes)),
            fc.uint8Array({ minLength: 3, maxLength: 300 }).map((apdu) => frameApdu(apdu)),
          ),
          { maxLength: 10 },
        ),
        async (chunks) => {
          const decoder = new ZvtFrameDecoder();
          const units: SerialUnit[] = [];
          decoder.on('data', (unit: SerialUnit) => units.push(unit));
          for (const chunk of chunks) decoder.write(chunk);
          decoder.end();
          await new Promise((resolve) => setImmediate(resolve));
          for (const unit of units) {
            if (unit.type !== 'frame') continue;
            const decoded = decodeMessageBytes(unit.apdu);
            expect(typeof decoded.ok).toBe('boolean');
          }
        },
      ),
      fuzzParameters(200),
    );
  });

  it('the message decoder answers every APDU with a message or a reason, never a throw', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 600 }), (bytes) => {
        const decoded = decodeMessageBytes(bytes);
        if (!decoded.ok) expect(decoded.error.code).toEqual(expect.any(String));
      }),
      fuzzParameters(2000),
    );
  });
});
