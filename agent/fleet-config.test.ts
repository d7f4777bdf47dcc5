import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import type { ConfigReportMessage } from '../protocol/fleet-config.js';
import { AgentConfigSchema, type AgentConfig } from './config.js';
import {
  FleetConfigApplier,
  confirmKept,
  overlay,
  readKeptConfig,
  refuseKept,
  type FleetConfigApplierOptions,
} from './fleet-config.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function baseConfig(reader: Record<string, unknown> = { port: '/dev/ttyACM0' }): AgentConfig {
  const dir = mkdtempSync(path.join(tmpdir(), 'tps-fleet-config-'));
  dirs.push(dir);
  return AgentConfigSchema.parse({
    terminal_id: 't-1000000001',
    broker: { url: 'mqtt://127.0.0.1:1', username: 'u', password: 'p' },
    reader,
    printer: { type: 'tcp', host: '127.0.0.1' },
    data_dir: dir,
  });
}

const V1 = '1111111111111111';
const V2 = '2222222222222222';
const V3 = '3333333333333333';

function applier(base: AgentConfig, over: Partial<FleetConfigApplierOptions> = {}) {
  const reports: ConfigReportMessage[] = [];
  const applied: Record<string, unknown> = {};
  let idle = true;
  const idleListeners = new Set<() => void>();
  let restarts = 0;
  const a = new FleetConfigApplier({
    base,
    running: base,
    live: {
      heartbeatMs: (ms) => (applied.heartbeatMs = ms),
      logLevel: (level) => (applied.logLevel = level),
      idleScreenText: (text) => (applied.idleText = text),
    },
    isIdle: () => idle,
    onIdle: (listener) => {
      idleListeners.add(listener);
      return () => idleListeners.delete(listener);
    },
    restart: () => restarts++,
    report: (message) => reports.push(message),
    clock: { now: () => new Date('2026-11-24T10:00:00Z') },
    logger: pino({ level: 'silent' }),
    ...over,
  });
  return {
    a,
    reports,
    applied,
    restarts: () => restarts,
    setIdle(value: boolean) {
      idle = value;
      for (const listener of [...idleListeners]) listener();
    },
  };
}

