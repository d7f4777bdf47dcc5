/** OpenAPI 3.1 documents generated from the zod schemas of protocol/. */
import { z } from 'zod';
import {
  ERROR_CATALOGUE,
  ErrorResponse,
  OPERATIONS,
  PAIRING_OPERATIONS,
  basePath,
  responseSchemas,
  type Revision,
} from '../../protocol/index.js';

const STATUS_TEXT: Record<number, string> = {
  400: 'The request could not be acted on; see error.code',
  401: 'Missing or wrong credentials',
  403: 'The credential may not use this operation',
  404: 'Not found for this credential',
  405: 'Only POST is allowed',
  409: 'Already done; see error.code',
  410: 'Expired; see error.code',
  413: 'Body too large',
  415: 'Body is not application/json',
  429: 'Too many failed sign-ins or waiting requests; wait for Retry-After',
  500: 'Unexpected fault; the request may be repeated',
  503: 'Momentarily saturated; repeat after Retry-After',
};

const jsonSchema = (schema: z.ZodType, io: 'input' | 'output') =>
  z.toJSONSchema(schema, { target: 'draft-2020-12', io, unrepresentable: 'any' });

const SCHEMAS = '#/components/schemas/';

/**
 * The answers' schemas, named under `components/schemas`: the shapes many operations share
 * (Transaction, TerminalStatus, CloudEvent, Error) once, referenced where they recur, and
 * each operation's answer by its operation id, so that client generators name types well.
 */
function responseComponents(revision: Revision) {
  const responses = responseSchemas(revision);
  const named = z.registry<{ id: string }>();
  named.add(responses.transaction.shape.transaction, { id: 'Transaction' });
  named.add(responses.status.shape.status, { id: 'TerminalStatus' });
  named.add(responses.events.shape.events.element, { id: 'CloudEvent' });
  named.add(ErrorResponse, { id: 'Error' });
  // Answers shared by several operations (every transaction operation answers
  // `{ transaction }`) are named by what they hold, e.g. TransactionResponse.
  for (const [key, schema] of Object.entries(responses)) {
    named.add(schema, { id: `${key[0]!.toUpperCase()}${key.slice(1)}Response` });
  }
  const answers = new Map<string, string>();
  for (const [path, spec] of Object.entries(OPERATIONS)) {
    const schema = spec.response(responses);
    if (!named.has(schema)) named.add(schema, { id: `${operationId(path)}_response` });
    answers.set(path, named.get(schema)!.id);
  }
  for (const [path, spec] of Object.entries(PAIRING_OPERATIONS)) {
    named.add(spec.response, { id: `${operationId(path)}_response` });
    answers.set(path, `${operationId(path)}_response`);
  }
  const { schemas } = z.toJSONSchema(named, {
    target: 'draft-2020-12',
    io: 'output',
    unrepresentable: 'any',
    uri: (id) => `${SCHEMAS}${id}`,
  });
  // Each component is addressed by its place in the document, not by an `$id` of its own,
  // and the document's dialect is OpenAPI's.
  for (const schema of Object.values(schemas) as Array<{ $id?: string; $schema?: string }>) {
    delete schema.$id;
    delete schema.$schema;
  }
  return { schemas, answers };
}

const operationId = (path: string) => path.slice(1).replace(/\//g, '_');
const ref = (id: string) => ({ $ref: `${SCHEMAS}${id}` });

export function openApiDocument(revision: Revision, publicUrl?: string) {
  const { schemas, answers } = responseComponents(revision);
  const paths: Record<string, unknown> = {};
  for (const [path, spec] of Object.entries(OPERATIONS)) {
    paths[path] = {
      post: {
        summary: spec.summary,
        operationId: operationId(path),
        requestBody: {
          required: true,
          content: { 'application/json': { schema: jsonSchema(spec.request, 'input') } },
        },
        responses: {
          '200': {
            description: 'OK',
            content: { 'application/json': { schema: ref(answers.get(path)!) } },
          },
          ...errorResponsesOf(spec.errors),
        },
      },
    };
  }
  // The agent's pairing operations: no credential yet, so none is asked for.
  for (const [path, spec] of Object.entries(PAIRING_OPERATIONS)) {
    paths[path] = {
      post: {
        summary: spec.summary,
        operationId: operationId(path),
        security: [],
        requestBody: {
          required: true,
          content: { 'application/json': { schema: jsonSchema(spec.request, 'input') } },
        },
        responses: {
          '200': {
            description: 'OK',
            content: { 'application/json': { schema: ref(answers.get(path)!) } },
          },
          ...errorResponsesOf(spec.errors),
        },
      },
    };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Terminal Payment Service',
      version: revision,
      description: `Error codes: ${Object.keys(ERROR_CATALOGUE).join(', ')}. See docs/errors.md.`,
    },
    servers: [{ url: `${publicUrl ?? ''}${basePath(revision)}` }],
    security: [{ basic: [] }],
    components: {
      schemas,
      securitySchemes: { basic: { type: 'http', scheme: 'basic' } },
    },
    paths,
  };
}

function errorResponsesOf(statuses: readonly number[]) {
  return Object.fromEntries(
    statuses.map((status) => [
      String(status),
      {
        description: STATUS_TEXT[status] ?? 'Error',
        content: { 'application/json': { schema: ref('Error') } },
      },
    ]),
  );
}
