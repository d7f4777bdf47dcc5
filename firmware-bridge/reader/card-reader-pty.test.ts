/**
 * The card-reader contract with the emulated firmware on a pseudo-terminal, the host
 * opening its path with node-serialport, as the agent opens a real reader. Skipped, with
 * the reason, where no pty can be made (Windows, or neither node-pty's binary nor socat).
 */
import { describe, expect, it } from 'vitest';
import { ptySupport } from '../transport/pty.js';
import { describeCardReaderContract } from './card-reader.contract.js';
import { emulatedReaderOnPty, newTransactionId } from './testing/readers-under-test.js';

const support = await ptySupport();
const socat = await ptySupport({ backend: 'socat' });

describe.skipIf(!support.ok)(
  `card reader: emulated firmware on a pty${support.ok ? ` (${support.backend})` : `: SKIPPED, ${support.reason}`}`,
  () => {
    describeCardReaderContract(() => emulatedReaderOnPty());
  },
);

describe.skipIf(!socat.ok)(
  `card reader on a socat pty${socat.ok ? '' : `: SKIPPED, ${socat.reason}`}`,
  () => {
    it('runs a purchase and answers queries', async () => {
      const under = await emulatedReaderOnPty({ backend: 'socat' });
      try {
        const host = await under.connect();
        const id = newTransactionId('socat');
        await host.reader.start({
          transaction_id: id,
          kind: 'PURCHASE',
          requested_amount: 990,
          currency: 'EUR',
          pause_on_customer_identified: false,
        });
        const result = await host.events.waitFor('result', (r) => r.transaction_id === id);
        expect(result.result_code).toBe('SUCCESS');
        expect(await host.reader.lastTransaction()).toMatchObject({ transaction_id: id });
      } finally {
        await under.close();
      }
    });
  },
);
