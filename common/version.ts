/**
 * This release's version, from the package.json it ships with (the nearest one above this
 * file, in the sources and in dist/ alike), so that `tps --version`, the agent's presence
 * and the relay's metrics never disagree with what was installed.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';

const PackageJson = z.object({ name: z.literal('terminal-payment-service'), version: z.string() });

function readVersion(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const file = path.join(dir, 'package.json');
    if (fs.existsSync(file)) {
      const parsed = PackageJson.safeParse(JSON.parse(fs.readFileSync(file, 'utf8')));
      if (parsed.success) return parsed.data.version;
    }
    const above = path.dirname(dir);
    if (above === dir) return '0.0.0-unknown';
    dir = above;
  }
}

export const VERSION = readVersion();
