/**
 * The agent killed with SIGKILL at each step of a payment and started again, as a real
 * process (`tps agent --config FILE`) talking to the emulated card reader over a
 * pseudo-terminal, like hardware. The reader lives in the test process, so it goes on
 * while the agent is dead (it may finish the payment meanwhile, and its result is lost on
 * the line). After the restart, what the relay is told must be what the reader recorded,
 * and no transaction may run twice.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CardReaderFirmware } from '../firmware-bridge/emulator/card-reader-firmware.js';
import { InMemoryReaderMemory } from '../firmware-bridge/emulator/reader-memory.js';
import { openPty, type PtyPair } from '../firmware-bridge/transport/pty.js';
import {
  TestRelay,
  command,
  startAedes,
  startCommand,
  tempDir,
  writeConfig,
  type TestBroker,
} from './agent-harness.js';
import { repoRoot as root, tpsArgv } from './support/tps-command.js';

const TERMINAL = 'T-crash';

let pty: PtyPair | undefined;
let skipReason: string | undefined;
try {
  pty = await openPty();
} catch (error) {
  skipReason = (error as Error).message;
}

describe.skipIf(!pty)(
  `agent killed mid-payment${skipReason ? ` (skipped: ${skipReason})` : ''}`,
  () => {
    let broker: TestBroker;
    let relay: TestRelay;
    let firmware: CardReaderFirmware;
    let configFile: string;
    let child: ChildProcess | undefined;
    let output = '';
    const memory = new InMemoryReaderMemory();
    /** Sequences the reader gave each transaction id: more than one would be a second run. */
    const runs = new Map<string, Set<number>>();

    beforeAll(async () => {
      broker = await startAedes();
      relay = new TestRelay(broker.url);
      await relay.connected();
      firmware = new CardReaderFirmware({ memory, delayMs: 300, battery: false });
      firmware.on('record', (record) => {
        if (record.sequence > 0)
          runs.set(
            record.transaction_id,
            (runs.get(record.transaction_id) ?? new Set()).add(record.sequence),
          );
      });
      firmware.serve(pty!.stream);
      const dir = tempDir('crash');
      configFile = writeConfig(dir, {
        terminal_id: TERMINAL,
        broker: { url: broker.url, username: TERMINAL, password: 'agent-secret' },
        reader: { port: pty!.path },
        data_dir: path.join(dir, 'data'),
        log_level: 'warn',
      });
      await spawnAgent();
    });

    afterAll(async () => {
      await kill();
      await relay?.close();
      await broker?.stop();
      await firmware?.close();
      await pty?.close();
    });

    async function spawnAgent(): Promise<void> {
      const before = relay.presence.filter((p) => p.connected).length;
      child = spawn(process.execPath, tpsArgv(['agent', '--config', configFile]), {
        cwd: root,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
      child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
      await relay.until(
        () => relay.presence.filter((p) => p.connected).length > before,
        15_000,
        `agent up\n${output}`,
      );
    }

    async function kill(): Promise<void> {
      const current = child;
      child = undefined;
      if (!current || current.exitCode !== null || current.signalCode !== null) return;
      await new Promise((resolve) => {
        current.once('exit', resolve);
        current.kill('SIGKILL');
      });
    }

    /** The relay's final report equals the reader's own record (or CANCELLED when it has none). */
    function expectTruth(id: string): void {
      const record = memory.get(id);
      const final = relay.final(id);
      if (!record || record.sequence === 0) {
        expect(final).toMatchObject({ phase: 'CANCELLED' });
      } else {
        expect(final).toMatchObject({ phase: record.phase, result_code: record.result_code });
        if (record.phase === 'COMPLETED')
          expect(final?.details?.reference).toBe(record.details?.reference);
      }
      expect(runs.get(id)?.size ?? 0).toBeLessThanOrEqual(1);
      expect(relay.transaction(id).filter((r) => r.phase !== 'CUSTOMER_IDENTIFIED')).toHaveLength(
        1,
      );
    }

    it('killed while the reader runs a payment: it finishes meanwhile, the restarted agent reports its result', async () => {
      const start = startCommand('tx-crash-1');
      relay.send(TERMINAL, start);
      await relay.until(
        () => memory.get('tx-crash-1')?.phase === 'IN_PROGRESS',
        5000,
        'reader started',
      );
      await kill();
      await relay.until(() => memory.get('tx-crash-1')?.phase === 'COMPLETED', 5000, 'reader done');
      await spawnAgent();
      await relay.until(() => relay.final('tx-crash-1') !== undefined, 8000, `result\n${output}`);
      expectTruth('tx-crash-1');
    });

    it('killed while paused at customer identification, continued after the restart', async () => {
      relay.send(TERMINAL, startCommand('tx-crash-2', { pause_on_customer_identified: true }));
      await relay.until(() => relay.transaction('tx-crash-2').length === 1);
      await kill();
      await spawnAgent();
      relay.send(
        TERMINAL,
        command('transaction.continue', { transaction_id: 'tx-crash-2', requested_amount: 1100 }),
      );
      await relay.until(() => relay.final('tx-crash-2') !== undefined, 8000, `result\n${output}`);
      expectTruth('tx-crash-2');
      expect(relay.final('tx-crash-2')?.details?.total_amount).toBe(1100);
    });

    it('killed right after acknowledging a continue', async () => {
      relay.send(TERMINAL, startCommand('tx-crash-3', { pause_on_customer_identified: true }));
      await relay.until(() => relay.transaction('tx-crash-3').length === 1);
      const resume = command('transaction.continue', { transaction_id: 'tx-crash-3' });
      relay.send(TERMINAL, resume);
      await relay.until(() => relay.ack(resume.command_id) !== undefined);
      await kill();
      await spawnAgent();
      await relay.until(() => relay.final('tx-crash-3') !== undefined, 8000, `result\n${output}`);
      expectTruth('tx-crash-3');
    });

    it('killed with reports not yet acknowledged: they are sent again, applied once, seq goes on', async () => {
      relay.holdAcks = true;
      relay.send(TERMINAL, startCommand('tx-crash-4'));
      await relay.until(() => relay.final('tx-crash-4') !== undefined, 5000, 'result');
      const seq = relay.received.find(
        (m) => m.report.type === 'transaction' && m.report.transaction_id === 'tx-crash-4',
      )!.seq;
      await kill();
      relay.holdAcks = false;
      await spawnAgent();
      await relay.until(
        () => relay.received.filter((m) => m.seq === seq).length >= 2,
        8000,
        'resent report',
      );
      relay.send(TERMINAL, startCommand('tx-crash-5'));
      await relay.until(() => relay.final('tx-crash-5') !== undefined, 5000, 'next result');
      expectTruth('tx-crash-4');
      expect(Math.max(...relay.applied.map((m) => m.seq))).toBeGreaterThan(seq);
    });

    it('killed at arbitrary moments after a start is sent: every outcome is what the reader recorded, none ran twice', async () => {
      for (const [index, delay] of [0, 40, 120, 350].entries()) {
        const id = `tx-crash-r${index}`;
        relay.send(TERMINAL, startCommand(id));
        await new Promise((resolve) => setTimeout(resolve, delay));
        await kill();
        await spawnAgent();
        await relay.until(() => relay.final(id) !== undefined, 8000, `result of ${id}\n${output}`);
        expectTruth(id);
      }
    });
  },
);
