/**
 * The Node.js lines the project supports: the `engines` range of package.json, checked at
 * the start of `tps` so that an older Node says so in one line instead of failing later on
 * a missing built-in (node:sqlite, process.execve…) with a stack trace.
 */
export const SUPPORTED_NODE = '^24.11 || >=26';

/** Whether `version` (`24.21.0`, as in process.versions.node) is in SUPPORTED_NODE. */
export function isSupportedNode(version: string): boolean {
  const [major = 0, minor = 0] = version.split('.').map(Number);
  return (major === 24 && minor >= 11) || major >= 26;
}

/** The refusal `tps` prints on an unsupported Node.js, or undefined on a supported one. */
export function unsupportedNodeMessage(version: string): string | undefined {
  if (isSupportedNode(version)) return undefined;
  return (
    `tps needs Node.js 24 (24.11 or later) or 26 and later; this is Node.js ${version}. ` +
    'README.md, "Running it", says how to get one without touching the system.\n'
  );
}
