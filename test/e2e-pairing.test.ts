/**
 * Pairing with real processes: the relay (`tps cloud`), a fresh agent (`tps agent pair
 * --start`, with the emulated reader) and the field engineer's colleague claiming the
 * code (`tps terminal claim`). The agent writes its config (0600), connects with the
 * credential it received, and takes a payment; the code, once used, is refused.
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentConfigSchema } from '../agent/config.js';
import { loadAgentConfig } from '../agent/config.js';
import {
  eventually,
  posFor,
  runTps,
  runTpsToEnd,
  startRelayChild,
  type RelayChild,
  type TpsChild,
} from './support/e2e-parts.js';

const ACCOUNT = { username: 'e2e-pairing-account', password: 'e2e-pairing-password' };

describe('e2e: pair a new agent, claim it, pay with it', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'tps-e2e-pairing-'));
  let relay: RelayChild;
  let agent: TpsChild | undefined;
  const account = () => ({
    TPS_BASE_URL: relay.baseUrl,
    TPS_ACCOUNT_USERNAME: ACCOUNT.username,
    TPS_ACCOUNT_PASSWORD: ACCOUNT.password,
  });

  beforeAll(async () => {
    relay = await startRelayChild({
      TPS_DATA_DIR: path.join(dir, 'relay-data'),
      TPS_ACCOUNT_USERNAME: ACCOUNT.username,
      TPS_ACCOUNT_PASSWORD: ACCOUNT.password,
      TPS_DEFAULT_SIMULATOR: 'false',
    });
  }, 30_000);

  afterAll(async () => {
    await agent?.stop();
    await relay?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('the agent shows a code, the claim names it, it receives its credential and pays', async () => {
    const configFile = path.join(dir, 'terminal', 'agent.json');
    agent = runTps([
      'agent',
      'pair',
      '--relay',
      relay.baseUrl,
      '--config',
      configFile,
      '--emulated-reader',
      '--data-dir',
      'agent-data',
      '--start',
    ]);
    const context = () => `--- agent ---\n${agent!.output()}\n--- relay ---\n${relay.output()}`;
    const code = await eventually(
      () => /Pairing code: (\S{4}-\S{4})/.exec(agent!.output())?.[1],
      (found) => found !== undefined,
      { ms: 20_000, what: 'the agent to show a pairing code', context },
    );

    const claim = await runTpsToEnd(
      ['terminal', 'claim', code!, '--name', 'Front till', '--cohort', 'cohort-front', '--json'],
      account(),
    );
    expect(claim.code, claim.stderr).toBe(0);
    const claimed = JSON.parse(claim.stdout) as {
      terminal_id: string;
      name: string;
      cohort: string;
      username: string;
      password: string;
    };
    expect(claimed).toMatchObject({ name: 'Front till', cohort: 'cohort-front' });

    await eventually(
      () => agent!.output(),
      (output) => output.includes(`Paired: terminal ${claimed.terminal_id}`),
      { ms: 20_000, what: 'the agent to be paired', context },
    );
    // The config is the shape 'tps terminal create --out' writes, readable by its owner only.
    expect(statSync(configFile).mode & 0o777).toBe(0o600);
    const config = loadAgentConfig(configFile);
    expect(AgentConfigSchema.parse(config).terminal_id).toBe(claimed.terminal_id);
    expect(config.broker.username).toBe(claimed.terminal_id);
    // The emulated reader's memory beside the journal, both relative to the config's folder.
    const terminalDir = path.dirname(configFile);
    expect(config.data_dir).toBe(path.join(terminalDir, 'agent-data'));
    expect(config.reader.emulated?.state_file).toBe(
      path.join(terminalDir, 'agent-data', 'emulated-reader.json'),
    );

    const pos = posFor(() => relay.baseUrl, claimed);
    await eventually(
      () => pos('/terminal/status', {}),
      (r) => r.body?.status?.connected === true,
      { ms: 20_000, what: 'the paired agent to connect', context },
    );
    const paid = await pos('/transaction/purchase', {
      external_id: 'paired-1',
      requested_amount: 1250,
      currency: 'EUR',
      wait_seconds: 20,
    });
    expect(paid.status).toBe(200);
    expect(paid.body.transaction).toMatchObject({
      state: 'AWAITING_CONFIRM',
      result_code: 'SUCCESS',
    });
    const confirmed = await pos('/transaction/confirm', {
      external_id: 'paired-1',
      result_code: 'SUCCESS',
    });
    expect(confirmed.body.transaction.state).toBe('CONFIRMED');

    // The code paired one terminal; claimed again, it is refused, with the reason.
    const reused = await runTpsToEnd(['terminal', 'claim', code!, '--name', 'Twice'], account());
    expect(reused.code).not.toBe(0);
    expect(reused.stderr).toMatch(/409.*PAIRING_CODE_USED/);
  }, 90_000);
});
