import { Transform } from 'node:stream';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';

export type FaultMode = 'open' | 'cut' | 'blackhole' | 'impersonate';

export interface FaultProxy {
  /** The loopback port clients connect to; it stays the same through every fault. */
  readonly port: number;
  /** `target`'s URL with host and port replaced by the proxy's (postgres://, redis://, nats://, http://). */
  url(target: string): string;
  readonly mode: FaultMode;
  /** Connections opened through the proxy since it started, counting refused and held ones. */
  readonly accepted: number;
  /** Destroys every connection (the peer sees a reset) and refuses new ones: a crashed or unreachable server. */
  cut(): void;
  /**
   * Stops forwarding bytes in either direction and holds every connection, old and new, open
   * without an answer: a hung server or a network that drops packets.
   */
  blackhole(): void;
  /**
   * Resets every connection, as `cut` does, and hands each new one to `handler` instead of
   * the server: a server that answers but cannot serve (see `fakePostgres`).
   */
  impersonate(handler: (client: Socket) => void): void;
  /**
   * Holds every chunk the server sends for `latencyMs` before passing it on, on open
   * connections and new ones: a slow server or network, under which statements take longer
   * and a small pool has requests queueing for it. `restore()` ends it.
   */
  slow(latencyMs: number): void;
  /** Forwards again. Held and impersonated connections are destroyed first: their bytes in flight are gone. */
  restore(): void;
  close(): Promise<void>;
}

/**
 * A TCP proxy on loopback in front of a real server, which a test turns off and on under
 * load without touching the shared server. A refused connection is accepted and reset at once
 * (the port stays bound, so nothing else can take it while the server is "down").
 */
export async function startFaultProxy(target: { host: string; port: number }): Promise<FaultProxy> {
  let mode: FaultMode = 'open';
  let impersonator: ((client: Socket) => void) | undefined;
  let latencyMs = 0;
  let accepted = 0;
  /** Each client socket with the upstream socket it is piped to (none while held). */
  const links = new Map<Socket, Socket | undefined>();

  const destroy = (client: Socket) => {
    const upstream = links.get(client);
    links.delete(client);
    // A reset, as a crashed server's peer sees it; but not on a socket whose writable side
    // already ended (the peer half-closed and the pipe ended ours): Node 20's reset of such a
    // socket leaves libuv polling in a busy loop, and the test process never exits.
    if (!client.destroyed) {
      if (client.writableEnded) client.destroy();
      else client.resetAndDestroy();
    }
    upstream?.destroy();
  };

  const server = createServer((client) => {
    accepted += 1;
    client.on('error', () => destroy(client));
    client.on('close', () => destroy(client));
    if (mode === 'cut') {
      client.resetAndDestroy();
      return;
    }
    if (mode === 'blackhole') {
      // Read and drop what the client sends; answer nothing.
      links.set(client, undefined);
      client.on('data', () => undefined);
      return;
    }
    if (mode === 'impersonate') {
      links.set(client, undefined);
      impersonator!(client);
      return;
    }
    const upstream = connect(target.port, target.host);
    links.set(client, upstream);
    upstream.on('error', () => destroy(client));
    upstream.on('close', () => destroy(client));
    // Chunks from the server wait out the latency one after another, so they keep their order.
    const late = new Transform({
      transform: (chunk, _encoding, done) => (latencyMs > 0 ? setTimeout(() => done(null, chunk), latencyMs) : done(null, chunk)),
    });
    late.on('error', () => undefined);
    client.pipe(upstream).pipe(late).pipe(client);
  });
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    port,
    url: (targetUrl) => {
      const url = new URL(targetUrl);
      url.hostname = '127.0.0.1';
      url.port = String(port);
      return url.toString();
    },
    get mode() {
      return mode;
    },
    get accepted() {
      return accepted;
    },
    cut: () => {
      mode = 'cut';
      for (const client of [...links.keys()]) destroy(client);
    },
    blackhole: () => {
      mode = 'blackhole';
      for (const [client, upstream] of links) {
        if (!upstream) continue;
        client.unpipe();
        upstream.unpipe();
        upstream.removeAllListeners('close');
        upstream.removeAllListeners('error');
        upstream.on('error', () => undefined);
        upstream.destroy();
        links.set(client, undefined);
        client.removeAllListeners('data');
        client.on('data', () => undefined);
        client.resume();
      }
    },
    impersonate: (handler) => {
      mode = 'impersonate';
      impersonator = handler;
      for (const client of [...links.keys()]) destroy(client);
    },
    slow: (ms) => {
      latencyMs = ms;
    },
    restore: () => {
      latencyMs = 0;
      if (mode === 'blackhole' || mode === 'impersonate') for (const client of [...links.keys()]) destroy(client);
      mode = 'open';
    },
    close: async () => {
      mode = 'cut';
      for (const client of [...links.keys()]) destroy(client);
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
