/**
 * `node dist/bench/profile-top.js <file.cpuprofile> [n]`: the functions with the most
 * self time and the most total (inclusive) time in a V8 CPU profile, such as the one
 * `npm run bench -- --only flows --cpu-prof <dir>` writes for the relay.
 */
import fs from 'node:fs';
import { summarizeProfile, type CpuProfile } from './profile-summary.js';

const [file, n] = process.argv.slice(2);
if (!file) {
  process.stderr.write('usage: node dist/bench/profile-top.js <file.cpuprofile> [top]\n');
  process.exitCode = 2;
} else {
  const profile = JSON.parse(fs.readFileSync(file, 'utf8')) as CpuProfile;
  process.stdout.write(`${summarizeProfile(profile, Number(n ?? 25))}\n`);
}
