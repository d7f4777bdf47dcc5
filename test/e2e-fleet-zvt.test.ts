/**
 * Remote diagnostics and fleet facts of an agent with a ZVT terminal, with real processes:
 * the relay (`tps cloud`), an agent (`tps agent`, the emulated ZVT terminal in process) and
 * the operator's `tps fleet` commands.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TerminalCreateResponse } from '../protocol/api.js';
import {
  eventually,
  posFor,
  registerTerminal,
  runTpsToEnd,
  startAgentProcess,
  startRelayChild,
  writeAgentConfig,
  type RelayChild,
  type TpsChild,
} from './support/e2e-parts.js';

const ACCOUNT = { username: 'e2e-zvt-account', password: 'e2e-zvt-password-1' };
const ZVT_PASSWORD = '314159';

describe('e2e: a ZVT terminal diagnosed from afar', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'tps-e2e-fleet-zvt-'));
  let relay: RelayChild;
  let agent: TpsChild | undefined;
  let terminal: TerminalCreateResponse;
  const fleet = (...args: string[]) =>
    runTpsToEnd(['fleet', ...args], {
      TPS_BASE_URL: relay.baseUrl,
      TPS_ACCOUNT_USERNAME: ACCOUNT.username,
      TPS_ACCOUNT_PASSWORD: ACCOUNT.password,
    });
  const context = () => `--- agent ---\n${agent?.output() ?? ''}\n--- relay ---\n${relay.output()}`;
  const pos = () => posFor(() => relay.baseUrl, terminal);

  beforeAll(async () => {
    relay = await startRelayChild({
      TPS_DATA_DIR: path.join(dir, 'relay-data'),
      TPS_ACCOUNT_USERNAME: ACCOUNT.username,
      TPS_ACCOUNT_PASSWORD: ACCOUNT.password,
      TPS_DEFAULT_SIMULATOR: 'false',
    });
    terminal = await registerTerminal(relay.baseUrl, ACCOUNT, {});
    const configFile = writeAgentConfig(dir, terminal, {
      reader: {
        protocol: 'zvt',
        password: ZVT_PASSWORD,
        emulated: { state_file: 'zvt-terminal.jsonl', delay_ms: 50 },
      },
      heartbeat_s: 1,
    });
    agent = startAgentProcess(configFile);
    await eventually(
      () => pos()('/terminal/status', {}),
      (r) => r.body?.status?.connected === true,
      { ms: 20_000, what: 'the agent to connect', context },
    );
  }, 40_000);

  afterAll(async () => {
    await agent?.stop();
    await relay?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('traces the APDUs of the last payment without a secret or a card number', async () => {
    const paid = await pos()('/transaction/purchase', {
      external_id: 'zvt-traced-1',
      requested_amount: 4200,
      currency: 'EUR',
      wait_seconds: 20,
    });
    expect(paid.body.transaction?.result_code, JSON.stringify(paid.body)).toBe('SUCCESS');
    const card = paid.body.transaction.payment_method_details ?? {};
    await pos()('/transaction/confirm', { external_id: 'zvt-traced-1', result_code: 'SUCCESS' });

    const trace = await fleet('trace', '--terminal', terminal.terminal_id, '--json');
    expect(trace.code, trace.stderr).toBe(0);
    const frames = JSON.parse(trace.stdout).trace.frames as Array<{
      direction: string;
      text: string;
    }>;
    expect(frames[0], trace.stdout).toMatchObject({
      direction: 'host→reader',
      text: expect.stringMatching(/^06 01 authorisation {2}04 amount=4200/),
    });
    expect(
      frames.some((f) => f.direction === 'reader→host' && /^04 0F status information/.test(f.text)),
    ).toBe(true);

    const human = await fleet('trace', '--terminal', terminal.terminal_id);
    const logs = await fleet('logs', '--terminal', terminal.terminal_id, '--json');
    const everything = [trace.stdout, human.stdout, logs.stdout].join('\n');
    for (const secret of [
      ZVT_PASSWORD,
      terminal.agent.password,
      card.card_number_merchant,
      card.card_number_customer,
    ].filter((s): s is string => typeof s === 'string' && s.length > 0)) {
      expect(everything, `found ${secret}`).not.toContain(secret);
    }
    expect(everything.replace(/\\?"time\\?":\d{13}/g, '')).not.toMatch(/\d{12,}/);
  }, 60_000);

  it('shows the terminal software version as the reader firmware', async () => {
    const facts = await eventually(
      () => fleet('facts', '--terminal', terminal.terminal_id, '--json'),
      (run) => run.code === 0 && JSON.parse(run.stdout).terminals[0]?.reader_firmware !== null,
      { ms: 20_000, what: 'the firmware in the facts', context },
    );
    expect(JSON.parse(facts.stdout).terminals[0]).toMatchObject({
      reader_protocol: 'zvt',
      reader_model: 'emulated ZVT terminal (generic profile)',
      reader_firmware: 'TPS-ZVT-EMULATOR-1.0',
    });
  }, 40_000);
});
