/**
 * The node-pty backend of openPty(): `open()` of `@lydell/node-pty` makes a master/slave
 * pair in process. node-pty also opens and reads the slave end; we close that stream (it
 * would steal the host's bytes) and hold the slave open by path without reading it, so the
 * master never fails with EIO while no host has the device open. The line is set raw (no
 * echo, no line editing, no CR/LF mapping); node-serialport sets it fully raw on open.
 */
import { closeSync, constants, openSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Socket } from 'node:net';
import type { ReadStream } from 'node:tty';
import type { PtyPair } from './pty-pair.js';

/** The part of node-pty used here: `open()` is exported but not in its type declarations. */
interface NodePtyTerminal {
  readonly master: Socket;
  readonly slave: Socket;
  readonly ptsName: string;
}
interface NodePty {
  open?: (options: { encoding: null }) => NodePtyTerminal;
}

export function openNodePty(): PtyPair {
  if (process.platform === 'win32') throw new Error('no pseudo-terminals on Windows');
  const nodePty = createRequire(import.meta.url)('@lydell/node-pty') as NodePty;
  if (typeof nodePty.open !== 'function') throw new Error('@lydell/node-pty has no open()');
  const terminal = nodePty.open({ encoding: null });
  const path = terminal.ptsName;
  terminal.slave.destroy();
  const held = openSync(path, constants.O_RDWR | constants.O_NOCTTY);
  const master = terminal.master as ReadStream;
  master.setRawMode(true);
  // node-pty rethrows a master error when it sees no other listener: we report it instead.
  master.on('error', () => {});
  let closed = false;
  return {
    path,
    backend: 'node-pty',
    stream: master,
    description: `pty ${path} (node-pty)`,
    close: async () => {
      if (closed) return;
      closed = true;
      await new Promise<void>((resolve) => {
        if (master.destroyed) return resolve();
        master.once('close', () => resolve());
        master.destroy();
      });
      closeSync(held);
    },
  };
}
