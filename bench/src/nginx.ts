// 1. The baseline every rate is a ratio of: nginx with a keep-alive pool to a bare Fastify route.
import { writeFileSync } from 'node:fs';
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
function nginxConf(dir: string, barePort: number, nginxPort: number): string {
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
  upstream bare {
    server 127.0.0.1:${barePort};
    keepalive 32;
    keepalive_requests 1000000;
  }
  server {
    listen 127.0.0.1:${nginxPort};
    location / {
      proxy_pass http://bare;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }
  }
}
`;
}

export function startBaseline() {
  return withParts(async (own) => {
    const dir = tempDir('nginx');
    own(async () => removeDir(dir));
    const [barePort, nginxPort] = [await freePort(), await freePort()];
    const bare = await startProcess('bare Fastify', process.execPath, [new URL('./bare.js', import.meta.url).pathname], {
      env: { PATH, PORT: String(barePort) },
      log: join(dir, 'bare.log'),
      ready: answers(`http://127.0.0.1:${barePort}/record`),
    });
    own(() => stopProcess(bare));
    const conf = join(dir, 'nginx.conf');
    writeFileSync(conf, nginxConf(dir, barePort, nginxPort));
    const nginx = await startProcess('nginx', NGINX, ['-p', dir, '-c', conf, '-e', join(dir, 'error.log'), '-g', 'daemon off;'], {
      env: { PATH },
      log: join(dir, 'nginx.log'),
      ready: answers(`http://127.0.0.1:${nginxPort}/record`),
    });
    own(() => stopProcess(nginx));
    return { url: `http://127.0.0.1:${nginxPort}/record` };
  });
}
