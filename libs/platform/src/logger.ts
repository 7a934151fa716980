import { pino, type Logger, type LoggerOptions } from 'pino';

/**
 * Fields that may carry a credential. Pino's redaction needs explicit paths (one wildcard
 * level each), so the likely depths are listed: a top-level field, one level down (`req.body`
 * style objects logged by a handler) and the request headers Fastify logs.
 */
const SECRET_FIELDS = ['password', 'secret', 'token', 'access_token', 'refresh_token', 'client_secret', 'apiKey', 'privateKey'];
export const REDACTED_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["proxy-authorization"]',
  'req.headers["x-api-key"]',
  'res.headers["set-cookie"]',
  'headers.authorization',
  'headers.cookie',
  ...SECRET_FIELDS,
  ...SECRET_FIELDS.map((field) => `*.${field}`),
  ...SECRET_FIELDS.map((field) => `*.*.${field}`),
];

export interface LoggerConfig {
  LOG_LEVEL: LoggerOptions['level'];
}

export function createLogger(config: LoggerConfig, destination?: pino.DestinationStream): Logger {
  const options: LoggerOptions = {
    level: config.LOG_LEVEL,
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    base: undefined,
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  return destination ? pino(options, destination) : pino(options);
}

export type { Logger };
