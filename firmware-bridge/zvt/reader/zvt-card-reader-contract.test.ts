/**
 * The card-reader contract through the ZVT driver: against the emulated ZVT terminal over
 * a stream pair with the serial framing and over TCP, or, with TEST_ZVT_PORT (a serial
 * device; TEST_ZVT_BAUD, default 9600) or TEST_ZVT_TCP (HOST:PORT) set, against a real
 * terminal, whose profile TEST_ZVT_PROFILE names (default generic):
 *
 *   TEST_ZVT_TCP=192.168.1.50:20007 npx vitest run firmware-bridge/zvt/reader/zvt-card-reader-contract.test.ts
 *
 * A real host approves the emulator's trigger amounts: the decline case runs only with
 * TEST_ZVT_DECLINE_AMOUNT, the amount (minor units) the terminal's test card or test host
 * declines, and is skipped with that reason otherwise.
 */
import { describe, expect, it } from 'vitest';
import { describeCardReaderContract } from '../../reader/card-reader.contract.js';
import { ZVT_PROFILES, type ZvtProfileName } from './profiles.js';
import {
  emulatedZvtReader,
  emulatedZvtReaderOnTcp,
  realZvtDecline,
  realZvtReader,
  realZvtTarget,
} from './testing/zvt-readers-under-test.js';
import { zvtCapabilities } from './zvt-card-reader.js';

const generic = zvtCapabilities(ZVT_PROFILES.generic);

describe('ZVT driver: emulated ZVT terminal over a stream pair (serial framing)', () => {
  describeCardReaderContract(async () => emulatedZvtReader(), { capabilities: generic });
});

describe('ZVT driver: emulated ZVT terminal over TCP', () => {
  describeCardReaderContract(() => emulatedZvtReaderOnTcp(), { capabilities: generic });
});

const target = realZvtTarget();
const profile = (process.env.TEST_ZVT_PROFILE ?? 'generic') as ZvtProfileName;
describe.skipIf(!target)(
  target
    ? `ZVT driver: real terminal (${JSON.stringify(target)}, profile ${profile})`
    : 'ZVT driver: real terminal: SKIPPED, set TEST_ZVT_PORT (serial device) or TEST_ZVT_TCP (HOST:PORT)',
  () => {
    describeCardReaderContract(async () => realZvtReader(target ?? { tcp: 'unset' }, profile), {
      testTimeoutMs: 300_000,
      capabilities: zvtCapabilities(ZVT_PROFILES[profile] ?? ZVT_PROFILES.generic),
      decline: realZvtDecline(),
    });
  },
);

describe('ZVT driver: the real terminal run decline case', () => {
  it('is skipped with a reason unless TEST_ZVT_DECLINE_AMOUNT names a declined amount', () => {
    expect(realZvtDecline({})).toEqual({ skip: expect.stringMatching(/TEST_ZVT_DECLINE_AMOUNT/) });
    expect(realZvtDecline({ TEST_ZVT_DECLINE_AMOUNT: '4711' })).toEqual({ amount: 4711 });
    expect(() => realZvtDecline({ TEST_ZVT_DECLINE_AMOUNT: '12,50' })).toThrow();
  });
});
