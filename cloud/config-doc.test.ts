import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CLOUD_SETTINGS } from './config-settings.js';

describe('docs/configuration.md', () => {
  it('documents every setting with its flag, and nothing else', () => {
    const doc = fs.readFileSync(new URL('../docs/configuration.md', import.meta.url), 'utf8');
    const rows = [...doc.matchAll(/^\|\s*`(TPS_[A-Z_]+)`\s*\|\s*`--([a-z-]+)`\s*\|/gm)].map((m) => [
      m[1],
      m[2],
    ]);
    const settings = Object.values(CLOUD_SETTINGS).map((s) => [s.env, s.flag]);
    expect(rows.sort()).toEqual(settings.sort());
  });
});
