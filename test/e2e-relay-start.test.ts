/**
 * A relay that cannot start must exit, so that whatever supervises it (systemd, a container
 * runtime) starts it again: a relay restarted onto a port still taken (the old process not
 * quite gone, another service) must not stay up half started, its embedded broker taking
 * agents' connections, with no HTTP API.
 */
import net from 'node:net';
import { rmSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { runTps, type TpsChild } from './support/e2e-parts.js';
import { tempDataDir } from './support/relay.js';

describe('e2e: the relay cannot listen', () => {
  const dataDir = tempDataDir();
  let blocker: net.Server | undefined;
  let relay: TpsChild | undefined;

  afterAll(async () => {
    await relay?.stop('SIGKILL');
    await new Promise<void>((resolve) => (blocker ? blocker.close(() => resolve()) : resolve()));
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('exits with an error when its HTTP port is taken, instead of running on without an API', async () => {
    blocker = net.createServer();
    await new Promise<void>((resolve) => blocker!.listen(0, '127.0.0.1', () => resolve()));
    const takenPort = (blocker.address() as net.AddressInfo).port;
    relay = runTps(['cloud'], {
      TPS_HOST: '127.0.0.1',
      TPS_PORT: String(takenPort),
      TPS_MQTT_PORT: '0',
      TPS_DATA_DIR: dataDir,
      TPS_DEFAULT_SIMULATOR: 'false',
    });
    const exited = await new Promise<number | null | 'still running'>((resolve) => {
      const timer = setTimeout(() => resolve('still running'), 10_000);
      relay!.child.once('exit', (code) => {
        clearTimeout(timer);
        resolve(code);
      });
    });
    expect(relay.output()).toMatch(/EADDRINUSE/);
    expect(exited, `tps cloud output:\n${relay.output()}`).toBe(1);
  }, 20_000);
});
