/**
 * The card-reader contract through the ZVT driver with the emulated ZVT terminal on a
 * pseudo-terminal, the driver opening its path with node-serialport (8N2, ZVT serial
 * framing), as the agent opens a real terminal's RS-232 port. Skipped, with the reason,
 * where no pty can be made.
 */
import { describe } from 'vitest';
import { describeCardReaderContract } from '../../reader/card-reader.contract.js';
import { ptySupport } from '../../transport/pty.js';
import { ZVT_PROFILES } from './profiles.js';
import { emulatedZvtReaderOnPty } from './testing/zvt-readers-under-test.js';
import { zvtCapabilities } from './zvt-card-reader.js';

const support = await ptySupport();

describe.skipIf(!support.ok)(
  `ZVT driver: emulated ZVT terminal on a pty${support.ok ? ` (${support.backend})` : `: SKIPPED, ${support.reason}`}`,
  () => {
    describeCardReaderContract(() => emulatedZvtReaderOnPty(), {
      capabilities: zvtCapabilities(ZVT_PROFILES.generic),
    });
  },
);
