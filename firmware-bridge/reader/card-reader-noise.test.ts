/** The card-reader contract over a line that loses, flips and invents bytes. */
import { describe, expect, it } from 'vitest';
import { describeCardReaderContract } from './card-reader.contract.js';
import { emulatedReader, newTransactionId } from './testing/readers-under-test.js';

// Per byte: a 3 KB result (receipts and all) still gets through about half of the time.
const faults = { dropRate: 0.0001, flipRate: 0.0001, garbageRate: 0.05, maxChunk: 9 };
// Short waits for the ACKs on an in-memory line, and retries enough for the noise.
const link = { ackTimeoutMs: 15, maxRetries: 40 };

describe('card reader: emulated firmware over a noisy stream pair', () => {
  describeCardReaderContract(async () => emulatedReader({ faults, link, seed: 11 }));

  it('really was noisy, and the link repaired it', async () => {
    const under = emulatedReader({ faults, link, seed: 12 });
    const host = await under.connect();
    for (let i = 0; i < 5; i++) {
      const id = newTransactionId(`noise${i}`);
      await host.reader.start({
        transaction_id: id,
        kind: 'PURCHASE',
        requested_amount: 100 + i,
        currency: 'EUR',
        pause_on_customer_identified: false,
      });
      const result = await host.events.waitFor('result', (r) => r.transaction_id === id);
      expect(result.details?.total_amount).toBe(100 + i);
    }
    const stats = host.reader.link.stats;
    expect(stats.retransmissions + stats.decoder.droppedBytes).toBeGreaterThan(0);
    await under.close();
  });
});
