/** The ZVT parts of `tps bridge --help` (kept apart so the help loads no ZVT code). */
export const ZVT_USAGE = `ZVT payment terminals (--protocol zvt; docs/zvt.md):

  emulate --protocol zvt [--state FILE] [--delay-ms N] [--password P]
          [--tcp HOST:PORT | --port PORT] [--baud N] [--serial N] [--terminal-id N]
                                          run the emulated ZVT terminal on a new pty (or
                                          on TCP), print its device path (or tcp://HOST:PORT)
  monitor --protocol zvt PORT [--baud N] [--full] [--json]
  monitor --protocol zvt --between PORT_A PORT_B|pty [--baud N] [--full] [--json]
  monitor --protocol zvt --between tcp://PT_HOST:PORT listen:HOST:PORT [--full] [--json]
                                          decode ZVT both ways: commands, BMPs, result
                                          codes, link ACK/NAK, bad frames
  probe --protocol zvt PORT|tcp://HOST:PORT [--register] [--password P]
          [--timeout-ms N] [--baud N] [--json]
                                          status enquiry (and registration): exit code 0
                                          if the terminal completes it, 1 if not
`;

const PORT = `PORT is a serial port path (/dev/ttyUSB0, /dev/pts/4, COM3), 9600 baud 8N2 unless
--baud; tcp://HOST:PORT is a terminal speaking ZVT over TCP (port 20007 usually).`;

export const ZVT_EMULATE_USAGE = `Usage: tps bridge emulate --protocol zvt [options]

Runs the emulated ZVT payment terminal on a new pty (or listening on TCP), prints its
device path (or tcp://HOST:PORT) alone on the first line of stdout, and runs until
Ctrl-C, logging its journal and display on stderr.

  --state FILE        the terminal's journal, kept across restarts (default: in memory only)
  --delay-ms N        how long a normal payment takes (default 3000)
  --password P        the 6-digit password of registration and admin commands (default 000000)
  --tcp HOST:PORT     listen for ECR connections on TCP instead of a pty
  --port PORT         serve an existing serial port instead of a new pty
  --baud N            the line speed of --port (default 9600)
  --serial N          part of the references it gives (default 1)
  --terminal-id N     the 8-digit terminal id it reports (default 29001001)
  -h, --help          this text
`;

export const ZVT_MONITOR_USAGE = `Usage: tps bridge monitor --protocol zvt PORT [--baud N] [--full] [--json]
       tps bridge monitor --protocol zvt --between PORT_A PORT_B|pty [--baud N] [--full] [--json]
       tps bridge monitor --protocol zvt --between tcp://PT_HOST:PORT listen:HOST:PORT [--full] [--json]

Decodes ZVT as it passes, one line per unit: commands, BMPs, result codes, link ACK/NAK,
bad frames. With --between it forwards both ways ('pty': a new pty; listen:HOST:PORT:
where the ECR connects, forwarded to the terminal). Runs until Ctrl-C.

  --between           forward between two ports instead of listening on one
  --baud N            the serial line speed (default 9600)
  --full              print long texts whole instead of cut at 60 characters
  --json              one JSON object a line: {at, from, to, route, text}
  -h, --help          this text

${PORT}
`;

export const ZVT_PROBE_USAGE = `Usage: tps bridge probe --protocol zvt PORT|tcp://HOST:PORT [options]

Sends a status enquiry (and, with --register, a registration first) and prints what the
terminal answers. Exit code 0 if the terminal completes it, 1 if not, with what failed.

  --register          register first (06 00, config BE, EUR)
  --password P        the terminal's 6-digit password (default 000000)
  --timeout-ms N      how long each step may take (default 5000)
  --baud N            the serial line speed (default 9600)
  --json              print the report as JSON
  -h, --help          this text

${PORT}
`;
