/** OpenAPI 3.1 documents generated from the zod schemas of protocol/. */
import { z } from 'zod';
import {
  ERROR_CATALOGUE,
  ErrorResponse,
  OPERATIONS,
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
  413: 'Body too large',
  415: 'Body is not application/json',
  429: 'Too many failed sign-ins or waiting requests; wait for Retry-After',
  500: 'Unexpected fault; the request may be repeated',
  503: 'Momentarily saturated; repeat after Retry-After',
};

const jsonSchema = (schema: z.ZodType, io: 'input' | 'output') =>
  z.toJSONSchema(schema, { target: 'draft-2020-12', io, unrepresentable: 'any' });

export function openApiDocument(revision: Revision, publicUrl?: string) {
  const responses = responseSchemas(revision);
  const errorSchema = jsonSchema(ErrorResponse, 'output');
  const paths: Record<string, unknown> = {};
  for (const [path, spec] of Object.entries(OPERATIONS)) {
    const errorResponses = Object.fromEntries(
      spec.errors.map((status) => [
        String(status),
        {
          description: STATUS_TEXT[status] ?? 'Error',
          content: { 'application/json': { schema: errorSchema } },
        },
      ]),
    );
    paths[path] = {
      post: {
        summary: spec.summary,
        operationId: path.slice(1).replace(/\//g, '_'),
        requestBody: {
          required: true,
          content: { 'application/json': { schema: jsonSchema(spec.request, 'input') } },
        },
        responses: {
          '200': {
            description: 'OK',
            content: {
              'application/json': { schema: jsonSchema(spec.response(responses), 'output') },
            },
          },
          ...errorResponses,
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
    components: { securitySchemes: { basic: { type: 'http', scheme: 'basic' } } },
    paths,
  };
}
