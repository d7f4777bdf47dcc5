import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { isSupportedNode, SUPPORTED_NODE, unsupportedNodeMessage } from './node-line.js';

describe('the supported Node.js lines', () => {
  it('are the engines range of package.json', () => {
    const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
      engines: { node: string };
    };
    expect(pkg.engines.node).toBe(SUPPORTED_NODE);
  });

  it.each([
    ['20.20.2', false],
    ['22.22.0', false],
    ['24.10.0', false],
    ['24.11.0', true],
    ['24.21.0', true],
    ['25.9.0', false],
    ['26.0.0', true],
    ['26.12.1', true],
    ['27.1.0', true],
  ])('%s: %s', (version, supported) => {
    expect(isSupportedNode(version)).toBe(supported);
    expect(unsupportedNodeMessage(version) === undefined).toBe(supported);
  });

  it('names the running version and the lines in its refusal', () => {
    expect(unsupportedNodeMessage('20.20.2')).toMatch(
      /Node\.js 24 .*26.*this is Node\.js 20\.20\.2/,
    );
  });
});
