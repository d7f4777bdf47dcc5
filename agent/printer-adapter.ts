/**
 * PrinterPort over firmware-bridge's ESC/POS driver (`ReceiptPrinter`). A serial printer's
 * line stays open between jobs and is opened again after it failed; a network printer
 * (raw TCP, port 9100) gets one connection per job, as such printers drop idle ones.
 * Failures reject with the driver's PrinterError (PAPER_OUT, COVER_OPEN, ...): the
 * executor logs them; a receipt never stops a payment.
 */
import type { Duplex } from 'node:stream';
import { ReceiptPrinter } from '../firmware-bridge/printer/printer.js';
import type { PrinterPort } from './ports.js';

export interface PrinterLine {
  stream: Duplex;
  close(): Promise<void>;
}

export class DriverPrinter implements PrinterPort {
  private line: { line: PrinterLine; printer: ReceiptPrinter } | undefined;

  constructor(
    private readonly open: () => Promise<PrinterLine>,
    private readonly options: { headWidth: number; keepOpen: boolean },
  ) {}

  async print(png: Buffer): Promise<void> {
    const current = this.line ?? (await this.connect());
    try {
      await current.printer.print(png, { headWidth: this.options.headWidth });
    } catch (error) {
      if ((error as { disconnected?: boolean }).disconnected) await this.release(current);
      throw error;
    } finally {
      if (!this.options.keepOpen) await this.release(current);
    }
  }

  async close(): Promise<void> {
    if (this.line) await this.release(this.line);
  }

  private async connect() {
    const line = await this.open();
    const current = { line, printer: new ReceiptPrinter(line.stream) };
    if (this.options.keepOpen) this.line = current;
    return current;
  }

  private async release(current: { line: PrinterLine; printer: ReceiptPrinter }): Promise<void> {
    if (this.line === current) this.line = undefined;
    current.printer.close();
    await current.line.close().catch(() => undefined);
  }
}
