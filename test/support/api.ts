/**
 * Helpers shared by the HTTP conformance tests (test/api-*.test.ts): raw requests for
 * bodies that are not JSON, and the checks a POS developer makes on an error answer.
 */
import { expect } from 'vitest';
import { PNG } from 'pngjs';
import { z } from 'zod';
import {
  ERROR_CATALOGUE,
  ErrorObject,
  ErrorResponse,
  OPERATIONS,
  type ErrorCode,
  type OperationPath,
} from '../../protocol/index.js';
import { basicAuth, type ApiResponse } from './relay.js';

export const REVISIONS = ['v0', 'v1'] as const;
export type Rev = (typeof REVISIONS)[number];

export const OPERATION_PATHS = Object.keys(OPERATIONS) as OperationPath[];

export type Credential = { username: string; password: string };

/** Sends any body (or none) with any headers, and parses the answer if it is JSON. */
export async function send(
  baseUrl: string,
  revision: Rev,
  operation: string,
  init: { method?: string; headers?: Record<string, string>; body?: string | Buffer } = {},
): Promise<ApiResponse & { text: string }> {
  const response = await fetch(`${baseUrl}/${revision}${operation}`, {
    method: init.method ?? 'POST',
    headers: init.headers ?? {},
    ...(init.body !== undefined ? { body: init.body } : {}),
  });
  const text = await response.text();
  let body: unknown;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = undefined;
  }
  return { status: response.status, headers: response.headers, body, text };
}

/** JSON text with the headers a POS sends. */
export function sendJsonText(
  baseUrl: string,
  revision: Rev,
  operation: string,
  credential: Credential,
  text: string,
) {
  return send(baseUrl, revision, operation, {
    headers: { authorization: basicAuth(credential), 'content-type': 'application/json' },
    body: text,
  });
}

/** The spec's error object, with no member besides `code` and `description`. */
const StrictErrorResponse = z.strictObject({ error: ErrorObject.strict() });

/** Asserts the spec's error object: `{ error: { code?, description? } }` and nothing else. */
export function expectErrorObject(response: { status: number; body: unknown; text?: string }) {
  const parsed = StrictErrorResponse.safeParse(response.body);
  expect(
    parsed.success,
    `not an error object (HTTP ${response.status}): ${response.text ?? JSON.stringify(response.body)}`,
  ).toBe(true);
  // The looser protocol schema must agree (it is what the OpenAPI document is made from).
  expect(ErrorResponse.safeParse(response.body).success).toBe(true);
  return (response.body as ErrorResponse).error;
}

/** Asserts status, catalogue code (with its catalogue status) and the error object. */
export function expectError(
  response: { status: number; body: unknown; text?: string },
  status: number,
  code: ErrorCode,
) {
  const context = `HTTP ${response.status} ${response.text ?? JSON.stringify(response.body)}`;
  expect(response.status, context).toBe(status);
  expect(ERROR_CATALOGUE[code].status).toBe(status);
  const error = expectErrorObject(response);
  expect(error.code, context).toBe(code);
  expect(typeof error.description, context).toBe('string');
  return error as { code: string; description: string };
}

/** A small valid PNG (4x2, RGBA), as base64. */
export function smallPngBase64(): string {
  const png = new PNG({ width: 4, height: 2 });
  png.data.fill(0xff);
  return PNG.sync.write(png).toString('base64');
}

/** Sets `value` at a dotted path of a copy of `body` (creating objects on the way). */
export function withField(
  body: Record<string, unknown>,
  path: readonly string[],
  value: unknown,
): Record<string, unknown> {
  const copy = structuredClone(body);
  let target: Record<string, unknown> = copy;
  for (const key of path.slice(0, -1)) {
    const next = target[key];
    if (typeof next !== 'object' || next === null) target[key] = {};
    target = target[key] as Record<string, unknown>;
  }
  target[path[path.length - 1]!] = value;
  return copy;
}

/** A copy of `body` without the top-level field `field`. */
export function withoutField(body: Record<string, unknown>, field: string) {
  const { [field]: _removed, ...rest } = body;
  return rest;
}
