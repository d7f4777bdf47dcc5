/**
 * Store conformance: releases. Kept per account; a version of an arch is published once
 * (a release never changes under a rollout); another account's are not found.
 */
import { expect, it } from 'vitest';
import type { ReleaseRecord } from '../records.js';
import { NOW, type StoreFactory } from './store-fixtures.js';

const release = (version: string, over: Partial<ReleaseRecord> = {}): ReleaseRecord => ({
  accountId: 'acct-1',
  version,
  arch: 'linux-x64',
  manifest: `{"name":"tps-agent","version":"${version}"}`,
  signature: 'c2lnbmF0dXJl',
  archiveSha256: 'a'.repeat(64),
  archiveSize: 5_000_000_000,
  file: `tps-agent-${version}-linux-x64.tar.gz`,
  publishedAt: NOW,
  ...over,
});

export function releaseCases(factory: StoreFactory): void {
  it('keeps a release per account, version and arch, once', async () => {
    const store = await factory.open();
    expect(await store.addRelease(release('1.0.0'))).toBe(true);
    expect(await store.addRelease(release('1.0.0', { archiveSha256: 'b'.repeat(64) }))).toBe(false);
    expect(await store.addRelease(release('1.0.0', { arch: 'linux-arm64' }))).toBe(true);
    expect(await store.addRelease(release('1.0.0', { accountId: 'acct-2' }))).toBe(true);
    expect(await store.findRelease('acct-1', '1.0.0', 'linux-x64')).toEqual(release('1.0.0'));
    expect(await store.findRelease('acct-3', '1.0.0', 'linux-x64')).toBeUndefined();
    expect(await store.findRelease('acct-1', '1.0.1', 'linux-x64')).toBeUndefined();
    await store.close();
  });

  it('lists an account’s releases, newest published first', async () => {
    const store = await factory.open();
    await store.addRelease(release('1.0.0'));
    await store.addRelease(release('1.1.0', { publishedAt: '2026-11-22T12:00:00.000Z' }));
    await store.addRelease(release('9.9.9', { accountId: 'acct-2' }));
    expect((await store.listReleases('acct-1')).map((r) => r.version)).toEqual(['1.1.0', '1.0.0']);
    await store.close();
  });
}
