/**
 * One relay per SQLite data directory: a second one on the same directory refuses to
 * start, with a message that says what to do, and the first serves on. (A relay killed
 * with SIGKILL leaves no stale lock: the crash tests start again on its directory.)
 */
import { describe, expect, it } from 'vitest';
import { DataDirInUse } from '../cloud/store/data-dir-lock.js';
import { TEST_ACCOUNT, post, startTestRelay, tempDataDir } from './support/relay.js';

describe('the data directory lock', () => {
  it('refuses a second relay on the same data directory until the first has stopped', async () => {
    const dataDir = tempDataDir();
    const first = await startTestRelay({}, dataDir);
    const second = startTestRelay({}, dataDir);
    await expect(second).rejects.toBeInstanceOf(DataDirInUse);
    await expect(second).rejects.toThrow(`another relay is using the data directory ${dataDir}`);
    // The first relay did not notice.
    const created = await post(first.baseUrl, 'v1', '/simulator/create', {}, TEST_ACCOUNT);
    expect(created.status).toBe(200);
    await first.close();
    const again = await startTestRelay({}, dataDir);
    const status = await post(
      again.baseUrl,
      'v1',
      '/terminal/status',
      { terminal_id: created.body.terminal_id },
      TEST_ACCOUNT,
    );
    expect(status.status).toBe(200);
    await again.close();
  });
});
