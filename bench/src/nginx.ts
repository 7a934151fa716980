// 1. The baseline every rate is a ratio of: nginx with a keep-alive pool to a bare Fastify route;
// and nginx serving a cached read's bytes as a static file, the floor of what serving them costs.
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from '@app/testing';
import { answers, removeDir, startProcess, stopProcess, tempDir, withParts } from './processes.js';
import { NGINX, NGINX_WORKERS, PATH } from './settings.js';

/**
 * One worker under a master, as nginx runs in production: on this 2-core machine autocannon
 * takes one core and the backend (one Node event loop) the other, so a second worker would
 * only contend with them; the services measured against it are one event loop too.
 * BENCH_NGINX_WORKERS changes it. The temp paths default to /var/lib/nginx: moved to `dir`.
 */
function nginxConf(dir: string, nginxPort: number, location: string): string {
  const temp = (name: string) => join(dir, name);
  return `worker_processes ${NGINX_WORKERS};
pid ${temp('nginx.pid')};
error_log ${temp('error.log')} warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path ${temp('client_body')};
  proxy_temp_path ${temp('proxy')};
  fastcgi_temp_path ${temp('fastcgi')};
  uwsgi_temp_path ${temp('uwsgi')};
  scgi_temp_path ${temp('scgi')};
  # nginx closes a keep-alive connection after 1000 requests by default (client and upstream
  # side): autocannon counts the race with its next request as an error. A benchmark's
  # connections live for the whole run, as the platform's do.
  keepalive_requests 1000000;
  server {
    listen 127.0.0.1:${nginxPort};
${location}
  }
}
`;
}

/** A keep-alive pool to the bare Fastify route. */
const proxyTo = (barePort: number) => `    location / {
      proxy_pass http://127.0.0.1:${barePort};
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }`;

/** The file `/record` from `dir`, as nginx serves static files (sendfile, its own ETag). */
const fileFrom = (dir: string) => `    sendfile on;
    location = /record {
      default_type application/json;
      root ${dir};
      try_files /record.json =404;
    }`;

/** nginx in `dir` on a free port, serving what `location` says; stops with `own`'s parts. */
async function startNginx(own: (stop: () => Promise<unknown>) => void, dir: string, location: string): Promise<string> {
  const nginxPort = await freePort();
  const conf = join(dir, 'nginx.conf');
  writeFileSync(conf, nginxConf(dir, nginxPort, location));
  const nginx = await startProcess('nginx', NGINX, ['-p', dir, '-c', conf, '-e', join(dir, 'error.log'), '-g', 'daemon off;'], {
    env: { PATH },
    log: join(dir, 'nginx.log'),
    ready: answers(`http://127.0.0.1:${nginxPort}/record`),
  });
  own(() => stopProcess(nginx));
  return `http://127.0.0.1:${nginxPort}/record`;
}

export function startBaseline() {
  return withParts(async (own) => {
    const dir = tempDir('nginx');
    own(async () => removeDir(dir));
    const barePort = await freePort();
    const bare = await startProcess('bare Fastify', process.execPath, [new URL('./bare.js', import.meta.url).pathname], {
      env: { PATH, PORT: String(barePort) },
      log: join(dir, 'bare.log'),
      ready: answers(`http://127.0.0.1:${barePort}/record`),
    });
    own(() => stopProcess(bare));
    return { url: await startNginx(own, dir, proxyTo(barePort)) };
  });
}

/**
 * nginx serving `body` (a cached read's answer, byte for byte) as a static file: the least an
 * HTTP server can do for the same bytes, which the all-in-one's read is measured against too.
 */
export function startStaticFile(body: Buffer) {
  return withParts(async (own) => {
    const dir = tempDir('nginx-static');
    own(async () => removeDir(dir));
    // nginx's workers run as nobody when the bench is root: they must reach the file.
    chmodSync(dir, 0o755);
    writeFileSync(join(dir, 'record.json'), body, { mode: 0o644 });
    return { url: await startNginx(own, dir, fileFrom(dir)) };
  });
}
