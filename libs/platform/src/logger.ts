import { pino, type DestinationStream, type Logger, type LoggerOptions } from 'pino';
import { createRequire } from 'node:module';
import type * as PinoPretty from 'pino-pretty';
import { AppError } from './http/errors.js';

export interface LoggerConfig {
  LOG_LEVEL: LoggerOptions['level'];
  /** In production lines stay JSON even on a terminal (`docker run -t`): a collector reads them. */
  NODE_ENV?: 'development' | 'production' | 'test';
}

export interface LoggerOutput {
  /**
   * Readable lines (time, level, service, message, key fields) instead of JSON, for a person
   * at a terminal. Defaults to true when the logger writes to stdout, stdout is a terminal and
   * NODE_ENV is not production; piped or collected output stays JSON.
   */
  pretty?: boolean;
}

/**
 * Top-level keys whose value is replaced wherever a line carries them: a last guard against
 * `log.info({ password })`. Exact keys only: pino looks every key up in this table anyway, so
 * they cost nothing on lines without them. Wildcard paths (`*.password`) made pino walk every
 * object of every line, about a third of the CPU of a busy process; they are gone, and what
 * they guarded against is prevented by the serializers below, which never copy headers,
 * cookies or bodies into a line.
 */
export const REDACTED_KEYS = [
  'password',
  'secret',
  'token',
  'access_token',
  'refresh_token',
  'client_secret',
  'apiKey',
  'privateKey',
  'authorization',
  'cookie',
  'headers',
];

/** Deepest `cause` chain an error line follows (undici nests the socket error two levels down). */
const CAUSE_DEPTH = 3;

interface SerializedError {
  type: string;
  message?: string;
  stack?: string;
  code?: unknown;
  statusCode?: number;
  cause?: SerializedError;
  errors?: SerializedError[];
}

/**
 * An error as a line shows it: kind, message, stack, code, and the chain of causes, never
 * its other properties (a pg error's `detail` and `parameters` quote row values, an HTTP
 * client's error its request headers). An AppError under 500 is the client's doing and
 * says enough by its code.
 */
export function serializeError(error: unknown, depth = 0): SerializedError | undefined {
  if (error === undefined || error === null) return undefined;
  if (typeof error !== 'object') return { type: typeof error, message: String(error) };
  const e = error as Partial<Error> & { code?: unknown; statusCode?: unknown; type?: unknown; cause?: unknown; errors?: unknown };
  const type = error instanceof Error ? error.name : typeof e.type === 'string' ? e.type : (e.constructor?.name ?? 'Object');
  const code = typeof e.code === 'string' || typeof e.code === 'number' ? e.code : undefined;
  const statusCode = typeof e.statusCode === 'number' ? e.statusCode : undefined;
  if (error instanceof AppError && error.statusCode < 500) return { type, code, statusCode };
  return {
    type,
    message: typeof e.message === 'string' ? e.message : undefined,
    stack: typeof e.stack === 'string' ? e.stack : undefined,
    code,
    statusCode,
    cause: depth < CAUSE_DEPTH ? serializeError(e.cause, depth + 1) : undefined,
    // AggregateError: a connection that tried IPv6 and IPv4 keeps each socket error here.
    errors: depth < CAUSE_DEPTH && Array.isArray(e.errors) ? e.errors.slice(0, 3).map((inner) => serializeError(inner, depth + 1)!) : undefined,
  };
}

interface RequestLike {
  method?: string;
  url?: string;
}

/**
 * What a line may say about a request or a response, whatever object is logged under `req`
 * or `res`: method and path (no query string: it may carry a token), and the status.
 */
export const logSerializers = {
  req: (request: RequestLike) => ({ method: request.method, url: request.url?.split('?', 1)[0] }),
  res: (reply: { statusCode?: number }) => ({ statusCode: reply.statusCode }),
  err: (error: unknown) => serializeError(error),
};

/** Fields the readable format puts into its one line rather than after it. */
const PRETTY_INLINE = 'service,reqId,method,route,path,status,ms,code';

/** `[service] GET /route 200 1.2 ms  reqId` for a request's line, `[service] message  reqId` for any other. */
function prettyMessage(line: Record<string, unknown>, messageKey: string): string {
  const parts: string[] = [];
  if (line.service !== undefined) parts.push(`[${String(line.service)}]`);
  if (typeof line.status === 'number' && typeof line.method === 'string') {
    parts.push(line.method, line.route === undefined ? `${String(line.path)} (no route)` : String(line.route), String(line.status));
    if (line.code !== undefined) parts.push(String(line.code));
    parts.push(`${String(line.ms)} ms`);
  } else {
    parts.push(String(line[messageKey] ?? ''));
    if (line.code !== undefined) parts.push(`(${String(line.code)})`);
  }
  if (line.reqId !== undefined) parts.push(` ${String(line.reqId)}`);
  return parts.join(' ');
}

/**
 * pino-pretty, loaded only for a terminal: a process whose logs are collected (a container, a
 * redirected `npm start`) never formats them, and the module costs ~10 MB resident.
 */
const prettyPrinter = () => createRequire(import.meta.url)('pino-pretty') as typeof PinoPretty;

/**
 * A destination that turns each JSON line into a readable one, synchronously, in this
 * thread: pino-pretty's formatter without its worker-thread transport, which would cost a
 * second V8 isolate (tens of MB) to format a developer's terminal.
 */
