import net from 'node:net';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { encodeApdu, fromHex, hexBytes } from './apdu.js';
import type { ZvtError } from './errors.js';
import { connectZvtTcp, ZvtTcpChannel } from './tcp-channel.js';
import { ApduSplitter, type SplitterDrop } from './tcp-splitter.js';
import { PROPERTY, bytes } from './testing/arbitraries.js';
import { APDU_VECTORS } from './testing/vectors.js';

function split(chunks: Buffer[], maxApduLength?: number) {
  const splitter = new ApduSplitter({ maxApduLength });
  const apdus: Buffer[] = [];
  const drops: SplitterDrop[] = [];
  splitter.on('data', (apdu: Buffer) => apdus.push(apdu));
  splitter.on('drop', (info: SplitterDrop) => drops.push(info));
  for (const chunk of chunks) splitter._transform(chunk, 'binary', () => {});
  splitter._flush(() => {});
  return { apdus, drops };
}

/** A listening PT stand-in on 127.0.0.1: each accepted socket as a channel. */
async function listen() {
  const accepted: ZvtTcpChannel[] = [];
  const sockets: net.Socket[] = [];
  const server = net.createServer((socket) => {
    sockets.push(socket);
    accepted.push(new ZvtTcpChannel(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  const next = async () => {
    while (accepted.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    return accepted.shift() as ZvtTcpChannel;
  };
  const close = async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => server.close(resolve));
  };
  return { port, next, sockets, close };
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe('ZVT over TCP', () => {
  it('splits APDUs by their length field, several per read or one over many reads', () => {
    const block = APDU_VECTORS.find((vector) => vector.id === 'V34')?.bytes as Buffer;
    const wire = Buffer.concat([fromHex('80 00 00 04 FF 01 17'), block, fromHex('06 0F 00')]);
    const chunks = Array.from({ length: 12 }, (_, i) => wire.subarray(i * 100, (i + 1) * 100));
    const { apdus, drops } = split([...chunks, wire.subarray(1200)]);
    expect(apdus.map((apdu) => hexBytes(apdu.subarray(0, 3)))).toEqual([
      '80 00 00',
      '04 FF 01',
      '06 D3 FF',
      '06 0F 00',
    ]);
    expect(apdus[2]).toEqual(block);
    expect(drops).toEqual([]);
  });

  it('keeps the surplus of a read for the next APDU (PZ: 80 00 00 01 02)', () => {
    const { apdus, drops } = split([fromHex('80 00 00 01 02')]);
    expect(apdus).toEqual([fromHex('80 00 00')]);
    expect(drops).toEqual([{ reason: 'truncated', bytes: 2 }]);
  });

  it('skips an APDU over the size limit and stays in step', () => {
    const big = encodeApdu({ cls: 0x06, ins: 0xd3, data: Buffer.alloc(600, 0x41) });
    const wire = Buffer.concat([big, fromHex('06 0F 00')]);
    const { apdus, drops } = split(
      [wire.subarray(0, 4), wire.subarray(4, 300), wire.subarray(300)],
      512,
    );
    expect(apdus).toEqual([fromHex('06 0F 00')]);
    expect(drops).toEqual([{ reason: 'too-large', bytes: 605 }]);
  });

  it('finds the same APDUs in any chunking (property)', () => {
    const apdu = fc
      .tuple(fc.integer({ min: 0, max: 255 }), fc.integer({ min: 0, max: 255 }), bytes(0, 400))
      .map(([cls, ins, data]) => encodeApdu({ cls, ins, data }));
    fc.assert(
      fc.property(
        fc.array(apdu, { minLength: 1, maxLength: 8 }),
        fc.integer({ min: 1, max: 97 }),
        (apdus, size) => {
          const wire = Buffer.concat(apdus);
          const chunks: Buffer[] = [];
          for (let at = 0; at < wire.length; at += size) chunks.push(wire.subarray(at, at + size));
          expect(split(chunks).apdus).toEqual(apdus);
        },
      ),
      PROPERTY,
    );
  });

  it('carries APDUs both ways on a real socket (connectZvtTcp)', async () => {
    const pt = await listen();
    cleanups.push(pt.close);
    const connection = await connectZvtTcp({ host: '127.0.0.1', port: pt.port });
    cleanups.push(connection.close);
    expect(connection.port.description).toBe(`tcp://127.0.0.1:${pt.port}`);
    const server = await pt.next();
    const atPt: string[] = [];
    const atEcr: string[] = [];
    server.on('apdu', (apdu) => atPt.push(hexBytes(apdu)));
    connection.channel.on('apdu', (apdu) => atEcr.push(hexBytes(apdu)));
    await connection.channel.send(fromHex('06 00 06 00 00 00 BA 09 78'));
    const block = APDU_VECTORS.find((vector) => vector.id === 'V34')?.bytes as Buffer;
    await server.send(fromHex('80 00 00'));
    // A long print block written in 10 pieces, as PZ's test receives one.
    for (let i = 0; i < 10; i++) {
      pt.sockets[0]?.write(block.subarray(i * 113, (i + 1) * 113));
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    await server.send(fromHex('06 0F 00'));
    while (atEcr.length < 3 || atPt.length < 1)
      await new Promise((resolve) => setTimeout(resolve, 5));
    expect(atPt).toEqual(['06 00 06 00 00 00 BA 09 78']);
    expect(atEcr).toEqual(['80 00 00', hexBytes(block), '06 0F 00']);
  });

  it('reports the peer closing the connection, and refuses to send after it', async () => {
    const pt = await listen();
    cleanups.push(pt.close);
    const connection = await connectZvtTcp({ host: '127.0.0.1', port: pt.port });
    cleanups.push(connection.close);
    await pt.next();
    const closed = new Promise<ZvtError | undefined>((resolve) =>
      connection.channel.once('close', resolve),
    );
    pt.sockets[0]?.destroy();
    expect(await closed).toMatchObject({ code: 'PORT_CLOSED', disconnected: true });
    await expect(connection.channel.send(fromHex('80 00 00'))).rejects.toMatchObject({
      code: 'CLOSED',
    });
  });
});
