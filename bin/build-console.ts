/**
 * Builds the console's browser assets (console/) into dist/console/: one script bundled
 * and minified by esbuild, the stylesheet and the page copied beside it. `npm run build`
 * runs it after the TypeScript build; the console's tests run it too, so a clean clone
 * tests what it ships.
 */
import { copyFile, mkdir } from 'node:fs/promises';
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
  await build({
    entryPoints: [path.join(source, 'main.ts')],
    outfile: path.join(outDir, 'app.js'),
    bundle: true,
    minify: true,
    format: 'esm',
    target: 'es2022',
    platform: 'browser',
    legalComments: 'none',
    logLevel: 'warning',
  });
  await copyFile(path.join(source, 'index.html'), path.join(outDir, 'index.html'));
  await copyFile(path.join(source, 'style.css'), path.join(outDir, 'style.css'));
  return outDir;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  await buildConsole();
}
