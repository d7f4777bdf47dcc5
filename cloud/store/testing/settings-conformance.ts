/**
 * Conformance of SettingsStore (ports/settings.ts): across processes, a claimed setting
 * keeps one value, so that relays starting at once agree (an account's local TLS
 * authority is made once). Settings kept by key: accounts-conformance.ts, with credentials.
 */
import { describe, expect, it } from 'vitest';
import { X509Certificate, generateKeyPairSync } from 'node:crypto';
import { LocalAuthority } from '../../local-tls/authority.js';
import { peerFixtures } from './peer-fixtures.js';
import { NOW, type StoreFactory } from './store-fixtures.js';

export function settingsConformance(factory: StoreFactory): void {
  describe('settings (SettingsStore)', () => {
    if (factory.peer) {
      const { spread, twoHandles } = peerFixtures(factory, factory.peer);
      describe('across processes (a second handle on the same data)', () => {
        it('a setting claimed through both handles at once keeps one value', async () => {
          const [store, other] = await twoHandles();
          const outcomes = await spread([store, other], 10, (handle, i) =>
            handle.claimSetting('instance', `value-${i}`),
          );
          const values = outcomes.map((o) => (o.status === 'fulfilled' ? o.value : 'failed'));
          expect(new Set(values).size).toBe(1);
          expect(await other.getSetting('instance')).toBe(values[0]);
          await Promise.all([store.close(), other.close()]);
        });

        it("an account's local TLS authority made through both handles at once is one, key and all", async () => {
          const [store, other] = await twoHandles();
          const clock = { now: () => new Date(NOW) };
          const made = await Promise.all(
            [store, other, store, other].map((handle) =>
              LocalAuthority.of(handle, 'acct-1', clock),
            ),
          );
          expect(new Set(made.map((authority) => authority.certificate)).size).toBe(1);
          // Read back through the other handle, it signs with the key its certificate names.
          const again = await LocalAuthority.of(other, 'acct-1', clock);
          const leaf = await again.sign({
            terminalId: 't-1',
            publicKey: generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).publicKey.export({
              type: 'spki',
              format: 'der',
            }),
            keyType: 'ec',
            ipAddresses: ['192.168.1.20'],
            dnsNames: ['t-1.tps.internal'],
            notAfter: new Date(Date.parse(NOW) + 86_400_000),
          });
          const authority = new X509Certificate(made[0]!.certificate);
          expect(new X509Certificate(leaf).verify(authority.publicKey)).toBe(true);
          // Another account's is another.
          const elsewhere = await LocalAuthority.of(store, 'acct-2', clock);
          expect(elsewhere.certificate).not.toBe(made[0]!.certificate);
          expect(
            new X509Certificate(leaf).verify(new X509Certificate(elsewhere.certificate).publicKey),
          ).toBe(false);
          await Promise.all([store.close(), other.close()]);
        });
      });
    }
  });
}
