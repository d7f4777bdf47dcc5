import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { agentClientId, doctorClientId, terminalTopics } from '../../protocol/index.js';
import { mayConnectAs, mayPublish, mayReceive, maySubscribe } from './acl.js';
import {
  checkRelayUsername,
  emqxAclFile,
  emqxConf,
  mosquittoAclFile,
  mosquittoConf,
  mosquittoPasswordFile,
  writeFileAtomic,
} from './broker-files.js';

/** The topics of terminal `t` an agent may publish to / subscribe to, as acl.ts decides. */
function allowed(check: typeof mayPublish, t: string) {
  const topics = terminalTopics(t);
  return Object.values(topics)
    .filter((topic) => check({ role: 'agent', terminalId: t }, topic))
    .map((topic) => topic.replace(`/${t}/`, '/%u/'));
}

describe('broker files', () => {
  it('Mosquitto ACL: the embedded broker’s rules, as patterns on the username', () => {
    const acl = mosquittoAclFile('tps-relay');
    const lines = acl.split('\n').filter((l) => l && !l.startsWith('#'));
    expect(lines.filter((l) => l.startsWith('pattern write ')).map((l) => l.slice(14))).toEqual(
      allowed(mayPublish, 't-2000000001'),
    );
    expect(lines.filter((l) => l.startsWith('pattern read ')).map((l) => l.slice(13))).toEqual(
      allowed(maySubscribe, 't-2000000001'),
    );
    expect(lines.slice(-2)).toEqual(['user tps-relay', 'topic readwrite tps/v1/#']);
    expect(lines).toHaveLength(17);
  });

  it('EMQX ACL: the same rules with ${username}, everything else denied', () => {
    const acl = emqxAclFile('tps-relay');
    expect(acl).toContain('{allow, {username, "tps-relay"}, all, ["tps/v1/#"]}.');
    expect(acl).toContain(
      '{allow, all, publish, ["tps/v1/t/${username}/cmd-ack", "tps/v1/t/${username}/report", "tps/v1/t/${username}/presence", "tps/v1/t/${username}/update-status", "tps/v1/t/${username}/config-report", "tps/v1/t/${username}/facts", "tps/v1/t/${username}/diag-reply", "tps/v1/t/${username}/local-cert-request"]}.',
    );
    expect(acl).toContain(
      '{allow, all, subscribe, ["tps/v1/t/${username}/cmd", "tps/v1/t/${username}/report-ack", "tps/v1/t/${username}/update", "tps/v1/t/${username}/config", "tps/v1/t/${username}/diag", "tps/v1/t/${username}/local-credentials", "tps/v1/t/${username}/local-cert"]}.',
    );
    expect(acl.trim().endsWith('{deny, all}.')).toBe(true);
  });

  it('an agent’s credential may use its own client id and its doctor’s, nothing else', () => {
    expect(mayConnectAs('t-2000000001', agentClientId('t-2000000001'))).toBe(true);
    expect(mayConnectAs('t-2000000001', doctorClientId('t-2000000001', 4242))).toBe(true);
    for (const other of [
      agentClientId('t-2000000002'),
      doctorClientId('t-2000000002', 4242),
      `${agentClientId('t-2000000001')}x`,
      'doctor-t-2000000001-',
      'doctor-t-2000000001-12-3',
      't-2000000001',
      '',
    ]) {
      expect(mayConnectAs('t-2000000001', other), other).toBe(false);
    }
  });

  it('a message is handed to an agent only on its own incoming topics; to the relay, all', () => {
    const agent = { role: 'agent' as const, terminalId: 't-2000000001' };
    const own = terminalTopics('t-2000000001');
    const other = terminalTopics('t-2000000002');
    expect(Object.values(own).filter((topic) => mayReceive(agent, topic))).toEqual([
      own.command,
      own.reportAck,
      own.update,
      own.config,
      own.diagnostic,
      own.localCredentials,
      own.localCert,
    ]);
    expect(Object.values(other).some((topic) => mayReceive(agent, topic))).toBe(false);
    expect(mayReceive(agent, '$SYS/broker/heartbeat')).toBe(false);
    expect(Object.values(other).every((topic) => mayReceive({ role: 'relay' }, topic))).toBe(true);
  });

  it('Mosquitto conf: agents’ listener binds each session to its username, the relays’ does not', () => {
    const conf = mosquittoConf(
      { passwordFile: '/etc/m/passwd', aclFile: '/etc/m/acl' },
      { agents: { port: 8883 }, relays: { port: 1883, host: '10.0.0.5' } },
    ).split('\n');
    const agents = conf.indexOf('listener 8883');
    const relays = conf.indexOf('listener 1883 10.0.0.5');
    expect(agents).toBeGreaterThan(0);
    expect(relays).toBeGreaterThan(agents);
    const setting = conf.indexOf('use_username_as_clientid true');
    expect(setting > agents && setting < relays).toBe(true);
    expect(conf).toContain('password_file /etc/m/passwd');
    expect(conf).toContain('allow_anonymous false');
  });

  it('EMQX conf: agents’ zone overrides every client id with agent-<username>', () => {
    const conf = emqxConf(
      { aclFile: '/etc/emqx/tps/acl.conf' },
      { agents: { port: 8883 }, relays: { port: 1883, host: '10.0.0.5' } },
    );
    const prefix = agentClientId('');
    expect(conf).toContain(`clientid_override = "concat(['${prefix}', username])"`);
    expect(conf).toMatch(
      /listeners\.tcp\.agents \{\n {2}bind = "0\.0\.0\.0:8883"\n {2}zone = agents/,
    );
    expect(conf).toMatch(/listeners\.tcp\.default \{\n {2}bind = "10\.0\.0\.5:1883"/);
  });

  it('password file lines are username:hash', () => {
    expect(
      mosquittoPasswordFile([
        { username: 'tps-relay', hash: '$7$101$a$b' },
        { username: 't-2000000001', hash: '$7$101$c$d' },
      ]),
    ).toBe('tps-relay:$7$101$a$b\nt-2000000001:$7$101$c$d\n');
  });

  it('refuses a relay username that would break a broker file', () => {
    for (const bad of ['', 'a b', 'a:b', 'a"b', 'a#', 'a+b', 'a/b', 'x'.repeat(65)]) {
      expect(() => checkRelayUsername(bad), bad).toThrow(/relay username/);
    }
    expect(() => checkRelayUsername('tps-relay.eu-1@example')).not.toThrow();
  });

  it('writes a file whole, mode 0600, replacing the old one and leaving no temporary file', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tps-broker-files-'));
    try {
      const file = path.join(dir, 'passwd');
      fs.writeFileSync(file, 'old\n', { mode: 0o644 });
      const inode = fs.statSync(file).ino;
      expect(writeFileAtomic(file, 'new\n')).toBe(true);
      expect(fs.readFileSync(file, 'utf8')).toBe('new\n');
      expect(fs.statSync(file).mode & 0o777).toBe(0o600);
      expect(fs.statSync(file).ino).not.toBe(inode);
      expect(fs.readdirSync(dir)).toEqual(['passwd']);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it.skipIf(process.getuid?.() !== 0)(
    'run as root, keeps the owner of the file it replaces (the broker’s user)',
    () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tps-broker-files-'));
      try {
        const file = path.join(dir, 'acl');
        fs.writeFileSync(file, 'old\n', { mode: 0o600 });
        fs.chownSync(file, 4242, 4343);
        expect(writeFileAtomic(file, 'new\n')).toBe(true);
        const stat = fs.statSync(file);
        expect([stat.uid, stat.gid, stat.mode & 0o777]).toEqual([4242, 4343, 0o600]);
        expect(fs.readFileSync(file, 'utf8')).toBe('new\n');
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    },
  );
});
