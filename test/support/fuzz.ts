/**
 * What the fuzz properties share: how many runs (few in the suite, many under
 * `npm run fuzz`), the fixed seed, hostile values, ways to bend a valid body, a log
 * that records what the relay reports as an error, and card numbers as terminals print them.
 */
import { Writable } from 'node:stream';
import fc from 'fast-check';
import { pino, type Logger } from 'pino';
import { luhnValid } from '../../common/card-numbers.js';
import { loggerOptions } from '../../cloud/logging.js';

/** Runs of each property: `FUZZ_RUNS` when set (npm run fuzz), else the suite's `quick`. */
export function fuzzRuns(quick: number): number {
  const runs = Number(process.env.FUZZ_RUNS);
  return Number.isInteger(runs) && runs > 0 ? runs : quick;
}

/** The same inputs every run; `FUZZ_SEED` replays another. */
export const FUZZ_SEED = Number(process.env.FUZZ_SEED) || 20_261_124;

/** fast-check's parameters for a property of the suite. */
export const fuzzParameters = (quick: number) => ({
  seed: FUZZ_SEED,
  numRuns: fuzzRuns(quick),
  endOnFailure: true,
});

/** `depth` arrays nested in one another. */
export function nestedArrays(depth: number): unknown {
  let value: unknown = [];
  for (let i = 0; i < depth; i++) value = [value];
  return value;
}

/** `depth` objects nested in one another under `key`. */
export function nestedObjects(depth: number, key = 'a'): unknown {
  let value: unknown = {};
  for (let i = 0; i < depth; i++) value = { [key]: value };
  return value;
}

/** Values of every JSON type and shape a field should not get, small and huge. */
export const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }),
  fc.string({ maxLength: 64, unit: 'binary' }),
  fc.constantFrom(
    null,
    true,
    false,
    0,
    -1,
    0.5,
    -0.000001,
    1e21,
    -1e308,
    1e308,
    2 ** 53,
    -(2 ** 53),
    '',
    ' ',
    '\u0000',
    '0',
    'null',
    '2026-13-45T25:61:61Z',
    [],
    {},
    [null],
  ),
  fc.integer({ min: 256, max: 200_000 }).map((n) => 'A'.repeat(n)),
  fc.integer({ min: 10, max: 2000 }).map(nestedArrays),
  fc.integer({ min: 10, max: 2000 }).map((n) => nestedObjects(n)),
  fc.integer({ min: 100, max: 20_000 }).map((n) => Array.from({ length: n }, (_, i) => i)),
  fc.constant(JSON.parse('{"__proto__": {"polluted": true}}') as unknown),
);

/** Dotted paths of every value in `body`, objects included (not array members). */
export function fieldPaths(body: unknown, prefix: string[] = []): string[][] {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return [];
  return Object.entries(body).flatMap(([key, value]) => [
    [...prefix, key],
    ...fieldPaths(value, [...prefix, key]),
  ]);
}

/** A copy of `body` with `path` set to `value`, copying only the objects on the way. */
function setAt(
  body: Record<string, unknown>,
  path: string[],
  value: unknown,
): Record<string, unknown> {
  const [key, ...rest] = path;
  if (key === undefined) return body;
  const child = body[key] as Record<string, unknown>;
  return { ...body, [key]: rest.length === 0 ? value : setAt(child, rest, value) };
}

function removeAt(body: Record<string, unknown>, path: string[]): Record<string, unknown> {
  const [key, ...rest] = path;
  if (key === undefined) return body;
  if (rest.length === 0) {
    const { [key]: _removed, ...others } = body;
    return others;
  }
  return { ...body, [key]: removeAt(body[key] as Record<string, unknown>, rest) };
}

/**
 * A valid body bent once or a few times: a field replaced by a hostile value or removed,
 * an unknown field added (at the top or inside an object), or the whole body replaced.
 */
