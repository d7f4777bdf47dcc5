/**
 * A build that fails half-way leaves what was in the output folder before, and nothing of
 * its own: each release is built in a temporary folder and renamed into place at the end.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { packageAgent } from './package-agent.js';

describe('a failed build', () => {
  const savedPath = process.env.PATH;
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'tps-package-fail-'));
  afterEach(() => {
    process.env.PATH = savedPath;
    fs.rmSync(work, { recursive: true, force: true });
  });

  it('leaves no half-made release behind (the .deb step fails: no dpkg-deb)', async () => {
    const outDir = path.join(work, 'out');
    fs.mkdirSync(outDir);
    fs.writeFileSync(path.join(outDir, 'kept.txt'), 'from before');
    // dpkg-deb is looked up on the PATH: without it, the last step of the build fails.
    const noTools = path.join(work, 'empty-path');
    fs.mkdirSync(noTools);
    process.env.PATH = noTools;
    await expect(packageAgent({ version: '9.9.9', arches: ['linux-x64'], outDir })).rejects.toThrow(
      /ENOENT|dpkg-deb/,
    );
    expect(fs.readdirSync(outDir)).toEqual(['kept.txt']);
  }, 600_000);
});
