/**
 * A payment terminal on a real TCP port (127.0.0.1) that accepts a payment and then never
 * ends it: it streams long print lines, text blocks, intermediate statuses or status
 * informations as fast as the socket takes them (or one every `intervalMs`), without
 * waiting for the register's answers. Every other command, and every payment once
 * `behave()` was called, it serves as a terminal should; its Repeat Receipt tells the
 * flooded payment as approved (what the terminal recorded). Test-only.
 */
import net from 'node:net';
import { bmpsFrom } from '../bmp-values.js';
import type { Bmp } from '../bmp.js';
import type { PtMessage } from '../message-types.js';
import { messageBytes } from '../messages.js';
import { ZvtPtSession, type CommandHandle } from '../pt-session.js';
import { ZvtTcpChannel } from '../tcp-channel.js';

export type Flood = 'print-lines' | 'text-blocks' | 'intermediate-statuses' | 'status-informations';

export interface HostilePtOptions {
  flood: Flood;
  /** Characters of each line or text (default 8000). */
  textLength?: number;
  /** Between two messages of the flood, in ms (default 0: as fast as the socket takes them). */
  intervalMs?: number;
  /** The flood stops here, to spare the test process when a bound is missing (default 64 MiB). */
  capBytes?: number;
}

/** A long text (the flood's lines) as a 04 FF's display text (BMP 06, TLV 24 { 07 }). */
function textTlv(tag: number, text: Buffer): Bmp {
  return {
    tag: 0x06,
    format: 'tlv',
    value: { items: [{ tag, items: [{ tag: 0x07, value: text }] }] },
  };
}

export function floodMessage(flood: Flood, textLength: number): PtMessage {
  const text = 'X'.repeat(textLength);
  switch (flood) {
    case 'print-lines':
      return { type: 'print-line', attribute: 0x00, text };
    case 'text-blocks':
      return { type: 'print-text-block', bmps: [textTlv(0x25, Buffer.from(text, 'latin1'))] };
    case 'intermediate-statuses':
      return {
        type: 'intermediate-status',
        status: 0x17,
        timeout: 0,
        bmps: [textTlv(0x24, Buffer.from(text, 'latin1'))],
      };
    case 'status-informations':
      return {
        type: 'status-information',
        bmps: [...bmpsFrom({ resultCode: 0 }), textTlv(0x25, Buffer.from(text, 'latin1'))],
      };
  }
}

export class HostilePt {
  /** What the flood wrote: messages and bytes. */
  readonly sent = { messages: 0, bytes: 0 };
  /** Payments whose flood ended because the register closed the connection. */
  floodsEndedByRegister = 0;
  /** Connections accepted. */
  connections = 0;
  private hostile = true;
  private trace = 1;
  private lastPayment: { amount: number; trace: number } | undefined;
  private readonly sockets = new Set<net.Socket>();

  private constructor(
    private readonly server: net.Server,
    private readonly options: HostilePtOptions,
  ) {}

  static async listen(options: HostilePtOptions): Promise<HostilePt> {
    const server = net.createServer({ noDelay: true });
    const pt = new HostilePt(server, options);
    server.on('connection', (socket) => pt.serve(socket));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return pt;
  }

  get port(): number {
    return (this.server.address() as net.AddressInfo).port;
  }

  /** From now on every payment is served as a terminal should. */
  behave(): void {
    this.hostile = false;
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise((resolve) => this.server.close(resolve));
  }

  private serve(socket: net.Socket): void {
    this.connections++;
    this.sockets.add(socket);
    socket.on('error', () => undefined);
    socket.once('close', () => this.sockets.delete(socket));
    const session = new ZvtPtSession(new ZvtTcpChannel(socket), { answerTimeoutMs: 2000 });
    session.on('command', (command, handle) => {
      void this.answer(command, handle, socket).catch(() => handle.abandon());
    });
  }

  private async answer(
    command: CommandHandle['command'],
    handle: CommandHandle,
    socket: net.Socket,
  ): Promise<void> {
    await handle.accept();
    switch (command.type) {
      case 'authorisation': {
        const amount = readAmount(command.bmps);
        this.lastPayment = { amount, trace: ++this.trace };
        if (this.hostile) return this.flood(socket);
        await handle.send(this.statusInformation());
        await handle.send({ type: 'print-line', attribute: 0x81, text: 'APPROVED' });
        await handle.end({ type: 'completion', bmps: [] });
        return;
      }
      case 'repeat-receipt':
        await handle.send(this.statusInformation());
        await handle.end({ type: 'completion', bmps: [] });
        return;
      case 'status-enquiry':
        await handle.end({ type: 'completion', status: { terminalStatus: 0 }, bmps: [] });
        return;
      default:
        await handle.end({ type: 'completion', bmps: [] });
    }
  }

  /** The last payment's 04 0F, approved; before any, an earlier one's. */
  private statusInformation(): PtMessage {
    const last = this.lastPayment ?? { amount: 1, trace: this.trace };
    return {
      type: 'status-information',
      bmps: bmpsFrom({
        resultCode: 0,
        amount: last.amount,
        traceNumber: last.trace,
        receiptNumber: last.trace,
      }),
    };
  }

  private async flood(socket: net.Socket): Promise<void> {
    const { flood, textLength = 8000, intervalMs = 0, capBytes = 64 * 1024 * 1024 } = this.options;
    const bytes = messageBytes(floodMessage(flood, textLength));
    while (!socket.destroyed && socket.writable && this.sent.bytes < capBytes) {
      this.sent.messages++;
      this.sent.bytes += bytes.length;
      const drained = socket.write(bytes);
      if (intervalMs > 0) await new Promise((resolve) => setTimeout(resolve, intervalMs));
      else if (!drained) await untilDrainedOrGone(socket);
    }
    if (socket.destroyed || !socket.writable) this.floodsEndedByRegister++;
  }
}

function readAmount(bmps: readonly Bmp[]): number {
  const field = bmps.find((bmp) => bmp.tag === 0x04);
  return field?.format === 'bcd' ? Number(field.value) : 0;
}

function untilDrainedOrGone(socket: net.Socket): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      socket.off('drain', done);
      socket.off('close', done);
      resolve();
    };
    socket.once('drain', done);
    socket.once('close', done);
  });
}
