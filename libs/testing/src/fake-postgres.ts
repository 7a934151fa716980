import type { Socket } from 'node:net';

/**
 * Just enough of the Postgres v3 wire protocol to stand in for a server that cannot serve:
 * a handler for one accepted socket, which a fault proxy's `impersonate` (or any TCP server)
 * hands new connections to.
 *
 * - `starting-up`: reads the startup message and answers, as Postgres does while it starts up
 *   or shuts down, `FATAL 57P03 the database system is starting up`, then closes.
 * - `frozen`: accepts the connection, reads whatever comes, and never answers.
 */
export type FakePostgresBehaviour = 'starting-up' | 'frozen';

/** The startup message's protocol version 3.0, and the requests that may come before it. */
const PROTOCOL_3 = 196_608;
const SSL_REQUEST = 80_877_103;
const GSSENC_REQUEST = 80_877_104;

/** An ErrorResponse ('E'): severity, SQLSTATE and message fields, each a NUL-terminated string. */
export function postgresErrorResponse(severity: 'FATAL' | 'ERROR', sqlState: string, message: string): Buffer {
  const fields = Buffer.concat(
    [
      ['S', severity],
      ['V', severity],
      ['C', sqlState],
      ['M', message],
    ].map(([type, value]) => Buffer.from(`${type}${value}\0`, 'utf8')),
  );
  const body = Buffer.concat([fields, Buffer.from([0])]);
  const header = Buffer.alloc(5);
  header.write('E', 0, 'latin1');
  header.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([header, body]);
}

export function fakePostgres(behaviour: FakePostgresBehaviour): (socket: Socket) => void {
  return (socket) => {
    socket.on('error', () => undefined);
    if (behaviour === 'frozen') {
      socket.on('data', () => undefined);
      return;
    }
    let pending = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      // Untyped messages: an int32 length (itself included), then an int32 code.
      while (pending.length >= 8 && pending.length >= pending.readInt32BE(0)) {
        const length = pending.readInt32BE(0);
        const code = pending.readInt32BE(4);
        pending = pending.subarray(length);
        if (code === SSL_REQUEST || code === GSSENC_REQUEST) {
          socket.write('N');
          continue;
        }
        if (code === PROTOCOL_3) socket.end(postgresErrorResponse('FATAL', '57P03', 'the database system is starting up'));
        else socket.destroy();
        return;
      }
    });
  };
}
