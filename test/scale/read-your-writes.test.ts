// Read-your-writes across replicas (issue 25, point 1): split mode with 2 replicas of every
// service on the real servers. Once a write (create, update, delete) has been answered 2xx, a
// read sent after that answer, through either replica, sees it: also when reads raced the
// write on both replicas and may have filled a cache with what they read before it committed.
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import type { SplitCluster } from '@app/split';
import { describeIf, NEEDS_REAL_SERVERS, REAL, readJson, type Json } from '@app/testing';
import { startReplicas, type TestDependencies } from '../support/replicas.js';
import { openPlatformDependencies } from '../support/platform.js';

const real = REAL.databaseUrl && REAL.redisUrl && REAL.natsUrl ? REAL : undefined;

/** The issue's shape: records changed in parallel, rounds per record, reads racing each write. */
const RECORDS = 8;
const ROUNDS = 20;
const RACING_READS = 10;
/** The racing reads are spread over each write's first milliseconds: one every millisecond. */
const RACE_WINDOW_MS = 10;
/** How many times a read that answered 503 is sent in all before its answer counts. */
const READ_ATTEMPTS = 4;

const JSON_BODY = { 'content-type': 'application/json' };
/** A valid S256 challenge (43 base64url characters): the authorize page checks its shape only. */
const CHALLENGE = 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM';

/** What a kind of record shows of its state: a value, or that it is gone (404). */
type State = string;
const GONE = 'gone';

interface Kind {
  name: string;
  /** Both replicas of the service that owns the record. */
  replicas: () => string[];
  /** Whether the last round deletes the record (identities have no delete route). */
  deletable: boolean;
  create(): Promise<string>;
  /** Changes the record in round `round` through `base`; answers the state it now has. */
  update(base: string, id: string, round: number): Promise<State>;
  remove(base: string, id: string): Promise<void>;
  /** Every way a client reads the record through `base`, each giving the state it saw. */
  reads(base: string, id: string): Promise<State[]>;
}

