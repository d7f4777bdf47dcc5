/**
 * The ZVT driver over a serial line that loses, flips and invents bytes: the ZVT serial
 * framing (CRC, NAK, retransmission, resynchronisation) repairs it below the driver, which
 * sees clean APDUs and runs the whole card-reader contract.
 */
import { describe, expect, it } from 'vitest';
import { describeCardReaderContract } from '../../reader/card-reader.contract.js';
import { newTransactionId } from '../../reader/testing/readers-under-test.js';
import type { ZvtSerialLink } from '../serial-link.js';
import { ZVT_PROFILES } from './profiles.js';
import { emulatedZvtReader } from './testing/zvt-readers-under-test.js';
import { zvtCapabilities } from './zvt-card-reader.js';

const faults = { dropRate: 0.0005, flipRate: 0.0005, garbageRate: 0.05, maxChunk: 7 };
// Short waits for link ACKs on an in-memory line, retries enough for the noise, and a
// frame timeout that drops half frames left by lost bytes quickly.
const link = { ackTimeoutMs: 20, maxRetries: 40, frameTimeoutMs: 50 };

describe('ZVT driver: emulated ZVT terminal over a noisy serial line', () => {
  describeCardReaderContract(async () => emulatedZvtReader({ faults, link, seed: 21 }), {
    capabilities: zvtCapabilities(ZVT_PROFILES.generic),
  });

  it('really was noisy, and the framing repaired it (NAKs, retransmissions, dropped bytes)', async () => {
    const under = emulatedZvtReader({ faults, link, seed: 22 });
    try {
      const host = await under.connect();
      for (let i = 0; i < 5; i++) {
        const id = newTransactionId(`znoise${i}`);
        await host.reader.start({
          transaction_id: id,
          kind: 'PURCHASE',
          requested_amount: 100 + i,
          currency: 'EUR',
          pause_on_customer_identified: false,
        });
        const result = await host.events.waitFor('result', (r) => r.transaction_id === id, {
          timeoutMs: under.timeoutMs,
        });
        expect(result).toMatchObject({
          result_code: 'SUCCESS',
          details: { total_amount: 100 + i },
        });
      }
      const stats = (host.reader.session.channel as ZvtSerialLink).stats;
      expect(stats.retransmissions).toBeGreaterThan(0);
      expect(stats.naksSent + stats.naksReceived).toBeGreaterThan(0);
      expect(stats.decoder.noiseBytes + stats.decoder.halfFrames).toBeGreaterThan(0);
    } finally {
      await under.close();
    }
  });
});
