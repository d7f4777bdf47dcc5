/**
 * The socat backend of openPty(): `socat -d -d pty,raw,echo=0 pty,raw,echo=0` links two
 * pseudo-terminals and names them on stderr. We open the first with node-serialport and
 * hand out the second; socat stays up across hosts opening and closing it.
 */
import { spawn } from 'node:child_process';
import { openSerialPort } from './serial-port.js';
import type { PtyPair } from './pty-pair.js';

const START_TIMEOUT_MS = 5000;

export async function openSocatPty(): Promise<PtyPair> {
  const child = spawn('socat', ['-d', '-d', 'pty,raw,echo=0', 'pty,raw,echo=0'], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const exited = new Promise<void>((resolve) => child.once('close', () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
  };
  let paths: [string, string];
  try {
    paths = await ptyPaths(child);
  } catch (error) {
    await stop();
    throw error;
  }
  const [ours, theirs] = paths;
  const port = await openSerialPort(ours).catch(async (error: unknown) => {
    await stop();
    throw error;
  });
  return {
    path: theirs,
    backend: 'socat',
    stream: port.stream,
    description: `pty ${theirs} (socat)`,
    close: async () => {
      await port.close();
      await stop();
    },
  };
}

function ptyPaths(child: ReturnType<typeof spawn>): Promise<[string, string]> {
  return new Promise((resolve, reject) => {
    let text = '';
    const found: string[] = [];
    const timer = setTimeout(
      () => reject(new Error(`socat named no ptys within ${START_TIMEOUT_MS} ms: ${text}`)),
      START_TIMEOUT_MS,
    );
    child.once('error', (error: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      reject(
        new Error(error.code === 'ENOENT' ? 'socat is not installed' : `socat: ${error.message}`),
      );
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      reject(new Error(`socat exited (${code}): ${text.trim()}`));
    });
    const onData = (chunk: Buffer) => {
      text += chunk.toString();
      for (const match of text.matchAll(/PTY is (\S+)/g)) {
        if (match[1] && !found.includes(match[1])) found.push(match[1]);
      }
      if (found.length < 2) return;
      clearTimeout(timer);
      // From here on socat's notices are not needed: read and drop them.
      child.stderr?.off('data', onData);
      child.stderr?.resume();
      resolve([found[0] as string, found[1] as string]);
    };
    child.stderr?.on('data', onData);
  });
}