describe('the fleet configuration on the agent', () => {
  it('overlays the file: what the fleet sets wins, what it does not keeps the file value', () => {
    const base = baseConfig();
    const result = overlay(base, {
      heartbeat_s: 9,
      printer_head_width: 576,
      reader: { baud_rate: 57_600 },
    });
    expect(result.ok && result.config).toMatchObject({
      heartbeat_s: 9,
      log_level: base.log_level,
      reader: { port: '/dev/ttyACM0', baud_rate: 57_600 },
      printer: { type: 'tcp', head_width: 576 },
    });
  });

  it('refuses what the reader does not take, naming the setting', () => {
    expect(overlay(baseConfig(), { reader: { profile: 'ccv' } })).toEqual({
      ok: false,
      problems: [expect.stringMatching(/^reader\.profile: .*native protocol/)],
    });
    const zvt = baseConfig({ protocol: 'zvt', tcp: '127.0.0.1:20007' });
    expect(overlay(zvt, { reader: { profile: 'nonesuch' } })).toMatchObject({
      ok: false,
      problems: [expect.stringMatching(/does not know "nonesuch"/)],
    });
    expect(overlay(zvt, { reader: { baud_rate: 9600 } })).toMatchObject({
      ok: false,
      problems: [expect.stringMatching(/^reader\.baud_rate: .*network/)],
    });
    expect(overlay(zvt, { reader: { profile: 'ccv' } })).toMatchObject({
      ok: true,
      config: { reader: { profile: 'ccv' } },
    });
  });

  it('applies live settings at once, keeps them, and reports APPLIED; the same version again changes nothing', () => {
    const base = baseConfig();
    const t = applier(base);
    t.a.received({
      version: V1,
      config: { heartbeat_s: 5, log_level: 'debug', idle_screen_text: 'Hi' },
    });
    expect(t.applied).toEqual({ heartbeatMs: 5000, logLevel: 'debug', idleText: 'Hi' });
    expect(t.reports).toEqual([
      { version: V1, status: 'APPLIED', applied_version: V1, at: '2026-11-24T10:00:00.000Z' },
    ]);
    expect(readKeptConfig(base.data_dir)).toEqual({
      version: V1,
      config: { heartbeat_s: 5, log_level: 'debug', idle_screen_text: 'Hi' },
    });
    t.a.received({
      version: V1,
      config: { heartbeat_s: 5, log_level: 'debug', idle_screen_text: 'Hi' },
    });
    expect(t.reports.map((r) => r.status)).toEqual(['APPLIED', 'APPLIED']);
    expect(t.restarts()).toBe(0);

    // A new agent on the same data directory starts with the kept settings.
    const again = applier(base);
    expect(again.applied).toEqual({ heartbeatMs: 5000, logLevel: 'debug', idleText: 'Hi' });
  });

  it('reports an invalid or refused configuration with the reason and keeps the last good one', () => {
    const base = baseConfig();
    const t = applier(base);
    t.a.received({ version: V1, config: { heartbeat_s: 5 } });
    t.a.received({ version: V2, config: { heartbeat_s: 0 } });
    t.a.received({ version: V3, config: { reader: { profile: 'ccv' } } });
    t.a.received({ nonsense: true });
    expect(
      t.reports.map(({ version, status, applied_version }) => [version, status, applied_version]),
    ).toEqual([
      [V1, 'APPLIED', V1],
      [V2, 'REJECTED', V1],
      [V3, 'REJECTED', V1],
    ]);
    expect(t.reports[1]?.reason).toMatch(/config\.heartbeat_s/);
    expect(readKeptConfig(base.data_dir)?.version).toBe(V1);
    expect(t.applied.heartbeatMs).toBe(5000);
  });

  it('waits for the terminal to be idle before it reopens the hardware, never during a payment', () => {
    const base = baseConfig();
    const t = applier(base);
    t.setIdle(false);
    t.a.received({ version: V1, config: { printer_head_width: 576 } });
    expect(t.reports.map((r) => r.status)).toEqual(['PENDING']);
    expect(t.restarts()).toBe(0);
    expect(readKeptConfig(base.data_dir)).toBeUndefined();
    t.setIdle(true);
    expect(t.restarts()).toBe(1);
    expect(readKeptConfig(base.data_dir)).toMatchObject({
      version: V1,
      trial: true,
      previous: null,
    });
  });

  it('refuses hardware settings where it cannot reopen the hardware itself', () => {
    const t = applier(baseConfig(), { restart: undefined });
    t.a.received({ version: V1, config: { reader: { baud_rate: 9600 } } });
    expect(t.reports[0]).toMatchObject({
      status: 'REJECTED',
      reason: expect.stringMatching(/own process/),
    });
  });

  it('goes back to the settings before when the reader does not answer with new ones, and reports why', () => {
    const base = baseConfig();
    const first = applier(base);
    first.a.received({ version: V1, config: { heartbeat_s: 5 } });
    first.a.received({ version: V2, config: { heartbeat_s: 5, reader: { baud_rate: 9600 } } });
    expect(first.restarts()).toBe(1);
    const refused = refuseKept(
      base.data_dir,
      'the reader did not answer with these settings: no answer within 10 s',
    );
    expect(refused).toEqual({ version: V2, reason: expect.stringMatching(/did not answer/) });
    expect(readKeptConfig(base.data_dir)).toEqual({ version: V1, config: { heartbeat_s: 5 } });

    // The agent started again reports the version refused, and does not try it again.
    const second = applier(base, refused ? { refused } : {});
    second.a.received({ version: V2, config: { heartbeat_s: 5, reader: { baud_rate: 9600 } } });
    expect(second.reports).toEqual([
      expect.objectContaining({
        version: V2,
        status: 'REJECTED',
        applied_version: V1,
        reason: expect.stringMatching(/did not answer/),
      }),
    ]);
    expect(second.restarts()).toBe(0);

    // A trial the reader passes is confirmed: nothing to go back to any more.
    second.a.received({ version: V3, config: { reader: { baud_rate: 19_200 } } });
    confirmKept(base.data_dir);
    expect(JSON.parse(readFileSync(path.join(base.data_dir, 'fleet-config.json'), 'utf8'))).toEqual(
      {
        version: V3,
        config: { reader: { baud_rate: 19_200 } },
      },
    );
  });

  it('turns the local API on and off only when no payment runs, and says what is in force', () => {
    const base = baseConfig();
    const t = applier(base);
    const heard: unknown[] = [];
    t.a.onLocalApi((settings) => heard.push(settings));
    expect(t.a.localApi).toMatchObject({ enabled: false, listen: { host: '0.0.0.0', port: 8443 } });

    t.setIdle(false);
    t.a.received({ version: V1, config: { local_api: { enabled: true, listen: { port: 9443 } } } });
    expect(t.reports.at(-1)).toMatchObject({ version: V1, status: 'PENDING' });
    expect(t.a.localApi.enabled).toBe(false);
    expect(heard).toEqual([]);

    t.setIdle(true);
    expect(t.reports.at(-1)).toMatchObject({ version: V1, status: 'APPLIED', applied_version: V1 });
    expect(t.a.localApi).toEqual({
      enabled: true,
      listen: { host: '0.0.0.0', port: 9443 },
      plain_http: false,
      while_unreachable: {
        max_amount: 50_000,
        max_pending_count: 100,
        max_pending_total: 500_000,
        max_pending_age_seconds: 86_400,
      },
    });
    expect(heard).toEqual([t.a.localApi]);
    expect(t.restarts()).toBe(0);

    // What leaves the local API as it is applies at once, even mid-payment.
    t.setIdle(false);
    const local_api = { enabled: true, listen: { port: 9443 } };
    t.a.received({ version: V2, config: { heartbeat_s: 7, local_api } });
    expect(t.reports.at(-1)).toMatchObject({ version: V2, status: 'APPLIED' });
    expect(t.applied.heartbeatMs).toBe(7000);

    // Off again: waits for the payment too, then the listener hears it.
    t.a.received({ version: V3, config: { heartbeat_s: 7 } });
    expect(t.reports.at(-1)).toMatchObject({ version: V3, status: 'PENDING' });
    t.setIdle(true);
    expect(t.a.localApi.enabled).toBe(false);
    expect(heard).toHaveLength(2);

    // Kept across a restart: the agent starts with the local API in force.
    expect(applier(base).a.localApi.enabled).toBe(false);
  });

  it('starts with the kept local API settings', () => {
    const base = baseConfig();
    applier(base).a.received({ version: V1, config: { local_api: { enabled: true } } });
    expect(applier(base).a.localApi.enabled).toBe(true);
  });

  it('refuses a configuration with bad local API values, saying which and why', () => {
    const t = applier(baseConfig());
    t.a.received({
      version: V1,
      config: { local_api: { enabled: true, listen: { port: 80, host: 'shop.example' } } },
    });
    expect(t.reports).toEqual([
      expect.objectContaining({
        version: V1,
        status: 'REJECTED',
        reason: expect.stringMatching(
          /config\.local_api\.listen\.host: must be an IPv4 or IPv6 address/,
        ),
      }),
    ]);
    expect(t.reports[0]!.reason).toMatch(/config\.local_api\.listen\.port: must be 1024-65535/);
    expect(t.a.localApi.enabled).toBe(false);
  });
});
