/**
 * The updater and a release's Node.js: a release that brings its own runtime/node is
 * installed whatever the terminal's Node.js; one that brings none runs on the launcher's,
 * so it is refused, saying both versions, when built for another major.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ReleaseProblem, installRelease } from '../agent/update-release.js';
import { generateReleaseKeyPair } from '../common/release-signature.js';
import { tempDir } from './agent-harness.js';
import { ARCH, buildRelease } from './support/agent-releases.js';

describe('a release meant for another Node.js', () => {
  const keys = generateReleaseKeyPair();
  const install = async (version: string, extra: object) => {
    const dir = tempDir('release-runtime');
    const archive = await buildRelease(dir, {
      version,
      privateKeyPem: keys.privateKeyPem,
      ...extra,
    });
    const root = path.join(dir, 'root');
    await installRelease({ root, archive, version, arch: ARCH, publicKeyPem: keys.publicKeyPem });
    return root;
  };

  it('is refused when it brings no Node.js of its own, naming both versions', async () => {
    const attempt = install('2.0.0', { nodeAbi: ['20'] });
    await expect(attempt).rejects.toThrow(ReleaseProblem);
    await expect(attempt).rejects.toThrow(
      `the release brings no Node.js of its own and is built for Node.js 20; this terminal's is Node.js ${process.versions.node}`,
    );
  });

  it('is installed when it brings its own (its node_abi is that runtime’s)', async () => {
    const root = await install('2.0.1', { nodeAbi: ['20'], runtime: 'broken' });
    expect(fs.existsSync(path.join(root, 'releases/2.0.1/runtime/node'))).toBe(true);
  });
});
