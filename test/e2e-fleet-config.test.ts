/**
 * Fleet configuration and diagnostics with real processes: the relay (`tps cloud`), an
 * agent (`tps agent`, emulated reader) and the operator's `tps fleet` commands.
 *
 * - A configuration set for the terminal is applied at once and reported; `tps fleet
 *   config get` shows it in sync, and the agent keeps it across its restart.
 * - One the reader does not take (a ZVT profile for a native reader) is reported REJECTED
 *   with the reason, and the last good one stays in force.
 * - A reader setting waits for the terminal to be idle, reopens the reader, and the
 *   terminal pays with it.
 * - Doctor, logs and trace fetched from the running agent carry no secret and no card
 *   number; an agent that is gone gets 409 TERMINAL_OFFLINE.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FleetConfigResponse, type TerminalConfigView } from '../protocol/index.js';
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

const ACCOUNT = { username: 'e2e-fleet-account', password: 'e2e-fleet-password-1' };

describe('e2e: a terminal configured and diagnosed from afar', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'tps-e2e-fleet-'));
  let relay: RelayChild;
  let agent: TpsChild | undefined;
  let terminal: TerminalCreateResponse;
  let configFile: string;
  const env = () => ({
    TPS_BASE_URL: relay.baseUrl,
    TPS_ACCOUNT_USERNAME: ACCOUNT.username,
    TPS_ACCOUNT_PASSWORD: ACCOUNT.password,
  });
  const context = () => `--- agent ---\n${agent?.output() ?? ''}\n--- relay ---\n${relay.output()}`;
  const fleet = async (...args: string[]) => {
    const run = await runTpsToEnd(['fleet', ...args], env());
    return run;
  };
  const view = async (): Promise<TerminalConfigView> => {
    const run = await fleet('config', 'get', '--terminal', terminal.terminal_id, '--json');
    expect(run.code, run.stderr).toBe(0);
    return FleetConfigResponse.parse(JSON.parse(run.stdout)).terminals[0]!;
  };
  const pos = () => posFor(() => relay.baseUrl, terminal);
  const connected = () =>
    eventually(
      () => pos()('/terminal/status', {}),
      (r) => r.body?.status?.connected === true,
      { ms: 20_000, what: 'the agent to connect', context },
    );
  const kept = () =>
    JSON.parse(readFileSync(path.join(dir, 'agent-data', 'fleet-config.json'), 'utf8')) as {
      version: string;
      config: Record<string, unknown>;
    };

  beforeAll(async () => {
    relay = await startRelayChild({
      TPS_DATA_DIR: path.join(dir, 'relay-data'),
      TPS_ACCOUNT_USERNAME: ACCOUNT.username,
      TPS_ACCOUNT_PASSWORD: ACCOUNT.password,
      TPS_DEFAULT_SIMULATOR: 'false',
    });
    terminal = await registerTerminal(relay.baseUrl, ACCOUNT, {});
    configFile = writeAgentConfig(dir, terminal, {
      reader: { emulated: { state_file: 'reader.jsonl', delay_ms: 300 } },
    });
    agent = startAgentProcess(configFile);
    await connected();
  }, 40_000);

  afterAll(async () => {
    await agent?.stop();
    await relay?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('applies a configuration at once, reports it, and keeps it across a restart', async () => {
    const set = await fleet(
      'config',
      'set',
      '--terminal',
      terminal.terminal_id,
      '--heartbeat-s',
      '7',
      '--log-level',
      'info',
      '--idle-screen-text',
      'Welcome to the shop',
    );
    expect(set.code, set.stderr).toBe(0);
    expect(set.stdout).toContain('"heartbeat_s":7');
    const applied = await eventually(view, (v) => v.in_sync, {
      ms: 15_000,
      what: 'the agent to apply and report the configuration',
      context,
    });
    expect(applied.reported).toMatchObject({
      status: 'APPLIED',
      version: applied.desired.version,
      applied_version: applied.desired.version,
    });
    expect(kept().version).toBe(applied.desired.version);
    // The idle screen text is what the terminal shows while it waits.
    await eventually(
      () => pos()('/terminal/status', {}),
      (r) => r.body?.status?.screen_message === 'Welcome to the shop',
      { ms: 10_000, what: 'the idle screen text in the status', context },
    );

    await agent!.stop();
    agent = startAgentProcess(configFile);
    await connected();
    const again = await eventually(
      view,
      (v) => v.in_sync && Date.parse(v.reported!.at) > Date.parse(applied.reported!.at),
      { ms: 15_000, what: 'the restarted agent to report the same version', context },
    );
    expect(again.reported?.applied_version).toBe(applied.desired.version);
  }, 60_000);

  it('reports a configuration its reader refuses, with the reason, and keeps the last good one', async () => {
    const before = await view();
    const set = await fleet(
      'config',
      'set',
      '--terminal',
      terminal.terminal_id,
      '--reader-profile',
      'ccv',
    );
    expect(set.code, set.stderr).toBe(0);
    const refused = await eventually(
      view,
      (v) => v.reported?.status === 'REJECTED' && v.reported.version === v.desired.version,
      { ms: 15_000, what: 'the agent to refuse the configuration', context },
    );
    expect(refused.in_sync).toBe(false);
    expect(refused.reported?.reason).toMatch(/reader\.profile: .*native protocol/);
    expect(refused.reported?.applied_version).toBe(before.desired.version);
    expect(kept().version).toBe(before.desired.version);
    const shown = await fleet('config', 'get', '--terminal', terminal.terminal_id);
    expect(shown.stdout).toMatch(/NOT in sync[\s\S]*REJECTED/);
  }, 40_000);

  it('applies a reader setting once idle, reopening the reader, and pays with it', async () => {
    const set = await fleet(
      'config',
      'set',
      '--terminal',
      terminal.terminal_id,
      '--unset',
      'reader.profile',
      '--reader-baud-rate',
      '57600',
    );
    expect(set.code, set.stderr).toBe(0);
    const applied = await eventually(view, (v) => v.in_sync, {
      ms: 20_000,
      what: 'the agent to reopen its reader with the new setting',
      context,
    });
    expect(applied.desired.config.reader).toEqual({ baud_rate: 57_600 });
    expect(kept().config).toMatchObject({ reader: { baud_rate: 57_600 } });
    await connected();
    const paid = await pos()('/transaction/purchase', {
      external_id: 'after-reader-change',
      requested_amount: 1250,
      currency: 'EUR',
      wait_seconds: 20,
    });
    expect(paid.body.transaction, JSON.stringify(paid.body)).toMatchObject({
      state: 'AWAITING_CONFIRM',
      result_code: 'SUCCESS',
    });
    await pos()('/transaction/confirm', {
      external_id: 'after-reader-change',
      result_code: 'SUCCESS',
    });
  }, 60_000);

  it('fetches doctor, logs and trace from the agent without a secret or a card number', async () => {
    const paid = await pos()('/transaction/purchase', {
      external_id: 'traced-1',
      requested_amount: 4200,
      currency: 'EUR',
      wait_seconds: 20,
    });
    expect(paid.body.transaction?.result_code, JSON.stringify(paid.body)).toBe('SUCCESS');
    const card = paid.body.transaction.payment_method_details ?? {};
    await pos()('/transaction/confirm', { external_id: 'traced-1', result_code: 'SUCCESS' });

    const doctor = await fleet('doctor', '--terminal', terminal.terminal_id, '--json');
    expect(doctor.code, doctor.stderr).toBe(0);
    const checks = JSON.parse(doctor.stdout).doctor.checks as Array<{
      title: string;
      status: string;
    }>;
    expect(checks.map((c) => c.title).join('\n')).toMatch(
      /broker: connected[\s\S]*reader: native: answers/,
    );

    const logs = await fleet('logs', '--terminal', terminal.terminal_id, '--lines', '50', '--json');
    expect(logs.code, logs.stderr).toBe(0);
    const lines = JSON.parse(logs.stdout).logs.lines as string[];
    expect(lines.length).toBeGreaterThan(0);
    expect(lines.length).toBeLessThanOrEqual(50);

    const trace = await fleet('trace', '--terminal', terminal.terminal_id, '--json');
    expect(trace.code, trace.stderr).toBe(0);
    const traced = JSON.parse(trace.stdout).trace as {
      transaction_id: string;
      frames: Array<{ direction: string; text: string }>;
    };
    expect(traced.transaction_id).toBe(paid.body.transaction.id);
    expect(
      traced.frames.some((f) => f.direction === 'host→reader' && /transaction\.start/.test(f.text)),
    ).toBe(true);
    expect(
      traced.frames.some(
        (f) => f.direction === 'reader→host' && /transaction\.result/.test(f.text),
      ),
    ).toBe(true);

    const human = await fleet('trace', '--terminal', terminal.terminal_id);
    const everything = [doctor.stdout, logs.stdout, trace.stdout, human.stdout].join('\n');
    for (const secret of [
      terminal.agent.password,
      terminal.password,
      ACCOUNT.password,
      card.card_number_merchant,
      card.card_number_customer,
    ].filter((s): s is string => typeof s === 'string' && s.length > 0)) {
      expect(everything, `found ${secret}`).not.toContain(secret);
    }
    // No card number in any form: no run of 12 or more digits (log lines' epoch times aside).
    expect(everything.replace(/\\?"time\\?":\d{13}/g, '')).not.toMatch(/\d{12,}/);
  }, 60_000);

  it('shows the fleet facts, and refuses diagnostics for an agent that is gone', async () => {
    const facts = await fleet('facts', '--terminal', terminal.terminal_id, '--json');
    expect(facts.code, facts.stderr).toBe(0);
    const [row] = JSON.parse(facts.stdout).terminals;
    const current = await view();
    expect(row).toMatchObject({
      terminal_id: terminal.terminal_id,
      reader_protocol: 'native',
      reader_model: 'emulated native reader',
      // The agent runs on the Node.js that runs this test.
      node_version: process.versions.node,
      config_version: current.desired.version,
      config_status: 'APPLIED',
      last_update_outcome: null,
      connected: true,
    });
    expect(row.agent_version).toMatch(/^\d+\.\d+\.\d+/);
    expect(Date.parse(row.last_seen)).toBeGreaterThan(Date.now() - 60_000);

    await agent!.stop();
    agent = undefined;
    await eventually(
      () => pos()('/terminal/status', {}),
      (r) => r.body?.status?.connected === false,
      { ms: 10_000, what: 'the agent to be gone', context },
    );
    const stoppedAt = Date.now();
    const after = await fleet('facts', '--terminal', terminal.terminal_id, '--json');
    const [goneRow] = JSON.parse(after.stdout).terminals;
    expect(goneRow.connected).toBe(false);
    // Last seen when it went away, not now.
    expect(Date.parse(goneRow.last_seen)).toBeLessThanOrEqual(stoppedAt);
    expect(Date.parse(goneRow.last_seen)).toBeGreaterThan(stoppedAt - 30_000);

    const gone = await fleet('doctor', '--terminal', terminal.terminal_id);
    expect(gone.code).not.toBe(0);
    expect(gone.stderr).toMatch(/409.*TERMINAL_OFFLINE/);
  }, 40_000);
});
