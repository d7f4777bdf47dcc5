/** The usage texts of `tps bridge emulate`, `monitor` and `probe` (docs/bench-tools.md). */

/** The options of `tps bridge monitor`, for both reader protocols. */
export const MONITOR_OPTIONS = {
  between: { type: 'boolean' },
  baud: { type: 'string' },
  full: { type: 'boolean' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

const PORT = `PORT is a serial port path (/dev/ttyUSB0, /dev/pts/4, COM3) or tcp://HOST:PORT (a
serial-to-network bridge in raw mode). --protocol zvt: the same for ZVT payment terminals
('tps bridge <command> --protocol zvt --help').`;

export const EMULATE_USAGE = `Usage: tps bridge emulate [options]

Runs the emulated card reader on a new pty, prints the device path it serves alone on
the first line of stdout, and runs until Ctrl-C, logging its transactions on stderr.

  --state FILE        the reader's memory, kept across restarts (default: in memory only)
  --delay-ms N        how long a normal transaction takes (default 3000)
  --port PORT         serve an existing serial port instead of a new pty
  --baud N            the line speed of --port (default 115200)
  --battery N|none    battery charge at power-on (default 80); none: no battery
  --plugged-in        start on the charger
  --serial N          the reader's serial number, part of its references (default 1)
  -h, --help          this text

${PORT}
`;

export const MONITOR_USAGE = `Usage: tps bridge monitor PORT [--baud N] [--full] [--json]
       tps bridge monitor --between PORT_A PORT_B|pty [--baud N] [--full] [--json]

Prints every frame the device on PORT sends, one line each; with --between, forwards
bytes both ways between two ports ('pty': a new pty, whose path it prints first) and
prints the frames of both directions. Runs until Ctrl-C; exit code 1 when a port closes.

  --between           forward between two ports instead of listening on one
  --baud N            the line speed (default 115200)
  --full              print long strings (receipts) whole instead of cut at 60 characters
  --json              one JSON object a line: {at, from, to, route, text}
  -h, --help          this text

${PORT}
`;

export const PROBE_USAGE = `Usage: tps bridge probe PORT [--timeout-ms N] [--baud N] [--json]

Asks the reader on PORT for its status and its last transaction, nothing else (safe on a
reader in use). Exit code 0 if it answers both, 1 if not, with what failed.

  --timeout-ms N      how long each answer may take once acknowledged (default 3000)
  --baud N            the line speed (default 115200)
  --json              print the report as JSON: {ok, status, lastTransaction, errors}
  -h, --help          this text

${PORT}
`;
