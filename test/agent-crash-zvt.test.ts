/**
 * The agent killed with SIGKILL at each step of a ZVT payment and started again, as a real
 * process (`tps agent --config FILE`, `reader.protocol: zvt`) talking to the emulated ZVT
 * terminal over a pseudo-terminal with the ZVT serial framing, like a terminal on RS-232.
 * The terminal lives in the test process, so it goes on while the agent is dead: it may
 * finish the payment meanwhile, and its result is lost on the line. After the restart, what
 * the relay is told must be what the terminal recorded in its journal, and no payment may
 * be charged twice.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { outcomeOfResultCode } from '../firmware-bridge/emulator/zvt/terminal-outcomes.js';
import {
  InMemoryTerminalMemory,
  type JournalEntry,
} from '../firmware-bridge/emulator/zvt/terminal-memory.js';
import { serveSerial } from '../firmware-bridge/emulator/zvt/terminal-server.js';
import { ZvtTerminalEmulator } from '../firmware-bridge/emulator/zvt/zvt-terminal.js';
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

const TERMINAL = 'T-crash-zvt';

let pty: PtyPair | undefined;
let skipReason: string | undefined;
try {
  pty = await openPty();
} catch (error) {
  skipReason = (error as Error).message;
}

describe.skipIf(!pty)(
  `agent killed mid-payment on a ZVT terminal${skipReason ? ` (skipped: ${skipReason})` : ''}`,
  () => {
    let broker: TestBroker;
    let relay: TestRelay;
    let terminal: ZvtTerminalEmulator;
    let configFile: string;
    let child: ChildProcess | undefined;
    let output = '';
    const memory = new InMemoryTerminalMemory();

    beforeAll(async () => {
      broker = await startAedes();
      relay = new TestRelay(broker.url);
      await relay.connected();
      // The terminal waits 1 s (not T3's 5 s) for a dead ECR's answers: shorter tests.
      terminal = new ZvtTerminalEmulator({
        memory,
        delayMs: 400,
        session: { answerTimeoutMs: 1000 },
      });
      serveSerial(terminal, pty!.stream);
      const dir = tempDir('crash-zvt');
      configFile = writeConfig(dir, {
        terminal_id: TERMINAL,
        broker: { url: broker.url, username: TERMINAL, password: 'agent-secret' },
        reader: { protocol: 'zvt', port: pty!.path, baud_rate: 115_200 },
        data_dir: path.join(dir, 'data'),
        log_level: process.env.TEST_LOG ? 'debug' : 'warn',
      });
      await spawnAgent();
    });

    afterAll(async () => {
      await kill();
      await relay?.close();
      await broker?.stop();
      await terminal?.close();
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

    /** The terminal's payments of an amount (each test uses its own amount). */
    const payments = (amount: number): JournalEntry[] =>
      memory.all().filter((e) => e.kind === 'PAYMENT' && e.amount === amount);
    const reversalsOf = (payment: JournalEntry): JournalEntry[] =>
      memory.all().filter((e) => e.kind === 'REVERSAL' && e.reverses === payment.seq);

    /** The relay's final report is the terminal's journal entry; at most one payment ran. */
    function expectTruth(id: string, amount: number): void {
      const ran = payments(amount);
      expect(ran.length, JSON.stringify(memory.all())).toBeLessThanOrEqual(1);
      const final = relay.final(id);
      const entry = ran[0];
      if (!entry) {
        expect(final).toMatchObject({ phase: 'CANCELLED' });
      } else {
        expect(entry.phase).toBe('DONE');
        expect(final).toMatchObject({
          phase: 'COMPLETED',
          result_code: outcomeOfResultCode(entry.result_code!),
        });
        expect(final?.details?.reference).toMatch(
          new RegExp(
            `-${String(entry.receipt_number).padStart(4, '0')}-${String(entry.trace_number).padStart(6, '0')}$`,
          ),
        );
      }
      expect(relay.transaction(id).filter((r) => r.phase !== 'CUSTOMER_IDENTIFIED')).toHaveLength(
        1,
      );
    }

    it('killed while the terminal runs a payment: it finishes meanwhile, the restarted agent reports what it recorded', async () => {
      relay.send(TERMINAL, startCommand('zvt-crash-1', { requested_amount: 1101 }));
      await relay.until(() => payments(1101).length === 1, 5000, `terminal started\n${output}`);
      await kill();
      await relay.until(() => payments(1101)[0]?.phase === 'DONE', 15_000, 'terminal done');
      await spawnAgent();
      await relay.until(
        () => relay.final('zvt-crash-1') !== undefined,
        40_000,
        `result\n${output}`,
      );
      if (process.env.TEST_LOG) {
        const fsx = await import('node:fs');
        const dataDir = JSON.parse(fsx.readFileSync(configFile, 'utf8')).data_dir;
        console.log(
          'DRIVER',
          JSON.stringify(
            JSON.parse(fsx.readFileSync(path.join(dataDir, 'zvt-reader.json'), 'utf8')),
          ),
        );
        console.log('PT', JSON.stringify(memory.all()));
        console.log('RELAY', JSON.stringify(relay.transaction('zvt-crash-1')));
      }
      expectTruth('zvt-crash-1', 1101);
      expect(relay.final('zvt-crash-1')).toMatchObject({ result_code: 'SUCCESS' });
    }, 60_000);

    it('killed while the terminal declines: the decline is reported, nothing charged', async () => {
      relay.send(TERMINAL, startCommand('zvt-crash-2', { requested_amount: 100006 }));
      await relay.until(() => payments(100006).length === 1, 5000, 'terminal started');
      await kill();
      await relay.until(() => payments(100006)[0]?.phase === 'DONE', 15_000, 'terminal done');
      await spawnAgent();
      await relay.until(
        () => relay.final('zvt-crash-2') !== undefined,
        40_000,
        `result\n${output}`,
      );
      expectTruth('zvt-crash-2', 100006);
      expect(relay.final('zvt-crash-2')).toMatchObject({ result_code: 'DECLINED_BY_ISSUER' });
    }, 60_000);

    it('killed while the terminal reverses a payment: reversed once, reported once', async () => {
      relay.send(TERMINAL, startCommand('zvt-crash-3', { requested_amount: 1303 }));
      await relay.until(() => relay.final('zvt-crash-3') !== undefined, 8000, 'result');
      expect(relay.final('zvt-crash-3')).toMatchObject({ result_code: 'SUCCESS' });
      const cancel = command('transaction.cancel', { transaction_id: 'zvt-crash-3' });
      relay.send(TERMINAL, cancel);
      await relay.until(() => relay.ack(cancel.command_id) !== undefined, 5000, 'cancel acked');
      await kill();
      await spawnAgent();
      await relay.until(
        () => relay.transaction('zvt-crash-3').some((r) => r.phase === 'CANCELLED'),
        40_000,
        `reversal reported\n${output}`,
      );
      const [payment] = payments(1303);
      const reversals = reversalsOf(payment!).filter((r) => r.approved);
      expect(reversals, JSON.stringify(memory.all())).toHaveLength(1);
      expect(relay.transaction('zvt-crash-3').at(-1)).toMatchObject({
        phase: 'CANCELLED',
        result_code: 'REVERSED',
      });
    }, 60_000);

    it('killed at arbitrary moments after a start is sent: every outcome is what the terminal recorded, none charged twice', async () => {
      for (const [index, delay] of [0, 60, 200, 450, 800].entries()) {
        const id = `zvt-crash-r${index}`;
        const amount = 2000 + index;
        relay.send(TERMINAL, startCommand(id, { requested_amount: amount }));
        await new Promise((resolve) => setTimeout(resolve, delay));
        await kill();
        await spawnAgent();
        // A terminal still finishing for the dead agent is asked again at the agent's next
        // recovery round (15 s), never read from its stale messages.
        await relay.until(
          () => relay.final(id) !== undefined,
          40_000,
          `result of ${id}\n${output}`,
        );
        expectTruth(id, amount);
      }
    }, 200_000);
  },
);