describeIf(real, NEEDS_REAL_SERVERS)('read-your-writes, 2 replicas of every service, on the real servers', () => {
  let deps: TestDependencies;
  let cluster: SplitCluster;
  const admin = { email: `admin-${randomUUID()}@example.com`, password: randomBytes(18).toString('base64url') };
  const output: string[] = [];
  const figures: string[] = [];
  let auth: Record<string, string>;

  beforeAll(async () => {
    deps = await openPlatformDependencies('real');
    cluster = await startReplicas(deps, {
      output: (name, line) => void output.push(`[${name}] ${line}`),
      env: {
        BOOTSTRAP_ADMIN_EMAIL: admin.email,
        BOOTSTRAP_ADMIN_PASSWORD: admin.password,
        // The identities below are sign-ups from one address.
        SIGNUP_RATE_LIMIT: '1000/600',
      },
    });
    // The admin signs in once sso's bootstrap (one replica makes it) is done.
    for (let attempt = 0; ; attempt++) {
      const response = await fetch(`${cluster.url}/api/v1/sso/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'password', username: admin.email, password: admin.password }),
      });
      const body = await readJson(response);
      if (response.status === 200) {
        auth = { authorization: `Bearer ${String(body.access_token)}` };
        break;
      }
      if (attempt > 120) throw new Error(`the admin cannot sign in: ${response.status} ${JSON.stringify(body)}\n${output.slice(-20).join('\n')}`);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  });

  afterAll(async () => {
    if (figures.length) console.log(`read-your-writes, 2 replicas of every service:\n${figures.map((line) => `- ${line}`).join('\n')}`);
    await cluster?.stop();
    await deps?.dispose();
  });

  /** A JSON request that must answer `expected`; its body. */
  const send = async (method: string, url: string, expected: number, body?: unknown): Promise<Json[]> => {
    const response = await fetch(url, { method, headers: { ...auth, ...(body === undefined ? {} : JSON_BODY) }, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await response.text();
    if (response.status !== expected) throw new Error(`${method} ${url}: ${response.status} (expected ${expected}) ${text}`);
    return text ? (JSON.parse(text) as Json[]) : [];
  };
  /**
   * A read as a client makes it: a 503 (a dependency slower than its budget, as on a loaded
   * machine) says to come back after Retry-After, so it is asked again, a few times at most and
   * counted. Whatever answers then must still not be stale.
   */
  let askedAgain = 0;
  const read = async (url: string, init: RequestInit = {}): Promise<Response> => {
    for (let attempt = 1; ; attempt++) {
      const response = await fetch(url, { headers: auth, ...init });
      if (response.status !== 503 || attempt === READ_ATTEMPTS) return response;
      askedAgain += 1;
      await response.arrayBuffer();
      const seconds = Number(response.headers.get('retry-after') ?? '1');
      await new Promise((resolve) => setTimeout(resolve, Math.min(Number.isFinite(seconds) ? seconds : 1, 2) * 1000));
    }
  };
  /** The record a GET answers (one field of it), or GONE on a 404. */
  const readField = async (url: string, field: string): Promise<State> => {
    const response = await read(url);
    if (response.status === 404) return GONE;
    const body = (await readJson(response)) as unknown as Json[];
    if (response.status !== 200) throw new Error(`GET ${url}: ${response.status} ${JSON.stringify(body)}`);
    return JSON.stringify(body[0]?.[field]);
  };

  const productNames = new Map<string, string>();
  const products: Kind = {
    name: 'products (a generic domain, cached by id and by page)',
    replicas: () => cluster.replicas.crud,
    deletable: true,
    create: async () => {
      const name = `Pear ${randomUUID()}`;
      const [created] = await send('POST', `${cluster.url}/api/v1/products`, 201, { name, price: 2, description: 'Green', stock: 0, category: 'Fruits', perishable: true });
      productNames.set(String(created!.id), name);
      return String(created!.id);
    },
    update: async (base, id, round) => {
      await send('PUT', `${base}/api/v1/products/${id}`, 200, { stock: round });
      return JSON.stringify(round);
    },
    remove: async (base, id) => void (await send('DELETE', `${base}/api/v1/products/${id}`, 204)),
    reads: async (base, id) => {
      const byId = await readField(`${base}/api/v1/products/${id}`, 'stock');
      // The list page that holds the record, filtered to it: cached under the domain's generation.
      const response = await read(`${base}/api/v1/products?name=eq.${encodeURIComponent(productNames.get(id)!)}`);
      const page = (await readJson(response)) as unknown as Json[];
      if (response.status !== 200) throw new Error(`list: ${response.status} ${JSON.stringify(page)}`);
      return [byId, page.length === 0 ? GONE : JSON.stringify(page[0]!.stock)];
    },
  };

  const identities: Kind = {
    name: 'identities (cached by id; no delete route)',
    replicas: () => cluster.replicas.identity,
    deletable: false,
    create: async () => {
      const [created] = await send('POST', `${cluster.url}/api/v1/identity`, 201, { name: 'Round 0', email: `ryw-${randomUUID()}@example.com` });
      return String(created!.id);
    },
    update: async (base, id, round) => {
      await send('PUT', `${base}/api/v1/identity/${id}`, 200, { name: `Round ${round}` });
      return JSON.stringify(`Round ${round}`);
    },
    remove: async () => undefined,
    reads: async (base, id) => [await readField(`${base}/api/v1/identity/${id}`, 'name')],
  };

  let credentialOwner: string;
  const credentials: Kind = {
    name: 'credentials',
    replicas: () => cluster.replicas.credentials,
    deletable: true,
    create: async () => {
      credentialOwner ??= await identities.create();
      const [created] = await send('POST', `${cluster.url}/api/v1/credentials`, 201, { identity_id: credentialOwner, provider: 'API_KEY', secret: randomBytes(32).toString('base64url') });
      return String(created!.id);
    },
    update: async (base, id, round) => {
      await send('PUT', `${base}/api/v1/credentials/${id}`, 200, { activated: round % 2 === 0 });
      return JSON.stringify(round % 2 === 0);
    },
    remove: async (base, id) => void (await send('DELETE', `${base}/api/v1/credentials/${id}`, 204)),
    reads: async (base, id) => [await readField(`${base}/api/v1/credentials/${id}`, 'activated')],
  };

  const redirectUri = (round: number) => `https://app.example.com/callback/${round}`;
  const clients: Kind = {
    name: 'OAuth clients (read by the admin API and by the authorize endpoint)',
    replicas: () => cluster.replicas.sso,
    deletable: true,
    create: async () => {
      const [created] = await send('POST', `${cluster.url}/api/v1/sso/clients`, 201, { name: 'App', type: 'public', redirect_uris: [redirectUri(0)] });
      return String(created!.id);
    },
    update: async (base, id, round) => {
      const settings = { name: 'App', redirect_uris: [redirectUri(round)], post_logout_redirect_uris: [], grant_types: ['authorization_code'], scopes: ['openid'] };
      await send('PUT', `${base}/api/v1/sso/clients/${id}`, 200, settings);
      return JSON.stringify([redirectUri(round)]);
    },
    remove: async (base, id) => void (await send('DELETE', `${base}/api/v1/sso/clients/${id}`, 204)),
    reads: async (base, id) => {
      const api = await readField(`${base}/api/v1/sso/clients/${id}`, 'redirect_uris');
      // The authorize endpoint answers its login page (200) only for the client's registered redirect URI.
      const accepted: string[] = [];
      const registered = api === GONE ? [] : (JSON.parse(api) as string[]);
      for (const uri of [...registered, redirectUri(-1)]) {
        const query = new URLSearchParams({ response_type: 'code', client_id: id, redirect_uri: uri, scope: 'openid', code_challenge: CHALLENGE, code_challenge_method: 'S256' });
        const response = await read(`${base}/api/v1/sso/authorize?${query}`, { headers: {}, redirect: 'manual' });
        await response.arrayBuffer();
        if (response.status === 200) accepted.push(uri);
      }
      return [api, accepted.length === 0 ? GONE : JSON.stringify(accepted)];
    },
  };

  /**
   * One record's life: created, then per round every read once on both replicas (so each has
   * it cached), the write through one replica with reads racing it on both, and once it is
   * answered, the reads on both replicas; the last round deletes it, where the kind can.
   */
  const exercise = async (kind: Kind, index: number): Promise<{ stale: string[]; reads: number }> => {
    const id = await kind.create();
    const stale: string[] = [];
    let reads = 0;
    const replicas = kind.replicas();
    for (let round = 1; round <= ROUNDS; round++) {
      for (const base of replicas) await kind.reads(base, id);
      const writer = replicas[(index + round) % replicas.length]!;
      const deleting = round === ROUNDS && kind.deletable;
      const racing = Array.from({ length: RACING_READS }, (_, n) =>
        new Promise((resolve) => setTimeout(resolve, (n * RACE_WINDOW_MS) / RACING_READS)).then(() => kind.reads(replicas[n % replicas.length]!, id).catch(() => [])),
      );
      const expected = deleting ? (await kind.remove(writer, id), GONE) : await kind.update(writer, id, round);
      // Every racing read has finished (and stored what it read, if it could) before the checks.
      await Promise.all(racing);
      for (const base of replicas) {
        for (const seen of await kind.reads(base, id)) {
          reads++;
          if (seen !== expected) stale.push(`record ${index} round ${round}: ${base} answered ${seen}, ${expected} was written through ${writer}`);
        }
      }
    }
    return { stale, reads };
  };

  it.each([
    ['products', () => products],
    ['identities', () => identities],
    ['credentials', () => credentials],
    ['OAuth clients', () => clients],
  ])('never answers the state before an answered write, on either replica: %s', async (_name, kindOf) => {
    const kind = kindOf();
    const results = await Promise.all(Array.from({ length: RECORDS }, (_, index) => exercise(kind, index)));
    const stale = results.flatMap((result) => result.stale);
    figures.push(`${kind.name}: ${RECORDS} records x ${ROUNDS} writes, ${RACING_READS} racing reads each, ${results.reduce((sum, r) => sum + r.reads, 0)} reads after the answers, ${stale.length} stale${askedAgain > 0 ? ` (${askedAgain} answered 503 first and were asked again so far)` : ''}`);
    expect(stale).toEqual([]);
  });
});