function prettyDestination(out: DestinationStream, colorize: boolean): DestinationStream {
  const { prettyFactory } = prettyPrinter();
  const format = prettyFactory({
    translateTime: 'SYS:HH:MM:ss.l',
    ignore: `pid,hostname,${PRETTY_INLINE}`,
    messageFormat: prettyMessage,
    singleLine: true,
    colorize,
  });
  return { write: (line: string) => out.write(format(line)) };
}

let second = -1;
let secondPrefix = '';
/**
 * pino's `isoTime` (`,"time":"2026-11-27T18:20:00.123Z"`), with the date and time of day
 * formatted once per second and only the milliseconds per line: `toISOString` on every line
 * was ~1.4 % of a cached read's CPU (bench profile).
 */
function isoTimeOncePerSecond(): string {
  const now = Date.now();
  const ms = now % 1000;
  if (now - ms !== second) {
    second = now - ms;
    secondPrefix = `,"time":"${new Date(second).toISOString().slice(0, 20)}`;
  }
  return `${secondPrefix}${ms < 10 ? '00' : ms < 100 ? '0' : ''}${ms}Z"`;
}

/**
 * The process's root logger: JSON lines to stdout (or `destination`), level from config,
 * serializers that never copy a header, cookie or body, and a readable format on a terminal.
 */
export function createLogger(config: LoggerConfig, destination?: DestinationStream, output: LoggerOutput = {}): Logger {
  const pretty = output.pretty ?? (destination === undefined && process.stdout.isTTY === true && config.NODE_ENV !== 'production');
  const options: LoggerOptions = {
    level: config.LOG_LEVEL,
    redact: { paths: REDACTED_KEYS, censor: '[redacted]' },
    serializers: logSerializers,
    base: undefined,
    timestamp: isoTimeOncePerSecond,
  };
  if (pretty) {
    // Colours only on the terminal itself, where the terminal says it shows them.
    const out = destination ?? pino.destination({ dest: 1, sync: true });
    return pino(options, prettyDestination(out, destination === undefined && prettyPrinter().isColorSupported));
  }
  return pino(options, destination ?? bufferedStdout());
}

/** Longest a collected line waits in the buffer of bufferedStdout. */
const FLUSH_INTERVAL_MS = 100;
/**
 * Characters gathered before one write (JSON lines are ASCII, near enough bytes): a pipe's
 * default capacity. Each write is a round trip through libuv's thread pool (a wake-up, the
 * write, a completion back on the loop), paid once per batch rather than once per line.
 */
const BATCH_CHARS = 65_536;

/** Signals whose default action ends the process without an 'exit' event: the buffer is written first. */
const FATAL_SIGNALS = ['SIGTERM', 'SIGINT', 'SIGHUP'] as const;

/** Every bufferedStdout's flush, run when the process exits or a fatal signal arrives. */
const exitFlushes = new Set<() => void>();
let exitHooked = false;

const flushAll = () => {
  for (const exitFlush of exitFlushes) exitFlush();
};

/**
 * Writes every buffer on each way out: 'exit' (process.exit, the end of the loop, an uncaught
 * exception or rejection, which end the process through it), and the signals that end a
 * process without it. A signal the process handles itself (a service's graceful shutdown)
 * keeps its handler's meaning: the buffer is written and the handler runs on. A signal
 * nobody else handles is raised again once written, so the process ends as it would have.
 */
function hookExits(): void {
  if (exitHooked) return;
  exitHooked = true;
  process.on('exit', flushAll);
  for (const signal of FATAL_SIGNALS) {
    const onSignal = () => {
      flushAll();
      if (process.listenerCount(signal) === 1) {
        process.removeListener(signal, onSignal);
        process.kill(process.pid, signal);
      }
    };
    process.on(signal, onSignal);
  }
}

/**
 * stdout for collected JSON, written 64 KB at a time instead of one write(2) per line: a busy
 * service logs a line per request, and a system call per line costs about as much as the rest
 * of the line (the bench's compare run: README, Benchmark). A quiet process's lines wait at
 * most FLUSH_INTERVAL_MS; every way out of the process writes them first (hookExits), so only
 * a SIGKILL, which nothing can catch, loses the lines of its last FLUSH_INTERVAL_MS.
 *
 * The batching is ours, not sonic-boom's `minLength`: that appends each line to one growing
 * string and measures its UTF-8 length again per line, which flattens and copies the string
 * every time; lines gathered in an array are joined once per batch.
 */
function bufferedStdout(): DestinationStream {
  // Synchronous: a batch is one write(2), and a flush on the way out (a signal re-raised at
  // once, an exit) is out before the process ends; an asynchronous write would still be
  // waiting for libuv's thread pool then, and be lost.
  const out = pino.destination({ dest: 1, sync: true });
  let lines: string[] = [];
  let size = 0;
  const flush = () => {
    if (lines.length === 0) return;
    const batch = lines.join('');
    lines = [];
    size = 0;
    out.write(batch);
  };
  const timer = setInterval(flush, FLUSH_INTERVAL_MS);
  timer.unref();
  exitFlushes.add(flush);
  hookExits();
  return {
    write: (line: string) => {
      lines.push(line);
      size += line.length;
      if (size >= BATCH_CHARS) flush();
    },
  };
}

export type { Logger };
