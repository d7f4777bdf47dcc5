/**
 * What the emulated reader does beyond the card-reader contract: its memory across its own
 * restarts, one transaction at a time, status reports, battery and a host that is away.
 * Driven through the driver, as a host would.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ReaderEventLog } from '../reader/reader-events.js';
import {
  emulatedReader,
  newTransactionId,
  type ReaderUnderTest,
} from '../reader/testing/readers-under-test.js';
import type { ReaderStart } from '../reader/card-reader.js';
import { SerialCardReader } from '../reader/serial-card-reader.js';
import { FrameDecoder } from '../serial/decoder.js';
import { createStreamPair } from '../serial/stream-pair.js';
import { ManualTimers } from '../../common/testing/manual-timers.js';
import { CardReaderFirmware } from './card-reader-firmware.js';
import { FileReaderMemory } from './file-reader-memory.js';
import { READER_RESULTS } from './reader-results.js';

const purchase = (id: string, amount: number): ReaderStart => ({
  transaction_id: id,
  kind: 'PURCHASE',
  requested_amount: amount,
  currency: 'EUR',
  pause_on_customer_identified: false,
});

const opened: ReaderUnderTest[] = [];
function reader(options: Parameters<typeof emulatedReader>[0] = {}) {
  const under = emulatedReader(options);
  opened.push(under);
  return under;
}
afterEach(async () => {
  for (const under of opened.splice(0)) await under.close();
});

const stateFile = () => path.join(mkdtempSync(path.join(tmpdir(), 'tps-reader-')), 'reader.jsonl');

describe('CardReaderFirmware', () => {
  it('keeps its records in a file across its own restarts; an interrupted run is not charged', async () => {
    const file = stateFile();
    const first = reader({ firmware: { memory: new FileReaderMemory(file) } });
    const host = await first.connect();
    const done = newTransactionId('done');
    await host.reader.start(purchase(done, 100002));
    const result = await host.events.waitFor('result', (r) => r.transaction_id === done);
    const running = newTransactionId('running');
    await host.reader.start(purchase(running, 100020));
    await host.events.waitFor('progress', (p) => p.transaction_id === running);
    await first.close(); // power off mid-transaction

    const second = reader({ firmware: { memory: new FileReaderMemory(file) } });
    const after = await second.connect();
    expect(await after.reader.lastTransaction()).toMatchObject({
      transaction_id: running,
      ...READER_RESULTS.interrupted,
    });
    await after.reader.start(purchase(running, 100002));
    expect(await after.events.waitFor('result', (r) => r.transaction_id === running)).toMatchObject(
      { phase: 'CANCELLED' },
    );
    await after.reader.start(purchase(done, 100002));
    expect(await after.events.waitFor('result', (r) => r.transaction_id === done)).toEqual(result);
    expect(readFileSync(file, 'utf8')).toContain(done);
  });

  it('runs one transaction at a time: a start while busy is refused for good', async () => {
    const host = await reader().connect();
    const busy = newTransactionId('busy');
    const other = newTransactionId('other');
    await host.reader.start(purchase(busy, 100020));
    await host.reader.start(purchase(other, 1000));
    expect(await host.events.waitFor('result', (r) => r.transaction_id === other)).toMatchObject(
      READER_RESULTS.busy,
    );
    await host.reader.cancel(busy);
    await host.events.waitFor('result', (r) => r.transaction_id === busy);
    const since = host.events.mark();
    await host.reader.start(purchase(other, 1000));
    expect(
      await host.events.waitFor('result', (r) => r.transaction_id === other, { since }),
    ).toMatchObject({ result_code: 'READER_BUSY' });
    expect(await host.reader.lastTransaction()).toMatchObject({ transaction_id: busy });
  });

  it('reports status on every change: screens of a payment, then the result', async () => {
    const host = await reader().connect();
    const id = newTransactionId('screens');
    await host.reader.start(purchase(id, 1234));
    await host.events.waitFor('result', (r) => r.transaction_id === id);
    await host.events.waitFor('status', (s) => s.screen_message === 'Approved');
    const screens = host.events.all('status').map((s) => s.screen_message);
    expect(screens).toContain('Purchase EUR 12.34 - present card');
    expect(host.events.all('progress').map((p) => p.screen_text)).toEqual([
      'Purchase EUR 12.34 - present card',
      'Processing, please wait',
    ]);
  });

  it('drains its battery off the charger and charges it on, reporting each change', async () => {
    const timers = new ManualTimers();
    const under = reader({ firmware: { timers, battery: { percentage: 50, tickMs: 60_000 } } });
    const host = await under.connect();
    expect(await host.reader.status()).toEqual({
      battery_percentage: 50,
      battery_charging: false,
      plugged_in: false,
      screen_message: 'Ready',
    });
    const since = host.events.mark();
    timers.fireNext();
    await host.events.waitFor('status', (s) => s.battery_percentage === 49, { since });
    under.firmware?.plug(true);
    await host.events.waitFor('status', (s) => s.battery_charging === true, { since });
    timers.fireNext();
    await host.events.waitFor('status', (s) => s.battery_percentage === 50, { since });
    under.firmware?.setBattery(100);
    await host.events.waitFor(
      'status',
      (s) => s.battery_percentage === 100 && s.battery_charging === false,
      { since },
    );
  });

  it('reports no battery on a stationary reader', async () => {
    const host = await reader({ firmware: { battery: false } }).connect();
    expect(await host.reader.status()).toEqual({ plugged_in: true, screen_message: 'Ready' });
  });

  it('goes quiet while no host answers, and reports afresh when one speaks', async () => {
    const pair = createStreamPair();
    const firmware = new CardReaderFirmware({ link: { ackTimeoutMs: 5, maxRetries: 1 } });
    const frames = new FrameDecoder();
    let written = 0;
    frames.on('data', () => written++);
    pair.a.pipe(frames);
    firmware.serve(pair.b);
    // The greeting (one status report) goes out twice, unanswered; then the link gives up.
    while (written < 2) await new Promise((resolve) => setTimeout(resolve, 5));
    await new Promise((resolve) => setTimeout(resolve, 50));
    const quiet = written;
    expect(quiet).toBe(2);
    firmware.plug(true);
    firmware.setBattery(10);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(written).toBe(quiet);
    pair.a.unpipe(frames);
    const host = SerialCardReader.connect(pair.a);
    const events = new ReaderEventLog(host);
    expect(await host.status()).toMatchObject({ plugged_in: true, battery_percentage: 10 });
    await host.close();
    await firmware.close();
    expect(events.all('status').length).toBeGreaterThanOrEqual(1);
  });

  it('has every result code it gives for stops documented in docs/serial-protocol.md', () => {
    const docs = readFileSync(new URL('../../docs/serial-protocol.md', import.meta.url), 'utf8');
    for (const outcome of Object.values(READER_RESULTS)) {
      expect(docs).toContain(`\`${outcome.result_code}\``);
      expect(docs).toContain(outcome.result_description);
    }
  });
});
