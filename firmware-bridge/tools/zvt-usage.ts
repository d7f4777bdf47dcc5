/** The ZVT part of `tps bridge --help` (kept apart so the help loads no ZVT code). */
export const ZVT_USAGE = `ZVT payment terminals (--protocol zvt; docs/zvt.md):

  emulate --protocol zvt [--state FILE] [--delay-ms N] [--password P]
          [--tcp HOST:PORT | --port PORT] [--baud N] [--serial N] [--terminal-id N]
                                          run the emulated ZVT terminal on a new pty (or
                                          on TCP), print its device path (or tcp://HOST:PORT)
  monitor --protocol zvt PORT [--baud N] [--full]
  monitor --protocol zvt --between PORT_A PORT_B|pty [--baud N] [--full]
  monitor --protocol zvt --between tcp://PT_HOST:PORT listen:HOST:PORT [--full]
                                          decode ZVT both ways: commands, BMPs, result
                                          codes, link ACK/NAK, bad frames
  probe --protocol zvt PORT|tcp://HOST:PORT [--register] [--password P]
          [--timeout-ms N] [--baud N] [--json]
                                          status enquiry (and registration): exit code 0
                                          if the terminal completes it, 1 if not
`;
