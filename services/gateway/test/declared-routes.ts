import type { IncomingMessage, ServerResponse } from 'node:http';
import { EDGE_ROUTES, OPENAPI_PATH, type EdgeRoute } from '@app/platform';

/** sso's token endpoint as sso declares it: open, 16 KiB, its 413 RFC 6749 JSON. */
export const SSO_TOKEN_ROUTE: EdgeRoute = { method: 'POST', path: '/api/v1/sso/token', auth: 'public', bodyLimit: 16_384 };

/**
 * A fake service's own OpenAPI document, as a real one serves it at OPENAPI_PATH: its routes'
 * declarations, and the 413 of each route answering it as RFC 6749 JSON (`oauthRefusals`).
 */
export function declaredDocument(routes: readonly EdgeRoute[], oauthRefusals: readonly EdgeRoute[] = []): Record<string, unknown> {
  const refusal = { description: 'Payload Too Large', content: { 'application/json': { schema: { $ref: '#/components/schemas/OAuthError' } } } };
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of oauthRefusals) {
    paths[route.path.replace(/:(\w+)/g, '{$1}')] = { ...paths[route.path], [route.method.toLowerCase()]: { responses: { 413: refusal } } };
  }
  return { openapi: '3.1.0', info: { title: 'fake', version: '1.0.0' }, paths, [EDGE_ROUTES]: routes };
}

/** Answers a request for OPENAPI_PATH with `document` (true), as a service does; leaves any other alone (false). */
export function answerDocument(request: IncomingMessage, response: ServerResponse, document: Record<string, unknown>): boolean {
  if (request.method !== 'GET' || request.url !== OPENAPI_PATH) return false;
  response.setHeader('content-type', 'application/json');
  response.end(JSON.stringify(document));
  return true;
}

/** `document` as the raw HTTP/1.1 answer of a socket-level fake service. */
export const rawDocumentAnswer = (document: Record<string, unknown>): string => {
  const body = JSON.stringify(document);
  return `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
};
