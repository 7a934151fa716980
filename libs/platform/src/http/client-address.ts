import { BlockList, isIP } from 'node:net';

/** The ranges `TRUST_PROXY` may name, as proxy-addr (Express, Fastify) defines them. */
const NAMED_RANGES: Record<string, string[]> = {
  loopback: ['127.0.0.0/8', '::1/128'],
  linklocal: ['169.254.0.0/16', 'fe80::/10'],
  uniquelocal: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7'],
};

/** An IPv4 peer on a dual-stack socket shows as `::ffff:a.b.c.d`; compare it as IPv4. */
const unmapped = (address: string) => (address.startsWith('::ffff:') && isIP(address.slice(7)) === 4 ? address.slice(7) : address);

/**
 * The peers whose `X-Forwarded-For` a process believes. `spec` is TRUST_PROXY, e.g.
 * `loopback,uniquelocal` or `10.0.0.0/8,192.168.1.7`; `none` (the default) trusts nobody.
 * At the edge that is the load balancer in front, if any; behind
 * the edge (a service in split mode) it is the edge's address or network.
 */
export function parseTrustedProxies(spec: string): BlockList {
  const list = new BlockList();
  for (const entry of spec.split(',').map((part) => part.trim()).filter(Boolean)) {
    if (entry === 'none') continue;
    for (const range of NAMED_RANGES[entry] ?? [entry]) {
      const [address = '', prefix] = range.split('/');
      const family = isIP(address);
      if (family === 0 || (prefix !== undefined && !/^\d{1,3}$/.test(prefix))) {
        throw new Error(`TRUST_PROXY: "${entry}" is not an IP address, a CIDR range, or one of loopback, linklocal, uniquelocal, none`);
      }
      const type = family === 4 ? 'ipv4' : 'ipv6';
      if (prefix === undefined) list.addAddress(address, type);
      else list.addSubnet(address, Number(prefix), type);
    }
  }
  return list;
}

const isTrusted = (trusted: BlockList, address: string) => {
  const plain = unmapped(address);
  const family = isIP(plain);
  return family !== 0 && trusted.check(plain, family === 4 ? 'ipv4' : 'ipv6');
};

/**
 * The address a request came from, for throttling, with proxy-addr's rule: start at the
 * socket peer and, while the hop in hand is a trusted proxy, step one entry left in
 * `X-Forwarded-For` (each proxy appends the address it saw). The first untrusted hop is the
 * client; entries further left were written by the client and are ignored. A peer that is
 * not trusted is the client, whatever headers it sends. A malformed entry stops the walk at
 * the last trusted hop's view.
 */
export function clientAddress(trusted: BlockList, socketAddress: string | undefined, forwardedFor: string | string[] | undefined): string {
  let client = unmapped(socketAddress ?? 'unknown');
  if (forwardedFor === undefined) return client;
  const header = Array.isArray(forwardedFor) ? forwardedFor.join(',') : forwardedFor;
  const hops = header.split(',').map((part) => unmapped(part.trim())).filter(Boolean);
  while (isTrusted(trusted, client)) {
    const next = hops.pop();
    if (next === undefined || isIP(next) === 0) break;
    client = next;
  }
  return client;
}
