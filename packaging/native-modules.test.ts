/**
 * The guards of a release's native code: never a binary for the wrong CPU, and no arm64
 * release when better-sqlite3 cannot be built for it (its prebuilt binaries are out of
 * reach), with what to install said plainly.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { EXTERNAL_PACKAGES } from './bundle.js';
import { NativeModuleMissing, copyNativeModules } from './native-modules.js';
import { ROOT } from './package-agent.js';

const SQLITE_VERSION = (
  JSON.parse(
    fs.readFileSync(path.join(ROOT, 'node_modules/better-sqlite3/package.json'), 'utf8'),
  ) as { version: string }
).version;

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

  it('copies the x64 binaries and the packages they load, and no other platform', async () => {
    const release = temp('x64');
    const copied = await copyNativeModules({
      root: ROOT,
      arch: 'linux-x64',
      release,
      packages: EXTERNAL_PACKAGES,
      cacheDir: temp('cache'),
      log: () => undefined,
    });
    expect(copied).toEqual(
      expect.arrayContaining(['better-sqlite3', 'bindings', 'node-gyp-build']),
    );
    expect(copied).not.toContain('prebuild-install');
    expect(copied).not.toContain('node-addon-api');
    const prebuilds = path.join(release, 'node_modules/@serialport/bindings-cpp/prebuilds');
    expect(fs.readdirSync(prebuilds)).toEqual(['linux-x64']);
    expect(
      fs.existsSync(
        path.join(release, 'node_modules/better-sqlite3/build/Release/better_sqlite3.node'),
      ),
    ).toBe(true);
    expect(fs.existsSync(path.join(release, 'node_modules/better-sqlite3/deps'))).toBe(false);
  });

  it('refuses a release whose binary is for another CPU', async () => {
    const cacheDir = temp('cache');
    // An x64 binary where the arm64 build would be: the ELF check must catch it.
    fs.copyFileSync(
      path.join(ROOT, 'node_modules/better-sqlite3/build/Release/better_sqlite3.node'),
      path.join(
        cacheDir,
        `better-sqlite3-${SQLITE_VERSION}-linux-arm64-abi${process.versions.modules}.node`,
      ),
    );
    const attempt = copyNativeModules({
      root: ROOT,
      arch: 'linux-arm64',
      release: temp('arm64'),
      packages: EXTERNAL_PACKAGES,
      cacheDir,
      log: () => undefined,
    });
    await expect(attempt).rejects.toThrow(NativeModuleMissing);
    await expect(attempt).rejects.toThrow(
      /another architecture than linux-arm64:\n.*better_sqlite3\.node/,
    );
  });

  it('fails an arm64 build without the cross compiler, naming the package to install', async () => {
    process.env.PATH = temp('empty-path');
    await expect(
      copyNativeModules({
        root: ROOT,
        arch: 'linux-arm64',
        release: temp('arm64'),
        packages: EXTERNAL_PACKAGES,
        cacheDir: temp('cache'),
        log: () => undefined,
      }),
    ).rejects.toThrow(
      /aarch64-linux-gnu-g\+\+ is not installed: apt-get install g\+\+-aarch64-linux-gnu/,
    );
  });
});
