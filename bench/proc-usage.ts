/**
 * RSS and CPU of a process that reports nothing over IPC (the packaged agent, Mosquitto),
 * read from /proc as `ps` would.
 */
import fs from 'node:fs';

export function rssOf(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1] ?? 0) * 1024;
}

/** User + system CPU of a process so far, in seconds (/proc/PID/stat, clock ticks of 1/100 s). */
export function cpuSecondsOf(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}
