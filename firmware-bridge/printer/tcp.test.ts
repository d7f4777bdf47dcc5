import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualTimers } from '../../common/testing/manual-timers.js';
import {
  startEmulatedNetworkPrinter,
  type EmulatedNetworkPrinter,
} from './emulated-network-printer.js';
import { PrinterError } from './errors.js';
import { ReceiptPrinter } from './printer.js';
import { connectTcpPrinter, parseTcpAddress } from './tcp.js';
import { checkerboard } from './testing/images.js';

let server: EmulatedNetworkPrinter | undefined;
const sockets: net.Socket[] = [];
afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy();
  await server?.close();
  server = undefined;
});

async function connect(): Promise<net.Socket> {
  server ??= await startEmulatedNetworkPrinter();
  const socket = await connectTcpPrinter({ host: server.host, port: server.port });
  sockets.push(socket);
  return socket;
}

describe('raw TCP transport', () => {
  it('serves the emulated printer on a free port, reachable by its url', async () => {
    server = await startEmulatedNetworkPrinter();
    expect(server.port).toBeGreaterThan(0);
    expect(server.url).toBe(`tcp://127.0.0.1:${server.port}`);
    expect(parseTcpAddress(server.url)).toEqual({ host: '127.0.0.1', port: server.port });
  });

  it('answers status queries in well under 10 ms a round trip (Nagle off)', async () => {
    const printer = new ReceiptPrinter(await connect());
    await printer.status();
    const started = performance.now();
    for (let i = 0; i < 20; i++) await printer.status();
    // Each status() is 3 sequential query/answer round trips.
    const perRoundTrip = (performance.now() - started) / 60;
    expect(perRoundTrip).toBeLessThan(10);
  });

  it('shares one printer between connections, as one device', async () => {
    const first = new ReceiptPrinter(await connect());
    const second = new ReceiptPrinter(await connect());
    await first.print(checkerboard(16, 2));
    server!.printer.setPaperOut(true);
    const error = await second.print(checkerboard(16, 2)).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'PAPER_OUT', jobSent: false });
    expect(server!.printer.jobs).toHaveLength(1);
  });

  it('reports the printer closing the connection as DISCONNECTED', async () => {
    const socket = await connect();
    const printer = new ReceiptPrinter(socket);
    server!.printer.answersRealtimeStatus = false;
    const pending = printer.status().catch((e: unknown) => e);
    await new Promise((resolve) => setTimeout(resolve, 20));
    await server!.close();
    server = undefined;
    expect(await pending).toMatchObject({ code: 'DISCONNECTED', disconnected: true });
  });

  it('fails to connect to a closed port with DISCONNECTED', async () => {
    const probe = net.createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const { port } = probe.address() as net.AddressInfo;
    await new Promise((resolve) => probe.close(resolve));
    const error = await connectTcpPrinter({ host: '127.0.0.1', port }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PrinterError);
    expect(error).toMatchObject({ code: 'DISCONNECTED', disconnected: true });
  });

  it('gives up connecting after connectTimeoutMs (manual timers)', async () => {
    const timers = new ManualTimers();
    // A documentation address (TEST-NET-1) that never answers.
    const connecting = connectTcpPrinter({ host: '192.0.2.1', connectTimeoutMs: 3000, timers });
    timers.fireNext();
    const error = await connecting.catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'TIMEOUT', disconnected: true });
    expect(timers.now).toBe(3000);
  });

  it('parses printer addresses', () => {
    expect(parseTcpAddress('tcp://printer.local:9100')).toEqual({
      host: 'printer.local',
      port: 9100,
    });
    expect(parseTcpAddress('tcp://10.0.0.7')).toEqual({ host: '10.0.0.7', port: 9100 });
    expect(parseTcpAddress('10.0.0.7:9101')).toEqual({ host: '10.0.0.7', port: 9101 });
    expect(parseTcpAddress('tcp://[fe80::1]:9100')).toEqual({ host: 'fe80::1', port: 9100 });
    expect(parseTcpAddress('tcp://host:70000')).toBeUndefined();
    expect(parseTcpAddress('tcp://')).toBeUndefined();
    expect(parseTcpAddress('tcp://a:b')).toBeUndefined();
  });
});
