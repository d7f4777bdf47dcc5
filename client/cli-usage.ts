/** The usage texts of `tps pos` and of each of its commands (docs/client.md). */
import { DEFAULT_BASE_URL, DEFAULT_JOURNAL } from './cli-options.js';

const CONNECTION = `Connection (a flag wins over its environment variable):
  --base-url URL     TPS_BASE_URL     the relay, without the version (default ${DEFAULT_BASE_URL})
  --username U       TPS_USERNAME     API username (a terminal's or the account's)
  --password P       TPS_PASSWORD     API password
  --terminal ID      TPS_TERMINAL_ID  the terminal
  --journal FILE     TPS_JOURNAL      payment journal (default ${DEFAULT_JOURNAL})
  --revision v0|v1                    API revision (default v1)
  --local URL        TPS_LOCAL_URL    the terminal's agent on the shop's network (local mode),
                                      e.g. https://192.168.1.20:8443/pos: used when the relay
                                      cannot be reached
  --local-ca FILE    TPS_LOCAL_CA     the certificates to trust for it (tps pos local-trust)
  --local-first                       the local path first, the relay when it fails
  -h, --help                          this text`;

const EXIT_STATUS = `Exit status: 0 done (the payment succeeded), 1 failed, 2 usage or configuration,
3 payment not successful (declined, refused, conflict), 130 aborted with Ctrl-C.`;

const command = (synopsis: string, what: string, options: string) =>
  `Usage: tps pos ${synopsis}

${what}
${options ? `\n${options}\n` : ''}
${CONNECTION}

${EXIT_STATUS}
`;

const PAYMENT = `Amounts are integers in minor units (1000 is EUR 10.00). Shows the terminal's screen
while it works, then the result and the receipt, and confirms it. Ctrl-C aborts it; a run
killed in the middle is finished by the next purchase or recover on the same journal.`;

export const POS_COMMAND_USAGE: Record<string, string> = {
  purchase: command(
    'purchase --amount N --currency CUR [options]',
    `Pays an amount on the terminal.\n${PAYMENT}`,
    `  --amount N         the amount, in minor units
  --currency CUR     ISO 4217 code, e.g. EUR
  --cashback N       cash given to the customer, in minor units
  --external-id ID   the POS's id of the payment (default: a new pos-UUID)
  --json             print only the final transaction, as JSON`,
  ),
  refund: command(
    'refund --amount N --currency CUR [options]',
    `Refunds an amount to a card.\n${PAYMENT}`,
    `  --amount N                 the amount, in minor units
  --currency CUR             ISO 4217 code, e.g. EUR
  --external-id ID           the POS's id of the refund (default: a new pos-UUID)
  --original ID              the external id of the purchase refunded
  --original-terminal ID     the terminal that took it, if another
  --customer-not-present     the customer is not at the terminal
  --json                     print only the final transaction, as JSON`,
  ),
  confirm: command(
    'confirm --external-id ID [options]',
    'Confirms (or, with a result code other than SUCCESS, voids) a finished transaction.',
    `  --external-id ID         the transaction
  --result-code CODE       SUCCESS (default) or the POS's failure code, e.g. ABORTED
  --description TEXT       why, in words
  --captured-amount N      capture less than was authorised, in minor units
  --json                   print the transaction as JSON`,
  ),
  get: command(
    'get --external-id ID [options]',
    'Shows a transaction, with its receipts.',
    `  --external-id ID   the transaction
  --extra-amounts    also the amounts beside the requested one (tips, cashback)
  --json             print the transaction as JSON`,
  ),
  unconfirmed: command(
    'unconfirmed [--json]',
    'Lists the transactions that finished and wait for a confirmation.',
    `  --json             print them as a JSON array`,
  ),
  status: command(
    'status [--json]',
    "Shows the terminal's status: connected, busy, battery, paper.",
    `  --json             print the status as JSON`,
  ),
  print: command(
    'print FILE.png [--json]',
    "Prints a PNG on the terminal's receipt printer (sent in fragments when large).",
    `  --json             print {queued, fragments} as JSON`,
  ),
  events: command(
    'events [--follow] [--type Transaction|TerminalStatus] [--limit N] [--json]',
    "Lists the terminal's events; with --follow, waits for new ones until Ctrl-C.",
    `  --follow           keep waiting for new events
  --type TYPE        only Transaction or TerminalStatus events
  --limit N          at most N events a page
  --json             print each event as a JSON line`,
  ),
  'local-trust': command(
    'local-trust [--out FILE] [--json]',
    `What to trust for HTTPS to the terminal's agent on the shop's network: the account's
certificate authority (PEM, on stdout or into FILE), the agent's addresses and the name its
certificate carries, which a client checks whatever address it uses.`,
    `  --out FILE         write the authority's PEM into FILE (which must not exist yet)
  --json             print {terminalId, ca, serverName, addresses, port, baseUrls,
                     certificateExpiresAt} as JSON`,
  ),
  recover: command(
    'recover [--adopt] [--abort-unknown] [--json]',
    'Finishes what an earlier run left in the journal: confirms each payment it can.',
    `  --adopt            also take over the terminal's unconfirmed transactions this
                     journal does not hold, and confirm each with its result
  --abort-unknown    confirm as failed a payment whose create may not have reached the
                     relay (default: repeat the create to learn its result)
  --json             print the settlements as a JSON array`,
  ),
};

export const POS_USAGE = `Usage: tps pos <command> [options]

Commands:
  purchase --amount N --currency CUR [--external-id ID] [--cashback N]
  refund   --amount N --currency CUR [--external-id ID] [--original ID]
           [--original-terminal ID] [--customer-not-present]
  confirm  --external-id ID [--result-code CODE] [--description TEXT] [--captured-amount N]
  get      --external-id ID [--extra-amounts]
  unconfirmed
  status
  print FILE.png
  events   [--follow] [--type Transaction|TerminalStatus] [--limit N]
  local-trust [--out FILE]               what to trust for HTTPS to the terminal's agent
  recover  [--adopt] [--abort-unknown]   finish what an earlier run left in the journal

Run 'tps pos <command> --help' for a command's options. Amounts are integers in minor
units (1000 is EUR 10.00). purchase and refund show the terminal's screen while it works,
then the result and the receipt, and confirm it.

${CONNECTION}
  --json                              print JSON (purchase/refund: the final transaction)

${EXIT_STATUS}
`;
