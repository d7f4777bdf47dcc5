/**
 * The guards of a release's native code: only the release's CPU's prebuilt binaries, never
 * one for another CPU, and nothing that needs a compiler (the journal is node:sqlite), so
 * that both architectures build on any machine.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { EXTERNAL_PACKAGES } from './bundle.js';
import {
  ELF_MACHINE,
  NativeModuleMissing,
  copyNativeModules,
  elfMachine,
} from './native-modules.js';
import { ROOT } from './package-agent.js';

describe('native modules of a release', () => {
  const made: string[] = [];
  const temp = (name: string) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), `tps-native-${name}-`));
    made.push(dir);
    return dir;
  };
  const savedPath = process.env.PATH;
  afterEach(() => {
    process.env.PATH = savedPath;
    for (const dir of made.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
  });

  const nodeFiles = (release: string) =>
    fs
      .readdirSync(path.join(release, 'node_modules'), { recursive: true, encoding: 'utf8' })
      .filter((file) => file.endsWith('.node'))
      .map((file) => path.join(release, 'node_modules', file));

  it('copies the x64 binaries and the packages they load, and no other platform', async () => {
    const release = temp('x64');
    const copied = await copyNativeModules({
      root: ROOT,
      arch: 'linux-x64',
      release,
      packages: EXTERNAL_PACKAGES,
    });
    expect(copied).toEqual(expect.arrayContaining(['@serialport/bindings-cpp', 'node-gyp-build']));
    expect(copied).not.toContain('better-sqlite3');
    expect(copied).not.toContain('node-addon-api');
    const prebuilds = path.join(release, 'node_modules/@serialport/bindings-cpp/prebuilds');
    expect(fs.readdirSync(prebuilds)).toEqual(['linux-x64']);
  });

  it('builds the arm64 modules with no compiler on the PATH: prebuilt aarch64 binaries only', async () => {
    process.env.PATH = temp('empty-path');
    const release = temp('arm64');
    await copyNativeModules({
      root: ROOT,
      arch: 'linux-arm64',
      release,
      packages: EXTERNAL_PACKAGES,
    });
    const binaries = nodeFiles(release);
    expect(binaries.length).toBeGreaterThan(0);
    for (const file of binaries) expect(elfMachine(file)).toBe(ELF_MACHINE['linux-arm64']);
  });

  it('refuses a release whose binary is for another CPU', async () => {
    // A project whose one native package ships an x64 binary only.
    const root = temp('project');
    const pkg = path.join(root, 'node_modules/native-x64-only');
    fs.mkdirSync(path.join(pkg, 'build'), { recursive: true });
    fs.writeFileSync(
      path.join(pkg, 'package.json'),
      JSON.stringify({ name: 'native-x64-only', version: '1.0.0' }),
    );
    fs.copyFileSync(nodeFiles(await x64Release())[0]!, path.join(pkg, 'build/addon.node'));
    const attempt = copyNativeModules({
      root,
      arch: 'linux-arm64',
      release: temp('arm64'),
      packages: ['native-x64-only'],
    });
    await expect(attempt).rejects.toThrow(NativeModuleMissing);
    await expect(attempt).rejects.toThrow(/another architecture than linux-arm64:\n.*addon\.node/);
  });

  async function x64Release(): Promise<string> {
    const release = temp('x64-source');
    await copyNativeModules({
      root: ROOT,
      arch: 'linux-x64',
      release,
      packages: EXTERNAL_PACKAGES,
    });
    return release;
  }
});
