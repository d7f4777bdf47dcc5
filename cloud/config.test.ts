import { describe, expect, it } from 'vitest';
import { ConfigError, loadCloudConfig } from './config-settings.js';

function problems(env: Record<string, string>, flags: Record<string, string> = {}): string[] {
  try {
    loadCloudConfig(flags, env);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  return [];
}

describe('relay configuration', () => {
  it('has working defaults with no environment at all', () => {
    expect(loadCloudConfig({}, {})).toMatchObject({
      host: '127.0.0.1',
      port: 8080,
      dataDir: './data',
      simulatorDelayMs: 2000,
      maxUnconfirmed: 10,
      pauseTimeoutS: 60,
      gracePeriodS: 3600,
      defaultSimulator: true,
    });
  });

  it('reads TPS_* variables, and flags win over them', () => {
    const config = loadCloudConfig(
      { port: '9001' },
      { TPS_PORT: '9000', TPS_MAX_UNCONFIRMED: '3', TPS_DEFAULT_SIMULATOR: 'false' },
    );
    expect(config).toMatchObject({ port: 9001, maxUnconfirmed: 3, defaultSimulator: false });
  });

  it('names the variable and the flag of every mistake, all at once', () => {
    const found = problems({
      TPS_PORT: 'eighty',
      TPS_MAX_UNCONFIRMED: '0',
      TPS_GRACE_PERIOD_S: '-1',
      TPS_LOG_LEVEL: 'loud',
    });
    expect(found).toHaveLength(4);
    expect(found.join('\n')).toMatch(/TPS_PORT \(--port\)/);
    expect(found.join('\n')).toMatch(/TPS_MAX_UNCONFIRMED \(--max-unconfirmed\)/);
    expect(found.join('\n')).toMatch(/TPS_GRACE_PERIOD_S/);
    expect(found.join('\n')).toMatch(/TPS_LOG_LEVEL/);
  });

  it('wants the TLS pair and the account pair together', () => {
    expect(problems({ TPS_TLS_CERT: '/x.pem' }).join()).toMatch(/TPS_TLS_CERT and TPS_TLS_KEY/);
    expect(problems({ TPS_ACCOUNT_USERNAME: 'someone' }).join()).toMatch(
      /TPS_ACCOUNT_USERNAME and TPS_ACCOUNT_PASSWORD/,
    );
    expect(
      problems({ TPS_ACCOUNT_USERNAME: 'someone', TPS_ACCOUNT_PASSWORD: 'short' }).join(),
    ).toMatch(/TPS_ACCOUNT_PASSWORD .*at least 12/);
  });
});
