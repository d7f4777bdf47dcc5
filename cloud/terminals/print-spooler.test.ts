import { PNG } from 'pngjs';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualTimers } from '../../common/testing/manual-timers.js';
import type { TerminalRecord } from '../store/records.js';
import { PRINT_FRAGMENT_TTL_MS, PrintSpooler } from './print-spooler.js';

const terminal = (id: string): TerminalRecord => ({
  id,
  accountId: 'a-1',
  kind: 'SIMULATOR',
  capabilities: { printer: true, battery: false },
  status: { terminal_id: id, updated_at: '2026-01-01T00:00:00Z' },
  createdAt: '2026-01-01T00:00:00Z',
});

const png = (width: number, height: number) => {
  const image = new PNG({ width, height });
  image.data.fill(255);
  return PNG.sync.write(image).toString('base64');
};

describe('PrintSpooler', () => {
  const timers = new ManualTimers();
  const sent: string[] = [];
  let spooler: PrintSpooler | undefined;
  const open = (maxPendingChars?: number) => {
    spooler = new PrintSpooler(
      async (_terminalId, contents) => {
        sent.push(contents);
      },
      { timers, ...(maxPendingChars ? { maxPendingChars } : {}) },
    );
    return spooler;
  };
  afterEach(async () => {
    await spooler?.close();
    sent.length = 0;
  });

  it('drops an unfinished job once its time-out passes, without waiting for the next print', async () => {
    const printer = open();
    const whole = png(64, 8);
    const half = Math.floor(whole.length / 2);
    await printer.print(terminal('t-1'), {
      format: 'PNG',
      terminal_id: 't-1',
      contents: whole.slice(0, half),
      continue: true,
    });
    expect(printer.heldChars).toBe(half);
    timers.advance(PRINT_FRAGMENT_TTL_MS - 1);
    expect(printer.heldChars).toBe(half);
    timers.advance(1);
    expect(printer.heldChars).toBe(0);
    // The second half alone is not a PNG: the first was dropped, not joined.
    await expect(
      printer.print(terminal('t-1'), {
        format: 'PNG',
        terminal_id: 't-1',
        contents: whole.slice(half),
      }),
    ).rejects.toMatchObject({ code: 'INVALID_PRINT_DATA' });
    expect(sent).toEqual([]);
  });

  it('a fragment within the time-out extends it, and the job prints whole', async () => {
    const printer = open();
    const whole = png(64, 8);
    const third = Math.floor(whole.length / 3);
    const parts = [whole.slice(0, third), whole.slice(third, 2 * third), whole.slice(2 * third)];
    await printer.print(terminal('t-1'), {
      format: 'PNG',
      terminal_id: 't-1',
      contents: parts[0]!,
      continue: true,
    });
    timers.advance(PRINT_FRAGMENT_TTL_MS - 1);
    await printer.print(terminal('t-1'), {
      format: 'PNG',
      terminal_id: 't-1',
      contents: parts[1]!,
      continue: true,
    });
    timers.advance(PRINT_FRAGMENT_TTL_MS - 1);
    await printer.print(terminal('t-1'), {
      format: 'PNG',
      terminal_id: 't-1',
      contents: parts[2]!,
    });
    expect(sent).toEqual([whole]);
    expect(printer.heldChars).toBe(0);
  });

  it('bounds the unfinished jobs of all terminals together', async () => {
    const printer = open(200);
    const fragment = png(64, 8).slice(0, 120);
    await printer.print(terminal('t-1'), {
      format: 'PNG',
      terminal_id: 't-1',
      contents: fragment,
      continue: true,
    });
    await expect(
      printer.print(terminal('t-2'), {
        format: 'PNG',
        terminal_id: 't-2',
        contents: fragment,
        continue: true,
      }),
    ).rejects.toMatchObject({ code: 'SERVICE_BUSY', headers: { 'Retry-After': '10' } });
    expect(printer.heldChars).toBe(120);
  });
});
