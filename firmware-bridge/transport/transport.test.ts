/** Opening devices: raw TCP to a reader behind a serial-to-network bridge, and the errors. */
import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { CardReaderFirmware } from '../emulator/card-reader-firmware.js';
import { ReaderEventLog } from '../reader/reader-events.js';
import { SerialCardReader } from '../reader/serial-card-reader.js';
import { openPort } from './open-port.js';
import { parseTcpAddress } from './tcp.js';

describe('transports', () => {
  it('parses tcp://HOST:PORT, IPv6 in brackets, and nothing else', () => {
    expect(parseTcpAddress('tcp://10.0.0.7:4001')).toEqual({ host: '10.0.0.7', port: 4001 });
    expect(parseTcpAddress('tcp://printer.local:9100/')).toEqual({
      host: 'printer.local',
      port: 9100,
    });
    expect(parseTcpAddress('tcp://[::1]:9100')).toEqual({ host: '::1', port: 9100 });
    expect(parseTcpAddress('tcp://host')).toBeUndefined();
    expect(parseTcpAddress('tcp://host:70000')).toBeUndefined();
    expect(parseTcpAddress('/dev/ttyUSB0')).toBeUndefined();
  });

  it('runs a payment over raw TCP (a reader behind ser2net)', async () => {
    const firmware = new CardReaderFirmware({ delayMs: 20 });
    const accepted: net.Socket[] = [];
    const server = net.createServer((socket) => {
      accepted.push(socket);
      firmware.serve(socket);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as net.AddressInfo;
    const line = await openPort(`tcp://127.0.0.1:${port}`);
    expect(line.description).toBe(`tcp://127.0.0.1:${port}`);
    const reader = SerialCardReader.connect(line.stream);
    const events = new ReaderEventLog(reader);
    await reader.start({
      transaction_id: 'tx-tcp-1',
      kind: 'PURCHASE',
      requested_amount: 4200,
      currency: 'EUR',
      pause_on_customer_identified: false,
    });
    const result = await events.waitFor('result', (r) => r.transaction_id === 'tx-tcp-1');
    expect(result).toMatchObject({ result_code: 'SUCCESS', details: { total_amount: 4200 } });
    await reader.close();
    await line.close();
    await line.close(); // twice is fine
    await firmware.close();
    for (const socket of accepted) socket.destroy(); // the link lets go of a port; its owner closes it
    await new Promise((resolve) => server.close(resolve));
  });

  it('closes a connection whose peer reads nothing, what is unsent cut off after a grace', async () => {
    let peer: net.Socket | undefined;
    const server = net.createServer((socket) => {
      peer = socket;
      socket.pause(); // a device that takes nothing
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as net.AddressInfo;
    const line = await openPort(`tcp://127.0.0.1:${port}`);
    // Fill the kernel's buffers both ways, and some more in the process.
    const chunk = Buffer.alloc(1024 * 1024);
    for (let i = 0; i < 64 && (line.stream as net.Socket).writableLength === 0; i++) {
      line.stream.write(chunk);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    expect((line.stream as net.Socket).writableLength).toBeGreaterThan(0);
    await line.close();
    expect(line.stream.destroyed).toBe(true);
    peer?.destroy();
    await new Promise((resolve) => server.close(resolve));
  }, 20_000);

  it('says what it could not open', async () => {
    await expect(openPort('/dev/no-such-reader')).rejects.toThrow(
      /^cannot open serial port \/dev\/no-such-reader: /,
    );
    await expect(openPort('tcp://nowhere')).rejects.toThrow(/not a TCP address: tcp:\/\/nowhere/);
    const closed = net.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const { port } = closed.address() as net.AddressInfo;
    await new Promise((resolve) => closed.close(resolve));
    await expect(openPort(`tcp://127.0.0.1:${port}`)).rejects.toThrow(
      new RegExp(`^cannot connect to tcp://127\\.0\\.0\\.1:${port}: .*ECONNREFUSED`),
    );
  });
});
