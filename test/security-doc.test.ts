/**
 * docs/security.md is linked from the README and names every setting that bounds
 * sign-ins and the MQTT listener, each a setting the relay has (docs/configuration.md
 * documents them all, cloud/config-doc.test.ts keeps that table in step).
 */
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CLOUD_SETTINGS } from '../cloud/config-settings.js';

const read = (file: string) => fs.readFileSync(new URL(`../${file}`, import.meta.url), 'utf8');

describe('docs/security.md', () => {
  const doc = read('docs/security.md');
  it('is linked from the README', () => {
    expect(read('README.md')).toContain('(docs/security.md)');
  });

  it('names every limit setting of sign-ins and of the MQTT listener, and TPS_TRUST_PROXY', () => {
    const limits = Object.values(CLOUD_SETTINGS)
      .map((s) => s.env)
      .filter((env) =>
        /^TPS_(SIGN_IN_|MQTT_(MAX_|CONNECT_TIMEOUT|MESSAGES)|TRUST_PROXY)/.test(env),
      );
    expect(limits.length).toBeGreaterThanOrEqual(11);
    for (const env of limits) expect(doc, env).toContain(`\`${env}\``);
  });

  it('names the settings that bound webhook targets', () => {
    for (const env of ['TPS_WEBHOOK_ALLOW_NETWORKS', 'TPS_WEBHOOKS_PER_CREDENTIAL']) {
      expect(doc, env).toContain(`\`${env}\``);
    }
  });

  it('names every limit setting of HTTP waits and connections', () => {
    const limits = Object.values(CLOUD_SETTINGS)
      .map((s) => s.env)
      .filter((env) => /^TPS_(HTTP_|MAX_PARKED_)/.test(env));
    expect(limits.length).toBeGreaterThanOrEqual(4);
    for (const env of limits) expect(doc, env).toContain(`\`${env}\``);
  });

  it('names every limit setting of pairing', () => {
    const limits = Object.values(CLOUD_SETTINGS)
      .map((s) => s.env)
      .filter((env) => env.startsWith('TPS_PAIRING_'));
    expect(limits.length).toBeGreaterThanOrEqual(6);
    for (const env of limits) expect(doc, env).toContain(`\`${env}\``);
  });

  it('has a section per finding hardened', () => {
    for (const heading of [
      '### A.',
      '### B.',
      '### C.',
      '### D.',
      '### E.',
      '### F.',
      '### G.',
      '### H.',
      '### I.',
      '### J.',
      '### K.',
      '### L.',
      '### M.',
      '### N.',
      '### O.',
      '### P.',
      '### Q.',
      '### R.',
      '### S.',
      '### T.',
      '### U.',
      '### V.',
      '### W.',
      '#### P1.',
      '#### P2.',
      '#### P3.',
      '#### P4.',
      '#### P5.',
      '#### Q1.',
      '#### Q2.',
      '#### R1.',
      '#### R2.',
      '#### S1.',
      '#### S2.',
    ]) {
      expect(doc).toContain(heading);
    }
  });
});
