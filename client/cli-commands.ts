/** `tps pos confirm`, `get`, `unconfirmed`, `status`, `print`, `events` and `local-trust`: one API call each. */
import fs from 'node:fs';
import { z } from 'zod';
import { ExternalId, PRINT_CONTENTS_MAX } from '../protocol/index.js';
import { ApiClient } from './api-client.js';
import { eventLine, statusLine, transactionDetails, transactionLine } from './cli-format.js';
import { UsageError } from '../common/cli.js';
import { amount, flags, localPath, type Connection, type Out, type Values } from './cli-options.js';
import { followEvents } from './events.js';
import type { Revision } from './types.js';

export async function plain(
  command: string,
  rest: string[],
  conn: Connection,
  values: Values,
  out: Out,
): Promise<number> {
  const local = localPath(conn);
  const api = new ApiClient<Revision>({
    ...conn,
    revision: conn.revision,
    ...(local ? { local } : {}),
  });
  const terminal_id = conn.terminalId;
  switch (command) {
    case 'confirm': {
      const input = flags(
        {
          'external-id': z.string({ error: 'is needed' }).pipe(ExternalId),
          'result-code': z.string().default('SUCCESS'),
          description: z.string().optional(),
          'captured-amount': amount().optional(),
        },
        values,
      );
      const { transaction } = await api.confirm({
        terminal_id,
        external_id: input['external-id'],
        result_code: input['result-code'],
        ...(input.description !== undefined ? { result_description: input.description } : {}),
        ...(input['captured-amount'] !== undefined
          ? { captured_amount: input['captured-amount'] }
          : {}),
      });
      out.say(transactionLine(transaction));
      out.json(transaction);
      return 0;
    }
    case 'get': {
      const input = flags(
        { 'external-id': z.string({ error: 'is needed' }).pipe(ExternalId) },
        values,
      );
      const { transaction } = await api.get({
        terminal_id,
        external_id: input['external-id'],
        options: { wait_seconds: 0, ...(values['extra-amounts'] ? { extra_amounts: true } : {}) },
      });
      out.say(transactionDetails(transaction));
      out.json(transaction);
      return 0;
    }
    case 'unconfirmed': {
      const { transactions } = await api.unconfirmed({ terminal_id });
      if (transactions.length === 0) out.say('No unconfirmed transactions.');
      for (const txn of transactions) out.say(transactionLine(txn));
      out.json(transactions);
      return 0;
    }
    case 'status': {
      const { status } = await api.terminalStatus({ terminal_id });
      out.say(statusLine(status));
      out.json(status);
      return 0;
    }
    case 'print':
      return print(api, terminal_id, rest, out);
    case 'events':
      return events(api, terminal_id, values, out);
    case 'local-trust':
      return localTrust(api, terminal_id, values, out);
  }
  return 2;
}

async function localTrust(
  api: ApiClient<Revision>,
  terminalId: string,
  values: Values,
  out: Out,
): Promise<number> {
  const input = flags({ out: z.string().min(1).optional() }, values);
  const trust = await api.localTrust(terminalId);
  if (input.out !== undefined) {
    // Never over another file: an authority trusted for something else stays as it was.
    fs.writeFileSync(input.out, trust.ca, { flag: 'wx' });
    out.note(`The authority of ${trust.terminalId}'s agent is in ${input.out}.`);
  } else {
    out.say(trust.ca.trimEnd());
  }
  // Notes on stderr: the PEM alone on stdout can be redirected into a file.
  if (trust.addresses.length === 0) {
    out.note('Its agent has no certificate yet: no address to reach it at.');
  } else {
    out.note(`Check the agent's certificate against the name ${trust.serverName}.`);
    out.note(`Addresses: ${(trust.baseUrls.length ? trust.baseUrls : trust.addresses).join(' ')}`);
    if (trust.certificateExpiresAt)
      out.note(`Its certificate runs until ${trust.certificateExpiresAt}.`);
  }
  out.json(trust);
  return 0;
}

async function print(
  api: ApiClient<Revision>,
  terminalId: string,
  rest: string[],
  out: Out,
): Promise<number> {
  const file = rest[0];
  if (!file) throw new UsageError('print needs a PNG file: tps pos print FILE.png');
  let contents: string;
  try {
    contents = fs.readFileSync(file).toString('base64');
  } catch (error) {
    // Well given, but not there: a failure (1), as in 'tps bridge print', not a usage error.
    throw new Error(`cannot read ${file}: ${(error as Error).message}`, { cause: error });
  }
  // Fragments of whole base64 quads, each within the API's limit.
  const size = PRINT_CONTENTS_MAX - (PRINT_CONTENTS_MAX % 4);
  const fragments = Math.max(1, Math.ceil(contents.length / size));
  for (let i = 0; i < fragments; i++) {
    await api.print({
      terminal_id: terminalId,
      format: 'PNG',
      contents: contents.slice(i * size, (i + 1) * size),
      ...(i < fragments - 1 ? { continue: true } : {}),
    });
  }
  out.say(
    `Queued ${file} for printing on terminal ${terminalId}${fragments > 1 ? ` (${fragments} fragments)` : ''}.`,
  );
  out.json({ queued: true, fragments });
  return 0;
}

async function events(
  api: ApiClient<Revision>,
  terminalId: string,
  values: Values,
  out: Out,
): Promise<number> {
  const input = flags(
    { limit: z.coerce.number().int().min(1).optional(), type: z.string().optional() },
    values,
  );
  const stop = new AbortController();
  const onSigint = () => stop.abort();
  process.on('SIGINT', onSigint);
  try {
    for await (const event of followEvents(api, {
      subject: terminalId,
      ...(input.type !== undefined ? { type: input.type } : {}),
      ...(input.limit !== undefined ? { limit: input.limit } : {}),
      follow: values.follow === true,
      waitSeconds: values.follow ? 25 : 0,
      signal: stop.signal,
      onRetry: (error) => out.note(`events: ${error.code}, trying again`),
    })) {
      out.say(eventLine(event));
      out.json(event.event);
    }
    return 0;
  } finally {
    process.off('SIGINT', onSigint);
  }
}
