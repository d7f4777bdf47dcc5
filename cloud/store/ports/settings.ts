/** The store's settings: values by key that the relays share (secrets, markers, counters). */
export interface SettingsStore {
  getSetting(key: string): Promise<string | undefined>;
  putSetting(key: string, value: string): Promise<void>;
  /** Stores `value` unless the key has one; answers the value kept (relays starting at once agree). */
  claimSetting(key: string, value: string): Promise<string>;
}
