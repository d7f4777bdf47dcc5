import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createStreamPair, type StreamPair } from '../serial/stream-pair.js';
import { ManualTimers } from '../../common/testing/manual-timers.js';
import { fromHex, hexBytes } from './apdu.js';
import {
  authorisation,
  endOfDay,
  logOff,
  registration,
  statusEnquiry,
} from './command-builders.js';
import type { ZvtError } from './errors.js';
import { messageBytes, negativeAck, positiveAck } from './messages.js';
import { ZvtSerialLink } from './serial-link.js';
import { ZvtSession, type ZvtSessionOptions } from './session.js';
import { connectZvtTcp, ZvtTcpChannel } from './tcp-channel.js';
import { ScriptedPt } from './testing/scripted-pt.js';
import { APDU_VECTORS } from './testing/vectors.js';

const vector = (id: string) => APDU_VECTORS.find((v) => v.id === id)?.bytes as Buffer;

function overSerial(options: ZvtSessionOptions & { manual?: boolean } = {}) {
  const pair = createStreamPair();
  const timers = options.manual ? new ManualTimers() : undefined;
  const ecrLink = new ZvtSerialLink(pair.a, { timers });
  const session = new ZvtSession(ecrLink, { timers, ...options });
  const pt = new ScriptedPt(new ZvtSerialLink(pair.b, { timers }));
  return { pair, timers, session, pt };
}

const rejection = (promise: Promise<unknown>) =>
  promise.then(
    () => {
      throw new Error('expected a rejection');
    },
    (error: unknown) => error as ZvtError,
  );

