/**
 * The console's built assets (dist/console/, made by `npm run build`), read once into
 * memory: three small files, each answered with its type, a strong ETag and the
 * security headers of every console answer.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export interface Asset {
  body: Buffer;
  type: string;
  etag: string;
}

const TYPES: Record<string, string> = {
  'index.html': 'text/html; charset=utf-8',
  'app.js': 'text/javascript; charset=utf-8',
  'style.css': 'text/css; charset=utf-8',
};

/** dist/console/ of this package, from cloud/console/ or dist/cloud/console/. */
export function defaultAssetsDir(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  while (!existsSync(path.join(dir, 'package.json')) && path.dirname(dir) !== dir) {
    dir = path.dirname(dir);
  }
  return path.join(dir, 'dist', 'console');
}

/** The assets, or undefined when the console was not built. */
export function loadAssets(dir = defaultAssetsDir()): Map<string, Asset> | undefined {
  if (!Object.keys(TYPES).every((name) => existsSync(path.join(dir, name)))) return undefined;
  return new Map(
    Object.entries(TYPES).map(([name, type]) => {
      const body = readFileSync(path.join(dir, name));
      const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;
      return [name, { body, type, etag }];
    }),
  );
}
