/**
 * better-sqlite3 for linux-arm64, built here. Its prebuilt binaries come from GitHub at
 * install time, which a build machine without that access cannot fetch; the package ships
 * its sources (SQLite's amalgamation included), so node-gyp builds them with Debian's
 * cross compiler (`apt-get install g++-aarch64-linux-gnu`) against this Node's headers.
 * The binary is kept in the cache, keyed by package version, architecture and Node ABI.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import type { Arch } from './manifest.js';

export class CrossCompileUnavailable extends Error {}

const TOOLCHAIN: Partial<Record<Arch, { prefix: string; gypArch: string; debian: string }>> = {
  'linux-arm64': {
    prefix: 'aarch64-linux-gnu-',
    gypArch: 'arm64',
    debian: 'g++-aarch64-linux-gnu',
  },
};

function onPath(command: string): boolean {
  return (process.env.PATH ?? '')
    .split(path.delimiter)
    .some((dir) => dir !== '' && fs.existsSync(path.join(dir, command)));
}

/** node-gyp as npm ships it: the one that built the project's own native modules. */
function nodeGypScript(): string {
  const npmDir = path.resolve(path.dirname(process.execPath), '../lib/node_modules/npm');
  const candidates = [path.join(npmDir, 'node_modules/node-gyp/bin/node-gyp.js')];
  try {
    candidates.push(createRequire(import.meta.url).resolve('node-gyp/bin/node-gyp.js'));
  } catch {
    // not a dependency of the project: npm's own is the one to use
  }
  const found = candidates.find((file) => fs.existsSync(file));
  if (!found) throw new CrossCompileUnavailable('node-gyp not found (it ships with npm)');
  return found;
}

/** The directory holding include/node for this Node: node-gyp downloads them otherwise. */
function nodeHeadersDir(): string {
  const candidates = [
    process.env.npm_config_nodedir,
    path.resolve(path.dirname(process.execPath), '..'),
    '/usr',
  ].filter((dir): dir is string => Boolean(dir));
  const found = candidates.find((dir) => fs.existsSync(path.join(dir, 'include/node/node.h')));
  if (!found) {
    throw new CrossCompileUnavailable(
      `Node.js ${process.version}'s headers (include/node/node.h) are not installed here`,
    );
  }
  return found;
}

function run(
  command: string,
  args: string[],
  cwd: string,
  env: NodeJS.ProcessEnv,
): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('error', reject);
    child.once('close', (code) =>
      code === 0
        ? resolve(output)
        : reject(
            new Error(
              `${path.basename(args[0] ?? command)} failed (${code}):\n${output.slice(-4000)}`,
            ),
          ),
    );
  });
}

export interface CrossCompileOptions {
  /** better-sqlite3's installed package (its sources and deps/ included). */
  sourceDir: string;
  arch: Arch;
  cacheDir: string;
  log: (line: string) => void;
}

/** The path of better_sqlite3.node for `arch`, from the cache or built now. */
export async function crossCompileBetterSqlite3(options: CrossCompileOptions): Promise<string> {
  const toolchain = TOOLCHAIN[options.arch];
  if (!toolchain || process.arch !== 'x64') {
    throw new CrossCompileUnavailable(
      `better-sqlite3 for ${options.arch} can be built only on an x64 machine with a cross compiler`,
    );
  }
  const { version } = JSON.parse(
    fs.readFileSync(path.join(options.sourceDir, 'package.json'), 'utf8'),
  ) as { version: string };
  const cached = path.join(
    options.cacheDir,
    `better-sqlite3-${version}-${options.arch}-abi${process.versions.modules}.node`,
  );
  if (fs.existsSync(cached)) return cached;
  const compiler = `${toolchain.prefix}g++`;
  if (!onPath(compiler)) {
    throw new CrossCompileUnavailable(
      `${compiler} is not installed: apt-get install ${toolchain.debian} (better-sqlite3 has no prebuilt ${options.arch} binary reachable from here)`,
    );
  }
  const headers = nodeHeadersDir();
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'tps-sqlite-build-'));
  try {
    for (const entry of ['package.json', 'binding.gyp', 'src', 'deps']) {
      fs.cpSync(path.join(options.sourceDir, entry), path.join(work, entry), { recursive: true });
    }
    options.log(
      `building better-sqlite3 ${version} for ${options.arch} with ${compiler} (a few minutes)…`,
    );
    await run(
      process.execPath,
      [
        nodeGypScript(),
        'rebuild',
        '--release',
        `--arch=${toolchain.gypArch}`,
        `--nodedir=${headers}`,
        `-j`,
        `${os.availableParallelism()}`,
      ],
      work,
      {
        ...process.env,
        CC: `${toolchain.prefix}gcc`,
        CXX: compiler,
        LINK: compiler,
        AR: `${toolchain.prefix}ar`,
      },
    );
    fs.mkdirSync(options.cacheDir, { recursive: true });
    fs.copyFileSync(path.join(work, 'build/Release/better_sqlite3.node'), `${cached}.tmp`);
    fs.renameSync(`${cached}.tmp`, cached);
    return cached;
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}
