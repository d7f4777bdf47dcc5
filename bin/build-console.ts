/**
 * Builds the console's browser assets (console/) into dist/console/: one script bundled
 * and minified by esbuild, the stylesheet and the page copied beside it. `npm run build`
 * runs it after the TypeScript build; the console's tests run it too, so a clean clone
 * tests what it ships.
 */
import { randomUUID } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

/** The package's root, found from this file in bin/ or in dist/bin/. */
export function packageRoot(): string {
  const here = path.dirname(fileURLToPath(import.meta.url));
  return path.basename(path.dirname(here)) === 'dist'
    ? path.resolve(here, '..', '..')
    : path.resolve(here, '..');
}

export async function buildConsole(outDir = path.join(packageRoot(), 'dist', 'console')) {
  const source = path.join(packageRoot(), 'console');
  await mkdir(outDir, { recursive: true });
  const bundled = await build({
    entryPoints: [path.join(source, 'main.ts')],
    outfile: path.join(outDir, 'app.js'),
    bundle: true,
    minify: true,
    format: 'esm',
    target: 'es2022',
    platform: 'browser',
    legalComments: 'none',
    logLevel: 'warning',
    write: false,
  });
  const files: Array<[string, Uint8Array | Buffer]> = [
    ['app.js', bundled.outputFiles[0]!.contents],
    ['index.html', await readFile(path.join(source, 'index.html'))],
    ['style.css', await readFile(path.join(source, 'style.css'))],
  ];
  // Each file replaced whole (written aside, then renamed): a relay starting meanwhile,
  // or another build at once, never reads half a file.
  for (const [name, contents] of files) {
    const aside = path.join(outDir, `.${name}.${process.pid}.${randomUUID()}`);
    await writeFile(aside, contents);
    await rename(aside, path.join(outDir, name));
  }
  return outDir;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  await buildConsole();
}