export function bentBody(valid: Record<string, unknown>): fc.Arbitrary<unknown> {
  const paths = fieldPaths(valid);
  const objectPaths = [[], ...paths.filter((p) => isObjectAt(valid, p))];
  const onFields =
    paths.length === 0
      ? []
      : [
          { weight: 6, arbitrary: fc.tuple(fc.constantFrom(...paths), hostileValue) },
          { weight: 1, arbitrary: fc.tuple(fc.constantFrom(...paths), fc.constant(REMOVE)) },
        ];
  const bend: fc.Arbitrary<(body: unknown) => unknown> = fc
    .oneof(...onFields, {
      weight: 2,
      arbitrary: fc.tuple(
        fc.constantFrom(...objectPaths),
        fc.string({ minLength: 1, maxLength: 20 }),
        hostileValue,
      ),
    })
    .map((step) => (body: unknown) => {
      if (typeof body !== 'object' || body === null || Array.isArray(body)) return body;
      const record = body as Record<string, unknown>;
      if (step.length === 3) {
        const [at, key, value] = step;
        return isObjectAt(record, at) ? setAt(record, [...at, key], value) : record;
      }
      const [at, value] = step;
      if (!hasPath(record, at)) return record;
      return value === REMOVE ? removeAt(record, at) : setAt(record, at, value);
    });
  return fc
    .oneof(
      { weight: 9, arbitrary: fc.array(bend, { minLength: 1, maxLength: 3 }) },
      { weight: 1, arbitrary: hostileValue.map((value) => [() => value]) },
    )
    .map((bends) => bends.reduce<unknown>((body, step) => step(body), valid));
}

const REMOVE = Symbol('remove');

function valueAt(body: unknown, path: string[]): unknown {
  let value = body;
  for (const key of path) {
    if (typeof value !== 'object' || value === null || !Object.hasOwn(value, key)) {
      return undefined;
    }
    value = (value as Record<string, unknown>)[key];
  }
  return value;
}

function hasPath(body: unknown, path: string[]): boolean {
  return path.length > 0 && isObjectAt(body, path.slice(0, -1));
}

function isObjectAt(body: unknown, path: string[]): boolean {
  const value = path.length === 0 ? body : valueAt(body, path);
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A logger for a relay under test, and the lines it logged at error level or above. */
export function errorRecordingLogger(): { logger: Logger; errors: string[] } {
  const errors: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) {
        const level = (JSON.parse(line) as { level?: unknown }).level;
        if (typeof level === 'number' ? level >= 50 : level === 'error' || level === 'fatal') {
          errors.push(line);
        }
      }
      callback();
    },
  });
  return { logger: pino(loggerOptions('warn'), stream), errors };
}

// Card numbers (common/card-numbers.ts) as terminals print them.

export const digit = fc.constantFrom(...'0123456789');
export const digits = (min: number, max: number) =>
  fc.array(digit, { minLength: min, maxLength: max }).map((d) => d.join(''));

/** The digit that makes `body` pass the Luhn check. */
function checkDigit(body: string): string {
  for (let d = 0; d <= 9; d++) if (luhnValid(`${body}${d}`)) return String(d);
  throw new Error('no check digit');
}

/** A card number: 12-19 digits, the first not 0, passing the Luhn check. */
export const cardNumber = fc
  .tuple(fc.constantFrom(...'123456789'), fc.integer({ min: 12, max: 19 }), digits(18, 18))
  // Twelve-digit cards are Maestro's alone: 5 or 6 first.
  .map(([first, length, rest]) =>
    length === 12 && first !== '5' && first !== '6'
      ? (['6', length, rest] as const)
      : ([first, length, rest] as const),
  )
  .map(([first, length, rest]) => {
    const body = `${first}${rest}`.slice(0, length - 1);
    return body + checkDigit(body);
  });

/** Cut points that split `length` digits into groups of at least 3. */
const groupSizes = (length: number): fc.Arbitrary<number[]> =>
  fc.array(fc.integer({ min: 3, max: 8 }), { minLength: 1, maxLength: 6 }).map((sizes) => {
    const out: number[] = [];
    let left = length;
    for (const size of sizes) {
      if (left - size < 3) break;
      out.push(size);
      left -= size;
    }
    out.push(left);
    return out;
  });

export const separator = fc.constantFrom(' ', '-', '.');

/** A number as text: plain, or in groups of at least 3 joined by one separator each. */
export function written(number: string): fc.Arbitrary<string> {
  return fc.oneof(
    fc.constant(number),
    fc.tuple(groupSizes(number.length), separator).map(([sizes, sep]) => {
      const groups: string[] = [];
      let at = 0;
      for (const size of sizes) {
        groups.push(number.slice(at, at + size));
        at += size;
      }
      return groups.join(sep);
    }),
  );
}