/** Lets the line go quiet, then lets the earliest timer expire, `times` times. */
async function elapse(pair: StreamPair, timers: ManualTimers, times = 1): Promise<void> {
  for (let i = 0; i < times; i++) {
    await pair.idle();
    timers.fireNext();
  }
  await pair.idle();
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe('ZvtSession (ECR side)', () => {
  it('runs a payment: acceptance, 04 FF, 04 0F, print lines, completion (serial)', async () => {
    const { session, pt } = overSerial();
    const seen: string[] = [];
    session.on('intermediate-status', (m) => seen.push(`04FF ${m.status}`));
    session.on('status-information', () => seen.push('040F'));
    session.on('print-line', (m) => seen.push(`D1 ${m.text}`));
    const outcome = session.run(authorisation(1000));
    await pt.expect('06 01 07 04 00 00 00 00 10 00');
    expect(session.current).toBe('authorisation');
    await pt.send('80 00 00');
    await pt.tell(vector('V18'));
    await pt.tell('04 FF 01 0E');
    await pt.tell(vector('V23'));
    await pt.tell(`06 D1 05 00 ${Buffer.from('SALE').toString('hex')}`);
    await pt.tell('06 D1 01 81');
    await pt.tell('06 0F 00');
    const result = await outcome;
    expect(result).toMatchObject({
      command: 'authorisation',
      kind: 'completed',
      resultCode: 0,
      result: { amount: 2500, receiptNumber: 231, traceNumber: 975, cardName: 'MasterCard' },
    });
    expect(result.printLines.map((line) => line.text)).toEqual(['SALE', '']);
    expect(seen).toEqual(['04FF 10', '04FF 14', '040F', 'D1 SALE', 'D1 ']);
    expect(session.current).toBeUndefined();
  });

  it('reports a refusal (84 xx) and a decline ending in 06 1E', async () => {
    const { session, pt } = overSerial();
    const refused = session.run(endOfDay());
    await pt.expect('06 50 03 00 00 00');
    await pt.send('84 6B 00');
    expect(await refused).toMatchObject({
      kind: 'refused',
      resultCode: 0x6b,
      refusal: { code: 0x6b },
    });
    const declined = session.run(authorisation(3700));
    await pt.next();
    await pt.send('80 00 00');
    await pt.tell(vector('V20a'));
    await pt.tell('06 1E 01 05');
    expect(await declined).toMatchObject({
      kind: 'aborted',
      resultCode: 5,
      abort: { resultCode: 5 },
    });
  });

  it('takes a PT message instead of 80 00 00 for the acceptance (KZ) and reads 06 0F after 05 01', async () => {
    const { session, pt } = overSerial();
    const status = session.run(statusEnquiry());
    await pt.expect('05 01 03 00 00 00');
    await pt.tell(vector('V12'));
    expect(await status).toMatchObject({
      kind: 'completed',
      completion: { status: { softwareVersion: '2.14.15', terminalStatus: 0 } },
    });
  });

  it('ends log-off with its acceptance, and refuses a second command while one runs', async () => {
    const { session, pt } = overSerial();
    const first = session.run(logOff());
    expect(await rejection(session.run(registration()))).toMatchObject({
      code: 'BUSY',
      outcomeUnknown: false,
    });
    await pt.expect('06 02 00');
    await pt.send('80 00 00');
    expect(await first).toMatchObject({ kind: 'acknowledged' });
  });

  it('fails with T3_TIMEOUT when the PT never accepts, and T4_TIMEOUT when it falls silent', async () => {
    const serial = overSerial({ manual: true, t3Ms: 5000, t4Ms: 180_000 });
    const { session, pt, pair } = serial;
    const timers = serial.timers as ManualTimers;
    const t3 = rejection(session.run(authorisation(500)));
    await pt.next();
    await elapse(pair, timers, 1);
    expect(await t3).toMatchObject({
      code: 'T3_TIMEOUT',
      outcomeUnknown: true,
      disconnected: false,
    });
    expect(timers.now).toBe(5000);
    const t4 = rejection(session.run(authorisation(600)));
    await pt.next();
    await pt.send('80 00 00');
    await pair.idle();
    const before = timers.now;
    await elapse(pair, timers, 1); // T4 runs from the acceptance…
    await pt.tell('04 FF 01 0E'); // …and restarts with each PT message.
    await elapse(pair, timers, 2);
    expect(await t4).toMatchObject({ code: 'T4_TIMEOUT', outcomeUnknown: true });
    expect(timers.now - before).toBeGreaterThanOrEqual(180_000);
  });

  it('aborts a running payment with 06 B0; the PT ends it with 06 1E (V22)', async () => {
    const { session, pt } = overSerial();
    const outcome = session.run(authorisation(100020));
    await pt.next();
    await pt.send('80 00 00');
    await pt.tell('04 FF 01 0A');
    const aborting = session.abort();
    await pt.expect('06 B0 00');
    await pt.send('80 00 00');
    expect(await aborting).toBe(true);
    await pt.tell(vector('V22'));
    expect(await outcome).toMatchObject({ kind: 'aborted', resultCode: 0x6c });
  });

  it('answers 04 0F as the hook says (issue of goods: 84 9C 00, then a partial issue)', async () => {
    const answers = [
      negativeAck(0x9c),
      negativeAck(0x9d, [{ tag: 0x04, format: 'bcd', value: '000000002200' }]),
    ];
    const { session, pt } = overSerial({
      answerStatusInformation: () => answers.shift() ?? positiveAck(),
    });
    const outcome = session.run(authorisation(3300, { maxStatusInfos: 10 }));
    await pt.expect('06 01 09 04 00 00 00 00 33 00 02 0A');
    await pt.send('80 00 00');
    await pt.tell('04 0F 02 27 00', '84 9C 00');
    await pt.tell('04 0F 02 27 00', '84 9D 07 04 00 00 00 00 22 00');
    await pt.tell('06 0F 00');
    expect(await outcome).toMatchObject({ kind: 'completed', statusInformation: [{}, {}] });
  });

  it('answers PT messages outside a command, and undecodable ones, and reports them', async () => {
    const { session, pt } = overSerial();
    const unexpected: string[] = [];
    session.on('unexpected', (info) => unexpected.push(`${hexBytes(info.apdu)}: ${info.reason}`));
    await pt.tell('04 0F 02 27 00', '84 66 00');
    await pt.tell('04 FF 01 17', '80 00 00');
    await pt.tell('04 0F 02 07 00', '84 9A 00');
    await pt.tell('06 01 07 04 00 00 00 00 10 00', '84 83 00');
    expect(unexpected).toEqual([
      '04 0F 02 27 00: status-information outside a command',
      '04 FF 01 17: intermediate-status outside a command',
      '04 0F 02 07 00: undecodable (unknown-bmp at 3: BMP 07 is not in the table: its length is unknown)',
      '06 01 07 04 00 00 00 00 10 00: authorisation outside a command',
    ]);
  });

  it('drops the line when the PT sends more than maxMessages outside a command', async () => {
    const { session, pt } = overSerial({ limits: { maxMessages: 3 } });
    const closed = new Promise<ZvtError | undefined>((resolve) => session.once('close', resolve));
    for (let i = 0; i < 3; i++) await pt.tell('04 FF 01 17', '80 00 00');
    // A command starts the count again.
    const ended = session.run(logOff());
    await pt.next();
    await pt.send('80 00 00');
    expect(await ended).toMatchObject({ kind: 'acknowledged' });
    for (let i = 0; i < 3; i++) await pt.tell('04 FF 01 17', '80 00 00');
    await pt.send('04 FF 01 17');
    expect(await closed).toMatchObject({ code: 'LIMIT_EXCEEDED', disconnected: true });
    expect(session.channel.closed).toBe(true);
    expect(await rejection(session.run(logOff()))).toMatchObject({ code: 'CLOSED' });
  });

  it('bounds a command by messages, bytes and total time; T4 restarts do not extend it', async () => {
    const limits = { maxMessages: 4, maxBytes: 64, maxCommandMs: 1000 };
    const tooMany = overSerial({ limits });
    let outcome = rejection(tooMany.session.run(authorisation(1200)));
    await tooMany.pt.next();
    await tooMany.pt.send('80 00 00');
    // Every APDU of the PT counts, its 80 00 00 too: three more are within the four.
    for (let i = 0; i < 3; i++) await tooMany.pt.tell('04 FF 01 17');
    await tooMany.pt.send('04 FF 01 17');
    expect(await outcome).toMatchObject({
      code: 'LIMIT_EXCEEDED',
      outcomeUnknown: true,
      message: expect.stringMatching(/more than 4 messages.*authorisation/),
    });

    const tooLarge = overSerial({ limits });
    outcome = rejection(tooLarge.session.run(authorisation(1200)));
    await tooLarge.pt.next();
    await tooLarge.pt.send('80 00 00');
    await tooLarge.pt.send(
      messageBytes({ type: 'print-line', attribute: 0, text: 'X'.repeat(80) }),
    );
    expect(await outcome).toMatchObject({
      code: 'LIMIT_EXCEEDED',
      message: expect.stringMatching(/more than 64 bytes/),
    });

    const tooLong = overSerial({
      limits: { ...limits, maxMessages: 100 },
      t4Ms: 400,
      manual: true,
    });
    const timers = tooLong.timers!;
    outcome = rejection(tooLong.session.run(authorisation(1200)));
    await tooLong.pt.next();
    await tooLong.pt.send('80 00 00');
    for (let i = 0; i < 4; i++) {
      await tooLong.pt.tell('04 FF 01 17');
      timers.advance(300); // within T4 each time, past the ceiling together
    }
    expect(await outcome).toMatchObject({
      code: 'LIMIT_EXCEEDED',
      message: expect.stringMatching(/ran for 1000 ms/),
    });
  });

  it('fails a running command when the line goes away: the outcome is unknown', async () => {
    const { session, pt, pair } = overSerial();
    const outcome = rejection(session.run(authorisation(1200)));
    await pt.next();
    await pt.send('80 00 00');
    await pair.idle();
    pair.b.destroy();
    expect(await outcome).toMatchObject({
      code: 'PORT_CLOSED',
      outcomeUnknown: true,
      disconnected: true,
    });
    expect(await rejection(session.run(authorisation(1)))).toMatchObject({ code: 'CLOSED' });
  });

  it('runs a registration and a payment over a real TCP socket', async () => {
    const server = net.createServer();
    const accepted: net.Socket[] = [];
    const channels: ZvtTcpChannel[] = [];
    server.on('connection', (socket) => {
      accepted.push(socket);
      channels.push(new ZvtTcpChannel(socket));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    cleanups.push(async () => {
      for (const socket of accepted) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    });
    const connection = await connectZvtTcp({
      host: '127.0.0.1',
      port: (server.address() as net.AddressInfo).port,
    });
    cleanups.push(connection.close);
    const session = new ZvtSession(connection.channel);
    while (channels.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    const pt = new ScriptedPt(channels[0] as ZvtTcpChannel);
    const registered = session.run(registration());
    await pt.expect('06 00 06 00 00 00 BE 09 78');
    // Acceptance and the completion in one TCP write, as PZ sees it.
    await pt.send(Buffer.concat([fromHex('80 00 00'), vector('V14')]));
    await pt.expect('80 00 00');
    expect(await registered).toMatchObject({
      kind: 'completed',
      completion: { bmps: [{ tag: 0x19, value: 0x10 }, {}, {}] },
    });
    const paid = session.run(authorisation(154));
    await pt.expect('06 01 07 04 00 00 00 00 01 54');
    await pt.send('80 00 00');
    await pt.tell(
      messageBytes({ type: 'status-information', bmps: [{ tag: 0x27, format: 'byte', value: 0 }] }),
    );
    await pt.tell('06 0F 00');
    expect(await paid).toMatchObject({ kind: 'completed', resultCode: 0 });
  });
});
