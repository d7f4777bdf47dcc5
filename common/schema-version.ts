/**
 * A data file or database written by a newer release is refused, never run on: an older
 * release would misread columns it does not know, or write rows a newer one misreads.
 */
export class NewerSchemaError extends Error {
  constructor(what: string, found: number, known: number) {
    super(
      `${what} has schema version ${found}, newer than this release knows (${known}): ` +
        `it was written by a newer release of terminal-payment-service; ` +
        `run that release or a newer one with it, or use another data location`,
    );
    this.name = 'NewerSchemaError';
  }
}

/** Throws NewerSchemaError when `found` is past the newest schema this release knows. */
export function refuseNewerSchema(what: string, found: number, known: number): void {
  if (found > known) throw new NewerSchemaError(what, found, known);
}
