/**
 * Release archives an attacker shapes: a gzip'd tar whose entry declares gigabytes and
 * whose zeros inflate far beyond what the upload weighs. Built as gzip members one after
 * another (gzip readers inflate them as one stream), so a bomb of gigabytes costs one
 * compression of 64 MiB to make.
 */
import zlib from 'node:zlib';
import * as tar from 'tar';

const ZEROS_PER_MEMBER = 64 * 1024 * 1024;
let zerosMember: Buffer | undefined;

/** One tar header block for a file `path` of `size` bytes (tar's own encoder). */
export function tarHeader(path: string, size: number, type: 'File' | 'SymbolicLink' = 'File') {
  const block = Buffer.alloc(512);
  new tar.Header({
    path,
    size,
    type,
    mode: 0o644,
    mtime: new Date(0),
    ...(type === 'SymbolicLink' ? { linkpath: '/etc/passwd' } : {}),
  }).encode(block, 0);
  return block;
}

/**
 * A gzip'd tar: a header for `path` declaring `declaredBytes`, then about `zeroBytes` of
 * zeros (rounded up to 64 MiB), all inflating from a couple of MiB.
 */
export function releaseBomb(options: {
  declaredBytes: number;
  zeroBytes: number;
  path?: string;
}): Buffer {
  zerosMember ??= zlib.gzipSync(Buffer.alloc(ZEROS_PER_MEMBER), { level: 9 });
  const members: Buffer[] = [
    zlib.gzipSync(tarHeader(options.path ?? 'bin/tps-agent.js', options.declaredBytes)),
  ];
  for (let inflated = 0; inflated < options.zeroBytes; inflated += ZEROS_PER_MEMBER) {
    members.push(zerosMember);
  }
  // The tar's end, two zero blocks: a tar without it is refused before anything else.
  members.push(zlib.gzipSync(Buffer.alloc(1024)));
  return Buffer.concat(members);
}
