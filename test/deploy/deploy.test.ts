// Cross-checks the deployment artifacts against the code they deploy: no Docker engine or
// cluster here, so the Dockerfile, docker-compose.yml and the kustomize manifests are parsed
// and held to the repository's facts (services, ports, config schema, entries, migrations).
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { buildPlatform, PLATFORM_CONFIG } from '@app/all-in-one';
import { DOMAIN_SERVICES, SERVICES, type ServiceName } from '@app/contracts';
import { buildGateway } from '@app/gateway';
import { buildServiceApp, configKeysOf as variablesOf, loadConfig, METRICS_PATH, secretVariablesOf, type App, type SharedConfig } from '@app/platform';

import { describeIf } from '@app/testing';
import { parseAllDocuments } from 'yaml';
import {
  callsOf,
  configKeysOf,
  containerEnv,
  DEFINITIONS,
  distEntryExists,
  dockerfileInstructions,
  exists,
  hasMigrations,
  interpolateDefaults,
  isServiceName,
  K8S_BASE,
  K8S_PRODUCTION,
  loadBase,
  loadCompose,
  loadKustomization,
  loadYamlDocuments,
  named,
  ofKind,
  ownConfigOf,
  ownVariablesOf,
  PLATFORM_SERVICES,
  portOf,
  read,
  repositoryServices,
  resolvePort,
  seconds,
  selects,
  variablesReadBy,
  yamlFilesIn,
  type Container,
  type K8sObject,
  type KindOf,
} from './artifacts.js';
import { openPlatformDependencies, type PlatformDependencies } from '../support/platform.js';

const services = repositoryServices();
const migrated = services.filter(hasMigrations);
const IMAGE = (service: string) => `api-platform/${service}`;
const ROOT_VERSION = (JSON.parse(read('package.json')) as { version: string }).version;

/** Names the config schema does not know (an empty value, which counts as unset, is still a known name). */
function unknownNames(env: Record<string, string>): string[] {
  loadConfig(env, PLATFORM_CONFIG);
  return Object.keys(env).filter((name) => !variablesOf(PLATFORM_CONFIG).includes(name));
}

/** A standalone service opens Postgres, Redis and NATS (runService); the gateway opens none. */
const opensDependencies = (service: string) => !exists(`services/${service}/src/main.ts`) || read(`services/${service}/src/main.ts`).includes('runService(');

/** The configuration a service's process runs with: the shared variables and its own. */
const configOf = (service: ServiceName, env: Record<string, string>): SharedConfig => loadConfig(env, ownConfigOf(service));

/**
 * The secrets a deployment must be able to set: the config's secret variables, the clients
 * whose secrets they are (id and secret go together), and the bootstrap admin's email beside
 * its password.
 */
const DEPLOYED_SECRETS = [...new Set([...secretVariablesOf(PLATFORM_CONFIG), 'GOOGLE_CLIENT_ID', 'GITHUB_CLIENT_ID', 'BOOTSTRAP_ADMIN_EMAIL'])].sort();

/** The backing servers' URLs: secrets, which a process that opens none of them is not given. */
const BACKING_URLS = ['DATABASE_URL', 'REDIS_URL', 'NATS_URL'];

/** Whether a service reads a Secret key: its own schema declares it, or it opens the server the key reaches. */
const readsSecret = (service: ServiceName, key: string) => ownVariablesOf(service).includes(key) || (opensDependencies(service) && BACKING_URLS.includes(key));

function expectRunnableConfig(service: ServiceName, env: Record<string, string>, hostOf: (name: ServiceName) => string, nodeEnv = 'production') {
  expect(unknownNames(env)).toEqual([]);
  const config = configOf(service, env);
  expect(config.NODE_ENV).toBe(nodeEnv);
  // Without these a pod falls back to an embedded database on a read-only filesystem and a
  // per-process cache and bus that its replicas would not share.
  if (opensDependencies(service)) {
    expect([config.DATABASE_URL, config.REDIS_URL, config.NATS_URL].map((url) => url !== undefined)).toEqual([true, true, true]);
  }
  // Every peer it calls (those its sources reach, and sso for the JWKS: sso too, whose SSO_URL
  // names itself) is where the deployment runs it, on its registry port.
  const peers = PLATFORM_SERVICES.filter((peer) => peer === 'sso' || callsOf(service).includes(peer));
  const urlOf = (peer: ServiceName) => [SERVICES[peer].urlVariable, config[SERVICES[peer].urlVariable]];
  expect(Object.fromEntries(peers.map(urlOf))).toEqual(Object.fromEntries(peers.map((peer) => [SERVICES[peer].urlVariable, `http://${hostOf(peer)}:${portOf(peer)}`])));
  if (configKeysOf(service).has('PLATFORM_SERVICES')) expect([...config.PLATFORM_SERVICES].sort()).toEqual([...DOMAIN_SERVICES].sort());
  return config;
}

/** The variables a deployment sets that no process given them reads (a leftover, or a typo the schema knows). */
function unreadNames(envs: [ServiceName, Record<string, string>][]): string[] {
  const names = new Set(envs.flatMap(([, env]) => Object.keys(env)));
  return [...names].filter((name) => !envs.some(([service, env]) => name in env && configKeysOf(service).has(name))).sort();
}

describe('the repository', () => {
  it('has services for the cross-checks to hold against', () => {
    expect(services).toEqual(expect.arrayContaining(['gateway', 'health', 'identity']));
  });

  it('has no service the registry (@app/contracts) does not know', () => {
    expect(services.filter((name) => !isServiceName(name))).toEqual([]);
  });

  it('declares every service of the registry but the gateway under its registry name', () => {
    expect(Object.entries(DEFINITIONS).map(([name, definition]) => [name, definition.name])).toEqual(Object.keys(DEFINITIONS).map((name) => [name, name]));
    expect([...Object.keys(DEFINITIONS), 'gateway'].sort()).toEqual([...PLATFORM_SERVICES].sort());
  });

  it.each(PLATFORM_SERVICES)('has %s parse every variable its sources read (a shared one, or one of its own schema)', (service) => {
    // A variable in neither would be read as undefined: its process never parsed it.
    expect(variablesReadBy(service).filter((name) => !configKeysOf(service).has(name))).toEqual([]);
  });
});

describe('Dockerfile', () => {
  const instructions = dockerfileInstructions(read('Dockerfile'));
  const stages = [...new Set(instructions.filter((i) => i.keyword === 'FROM').map((i) => i.stage))];
  const runtimeStage = stages.at(-1)!;
  const inStage = (stage: string, keyword: string) => instructions.filter((i) => i.stage === stage && i.keyword === keyword);
  const runtime = (keyword: string) => inStage(runtimeStage, keyword);
  const nodeImage = /NODE_IMAGE=(\S+)/.exec(instructions.find((i) => i.keyword === 'ARG' && i.args.startsWith('NODE_IMAGE'))?.args ?? '')?.[1];

  it('bases every stage on a supported Node LTS slim image (24) that package.json engines allow', () => {
    expect(nodeImage).toBe('node:24-slim');
    const engines = JSON.parse(read('package.json')).engines.node as string;
    expect(Number(/^>=(\d+)/.exec(engines)?.[1])).toBeLessThanOrEqual(24);
    expect(instructions.filter((i) => i.keyword === 'FROM').map((i) => i.args.split(/\s+/)[0])).toEqual(stages.map(() => '${NODE_IMAGE}'));
  });

  it('builds every workspace with the dev dependencies, generating the Prisma clients first', () => {
    const build = inStage('build', 'RUN').map((i) => i.args);
    expect(build).toEqual(expect.arrayContaining([expect.stringMatching(/^npm ci\b/), expect.stringMatching(/node scripts\/prisma-generate\.mjs && npm run build/)]));
  });

  it('carries every workspace\'s dist/ and Prisma migrations into the runtime tree', () => {
    const assemble = inStage('build', 'RUN').map((i) => i.args).find((args) => args.includes('/out'));
    expect(assemble).toMatch(/for dir in libs\/\* services\/\* apps\/\*/);
    expect(assemble).toContain('cp -r "$dir/dist"');
    expect(assemble).toContain('cp -r "$dir/prisma/migrations"');
    expect(runtime('COPY').map((i) => i.args)).toEqual(['--from=deps /app/ ./', '--from=build /out/ ./']);
  });

  it('installs only the service\'s production dependencies, without install scripts but argon2\'s', () => {
    const install = inStage('deps', 'RUN').map((i) => i.args).find((args) => args.includes('npm ci'));
    expect(install).toMatch(/npm ci --omit=dev --omit=optional --ignore-scripts -w "\$\{WORKSPACE\}"/);
    expect(inStage('deps', 'ARG').map((i) => i.args)).toEqual(['SERVICE', 'WORKSPACE=services/${SERVICE}']);
    expect(install).toContain('npm rebuild argon2');
  });

  it('runs as a numeric non-root user, so Kubernetes can verify runAsNonRoot', () => {
    const users = runtime('USER').map((i) => i.args);
    expect(users).toHaveLength(1);
    expect(users[0]).toMatch(/^[1-9]\d*(:\d+)?$/);
  });

  it('starts dist/main.js of the service from its folder, in exec form', () => {
    expect(runtime('WORKDIR').at(-1)?.args).toBe('/app/${WORKSPACE}');
    expect(runtime('CMD').map((i) => JSON.parse(i.args) as string[])).toEqual([['node', 'dist/main.js']]);
    for (const service of services) expect([service, distEntryExists(service, 'dist/main.js')]).toEqual([service, true]);
  });

  it('takes the service and its port as build arguments, listens on and exposes that port', () => {
    expect(runtime('ARG').map((i) => i.args)).toEqual(['SERVICE', 'WORKSPACE=services/${SERVICE}', 'PORT']);
    expect(runtime('ENV').map((i) => i.args).join(' ')).toMatch(/\bPORT=\$\{PORT\}/);
    expect(runtime('ENV').map((i) => i.args).join(' ')).toMatch(/\bNODE_ENV=production\b/);
    expect(runtime('EXPOSE').map((i) => i.args)).toEqual(['${PORT}']);
    expect(runtime('HEALTHCHECK').map((i) => i.args).join(' ')).toContain('/health/readiness');
  });

  it('leaves local state and build output out of the build context', () => {
    const ignored = read('.dockerignore').split('\n').map((line) => line.trim()).filter((line) => line && !line.startsWith('#'));
    expect(ignored).toEqual(expect.arrayContaining(['**/node_modules', '**/dist', '**/src/generated', '.data', '.git', '**/coverage', '.env']));
    // npm ci needs every workspace's package.json, test/ included.
    expect(ignored.filter((pattern) => /^(test|libs|services|apps)\b/.test(pattern))).toEqual([]);
  });
});

describe('docker-compose.yml', () => {
  const compose = loadCompose();
  const appServices = Object.keys(compose.services).filter((name) => compose.services[name]!.build);
  const running = appServices.filter((name) => !name.endsWith('-migrate'));

  it('runs Postgres 16, Redis 7 and NATS 2 with JetStream, each with a health check', () => {
    expect(compose.services.postgres?.image).toBe('postgres:16');
    expect(compose.services.redis?.image).toBe('redis:7');
    expect(compose.services.nats?.image).toMatch(/^nats:2(-|$)/);
    expect(compose.services.nats?.command).toContain('-js');
    for (const name of ['postgres', 'redis', 'nats']) expect([name, compose.services[name]?.healthcheck?.test?.length ?? 0]).not.toEqual([name, 0]);
  });

  it('runs every service of the repository, and only services the platform knows', () => {
    expect(running.filter((name) => !services.includes(name) && !(PLATFORM_SERVICES as string[]).includes(name))).toEqual([]);
    expect(services.filter((name) => !running.includes(name))).toEqual([]);
    expect([...running].sort()).toEqual([...PLATFORM_SERVICES].sort());
  });

  it.each(PLATFORM_SERVICES)('builds %s from the Dockerfile with its SERVICE and its port', (service) => {
    const entry = compose.services[service]!;
    expect(entry.image).toBe(IMAGE(service));
    expect(entry.build).toEqual({ context: '.', args: { SERVICE: service, PORT: String(portOf(service)) } });
    if (exists(`services/${service}`)) expect(distEntryExists(service, 'dist/main.js')).toBe(true);
  });

  it('publishes only the gateway\'s port', () => {
    const published = Object.entries(compose.services).filter(([, entry]) => entry.ports).map(([name, entry]) => [name, entry.ports]);
    expect(published).toEqual([['gateway', [`${portOf('gateway')}:${portOf('gateway')}`]]]);
  });

  it('has a migrate step for every service with migrations, and only those', () => {
    const steps = appServices.filter((name) => name.endsWith('-migrate')).map((name) => name.replace(/-migrate$/, ''));
    expect(migrated.filter((service) => !steps.includes(service))).toEqual([]);
    // A step for a service without migrations in this checkout is a typo, unless its source is not here yet.
    expect(steps.filter((service) => exists(`services/${service}`) && !hasMigrations(service))).toEqual([]);
    for (const service of steps) {
      const step = compose.services[`${service}-migrate`]!;
      expect([service, step.image, step.command, step.depends_on?.postgres]).toEqual([service, IMAGE(service), ['node', 'dist/migrate.js'], { condition: 'service_healthy' }]);
      expect(step.build).toEqual(compose.services[service]!.build);
      if (exists(`services/${service}`)) expect([service, distEntryExists(service, 'dist/migrate.js')]).toEqual([service, true]);
      expect(compose.services[service]!.depends_on?.[`${service}-migrate`]).toEqual({ condition: 'service_completed_successfully' });
    }
  });

  it('starts a service after the backing services it opens are healthy, and the gateway after every service', () => {
    for (const service of running.filter(opensDependencies)) {
      const dependsOn = compose.services[service]!.depends_on ?? {};
      expect([service, dependsOn.postgres, dependsOn.redis, dependsOn.nats]).toEqual([service, ...Array(3).fill({ condition: 'service_healthy' })]);
    }
    const gatewayDependsOn = compose.services.gateway!.depends_on ?? {};
    expect(Object.keys(gatewayDependsOn).sort()).toEqual(running.filter((name) => name !== 'gateway').sort());
  });

  it.each(PLATFORM_SERVICES)('gives %s an environment the config schema accepts, pointing at the compose services', (service) => {
    const env = interpolateDefaults(compose.services[service]!.environment ?? {});
    // Compose is the development setup: sso makes the first admin when none is configured.
    const config = expectRunnableConfig(service, env, (name) => name, 'development');
    if (config.DATABASE_URL) expect(new URL(config.DATABASE_URL).hostname).toBe('postgres');
    if (config.REDIS_URL) expect(new URL(config.REDIS_URL).hostname).toBe('redis');
    if (config.NATS_URL) expect(new URL(config.NATS_URL).hostname).toBe('nats');
    // The drain (SHUTDOWN_TIMEOUT_MS) must end before compose's SIGKILL.
    expect(seconds(compose.services[service]!.stop_grace_period ?? '10s')).toBeGreaterThan(config.SHUTDOWN_TIMEOUT_MS / 1000);
  });

  it('sets no variable that no service given it reads', () => {
    expect(unreadNames(PLATFORM_SERVICES.map((service) => [service, interpolateDefaults(compose.services[service]!.environment ?? {})]))).toEqual([]);
  });

  it('gives each secret only to the services that read it, and every one that does', () => {
    const secrets = ['DATABASE_URL', 'REDIS_URL', ...DEPLOYED_SECRETS];
    for (const service of PLATFORM_SERVICES) {
      const given = Object.keys(compose.services[service]!.environment ?? {}).filter((name) => secrets.includes(name));
      expect([service, given.sort()]).toEqual([service, secrets.filter((key) => readsSecret(service, key)).sort()]);
    }
  });

  it('takes every secret from the environment (or an .env file), none fixed in the file but local-only defaults', () => {
    for (const service of PLATFORM_SERVICES) {
      const environment = compose.services[service]!.environment ?? {};
      for (const name of DEPLOYED_SECRETS.filter((key) => key in environment)) {
        expect([service, name, environment[name]]).toEqual([service, name, expect.stringMatching(new RegExp(`^\\$\\{${name}:-[^}]*\\}$`))]);
      }
    }
    // No password for the first admin is built in: unset, sso generates one and prints it once.
    expect(interpolateDefaults(compose.services.sso!.environment ?? {})).toMatchObject({ BOOTSTRAP_ADMIN_EMAIL: '', BOOTSTRAP_ADMIN_PASSWORD: '' });
  });

  it('serves /metrics on a management port in every container, published nowhere', () => {
    for (const service of PLATFORM_SERVICES) {
      const config = configOf(service, interpolateDefaults(compose.services[service]!.environment ?? {}));
      expect([service, config.METRICS, config.MANAGEMENT_PORT]).toEqual([service, 'on', 9464]);
      expect([service, config.MANAGEMENT_PORT === portOf(service)]).toEqual([service, false]);
    }
    expect(Object.values(compose.services).flatMap((entry) => entry.ports ?? []).filter((published) => published.includes('9464'))).toEqual([]);
  });

  it('fails the check on a misspelled variable', () => {
    expect(unknownNames({ NODE_ENV: 'production', DATABSE_URL: 'postgres://x@postgres/db' })).toEqual(['DATABSE_URL']);
  });
});

describe('deploy/k8s/base', () => {
  const kustomization = loadKustomization(K8S_BASE);
  const objects = loadBase();
  const secret = loadYamlDocuments(join(K8S_BASE, 'secret.example.yaml'))[0] as KindOf<'Secret'>;
  const configMaps = ofKind(objects, 'ConfigMap');
  const deployments = ofKind(objects, 'Deployment');
  const jobs = ofKind(objects, 'Job');
  const containerOf = (name: string): Container => named(objects, 'Deployment', name)!.spec.template.spec.containers[0]!;

  it('lists every manifest file of the base but the example Secret, and no missing one', () => {
    const files = yamlFilesIn(K8S_BASE).filter((file) => file !== 'kustomization.yaml');
    expect([...(kustomization.resources ?? [])].sort()).toEqual(files.filter((file) => file !== 'secret.example.yaml').sort());
    expect(kustomization.resources).not.toContain('secret.example.yaml');
  });

  it('pins every image it uses to the release in the root package.json', () => {
    const images = new Set([...deployments, ...jobs].flatMap((o) => o.spec.template.spec.containers.map((c) => c.image)));
    expect([...images].sort()).toEqual([...(kustomization.images ?? []).map((i) => i.name)].sort());
    for (const image of kustomization.images ?? []) expect([image.name, image.newTag]).toEqual([image.name, ROOT_VERSION]);
  });

  it('deploys every service of the repository, and only services the platform knows', () => {
    const names = deployments.map((d) => d.metadata.name);
    expect(services.filter((name) => !names.includes(name))).toEqual([]);
    expect([...names].sort()).toEqual([...PLATFORM_SERVICES].sort());
  });

  describe.each(PLATFORM_SERVICES)('%s', (service) => {
    const port = portOf(service);

    it('has a Deployment whose selector picks its own pods, running its image\'s default command', () => {
      const deployment = named(objects, 'Deployment', service)!;
      expect(selects(deployment.spec.selector.matchLabels, deployment.spec.template.metadata.labels)).toBe(true);
      expect(deployment.spec.template.spec.containers.map((c) => [c.image, c.command, c.args])).toEqual([[IMAGE(service), undefined, undefined]]);
      // No replicas: its HorizontalPodAutoscaler owns the count.
      expect(deployment.spec.replicas).toBeUndefined();
      if (exists(`services/${service}`)) expect(distEntryExists(service, 'dist/main.js')).toBe(true);
    });

    it('listens on its registry port, probed at /health/liveness and /health/readiness there, and on its management port', () => {
      const container = containerOf(service);
      const { MANAGEMENT_PORT } = configOf(service, containerEnv(container, configMaps, secret));
      expect(container.ports?.map((p) => [p.name, p.containerPort])).toEqual([['http', port], ['metrics', MANAGEMENT_PORT]]);
      expect(container.env?.find((v) => v.name === 'PORT')?.value).toBe(String(port));
      const probes = [container.startupProbe, container.livenessProbe, container.readinessProbe];
      expect(probes.map((probe) => probe && [probe.httpGet.path, resolvePort(container, probe.httpGet.port)])).toEqual([
        ['/health/liveness', port],
        ['/health/liveness', port],
        ['/health/readiness', port],
      ]);
    });

    it('runs as non-root on a read-only filesystem, with resource requests and limits', () => {
      const deployment = named(objects, 'Deployment', service)!;
      const container = containerOf(service);
      expect(deployment.spec.template.spec.securityContext?.runAsNonRoot).toBe(true);
      expect(container.securityContext).toMatchObject({ readOnlyRootFilesystem: true, allowPrivilegeEscalation: false });
      expect(Object.keys(container.resources?.requests ?? {}).sort()).toEqual(['cpu', 'memory']);
      expect(Object.keys(container.resources?.limits ?? {}).sort()).toEqual(['cpu', 'memory']);
    });

    it('gets an environment the config schema accepts, with the Secret keys the example defines', () => {
      const env = containerEnv(containerOf(service), configMaps, secret);
      expectRunnableConfig(service, env, (name) => name);
    });

    it('is given longer to stop than its preStop pause plus its drain (SHUTDOWN_TIMEOUT_MS)', () => {
      const deployment = named(objects, 'Deployment', service)!;
      const config = configOf(service, containerEnv(containerOf(service), configMaps, secret));
      const preStop = containerOf(service).lifecycle?.preStop?.exec?.command;
      const pause = preStop?.[0] === 'sleep' ? Number(preStop[1]) : 0;
      expect(deployment.spec.template.spec.terminationGracePeriodSeconds ?? 30).toBeGreaterThan(pause + config.SHUTDOWN_TIMEOUT_MS / 1000);
    });

    it('has a ClusterIP Service on its port selecting its pods', () => {
      const svc = named(objects, 'Service', service)!;
      const deployment = named(objects, 'Deployment', service)!;
      expect(svc.spec.type ?? 'ClusterIP').toBe('ClusterIP');
      expect(svc.spec.ports.map((p) => [p.port, resolvePort(containerOf(service), p.targetPort)])).toEqual([[port, port]]);
      expect(selects(svc.spec.selector, deployment.spec.template.metadata.labels)).toBe(true);
      // A Service must not also select another service's pods (or a migration Job's).
      const others = [...deployments.filter((d) => d.metadata.name !== service), ...jobs];
      expect(others.filter((o) => selects(svc.spec.selector, o.spec.template.metadata.labels)).map((o) => o.metadata.name)).toEqual([]);
    });

    it('scales on CPU between at least two replicas, and loses at most what its budget allows', () => {
      const hpa = named(objects, 'HorizontalPodAutoscaler', service)!;
      const pdb = named(objects, 'PodDisruptionBudget', service)!;
      const deployment = named(objects, 'Deployment', service)!;
      expect(hpa.spec.scaleTargetRef).toEqual({ apiVersion: 'apps/v1', kind: 'Deployment', name: service });
      expect(hpa.spec.metrics.map((m) => m.resource?.name)).toEqual(['cpu']);
      expect(hpa.spec.minReplicas).toBeGreaterThanOrEqual(2);
      expect(hpa.spec.maxReplicas).toBeGreaterThanOrEqual(hpa.spec.minReplicas);
      expect(selects(pdb.spec.selector.matchLabels, deployment.spec.template.metadata.labels)).toBe(true);
      expect(pdb.spec.maxUnavailable ?? pdb.spec.minAvailable).toBeDefined();
    });

    it('admits traffic on its port only from the services that call it (whose config reads its URL), and Prometheus on its management port alone', () => {
      const policy = named(objects, 'NetworkPolicy', service)!;
      const deployment = named(objects, 'Deployment', service)!;
      expect(selects(policy.spec.podSelector.matchLabels, deployment.spec.template.metadata.labels)).toBe(true);
      expect(policy.spec.policyTypes).toEqual(['Ingress']);
      const rules = policy.spec.ingress ?? [];
      const { MANAGEMENT_PORT } = configOf(service, containerEnv(containerOf(service), configMaps, secret));
      const scraping = (rule: (typeof rules)[number]) => (rule.from ?? []).some((peer) => peer.namespaceSelector !== undefined);
      // The management port only to Prometheus; the service's port never to it (nor anyone else's).
      for (const rule of rules) expect(rule.ports?.map((p) => resolvePort(containerOf(service), p.port))).toEqual([scraping(rule) ? MANAGEMENT_PORT : port]);
      for (const rule of rules.filter(scraping)) expect(rule.from?.every((peer) => peer.namespaceSelector !== undefined)).toBe(true);
      // Each peer names one service's pods; what the policy admits is exactly who calls it
      // (a service whose source is not in this checkout yet is taken on trust).
      const allPeers = rules.flatMap((rule) => rule.from ?? []);
      // The one peer from outside the namespace: Prometheus, to scrape /metrics.
      const scrapers = allPeers.filter((peer) => peer.namespaceSelector !== undefined);
      expect(scrapers).toEqual([{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } }, podSelector: { matchLabels: { 'app.kubernetes.io/name': 'prometheus' } } }]);
      const peers = allPeers.filter((peer) => peer.namespaceSelector === undefined);
      const admitted = peers.map((peer) => {
        expect(peer.ipBlock).toBeUndefined();
        const matched = deployments.filter((d) => selects(peer.podSelector?.matchLabels, d.spec.template.metadata.labels));
        expect(matched).toHaveLength(1);
        return matched[0]!.metadata.name;
      });
      const callers = services.filter(isServiceName).filter((caller) => caller !== service && callsOf(caller).includes(service));
      expect(callers.filter((caller) => !admitted.includes(caller))).toEqual([]);
      expect(admitted.filter((peer) => services.includes(peer) && !(callers as string[]).includes(peer))).toEqual([]);
      const openToAll = rules.filter((rule) => !rule.from || rule.from.length === 0);
      expect(openToAll.map((rule) => rule.ports?.map((p) => resolvePort(containerOf(service), p.port)))).toEqual(service === 'gateway' ? [[port]] : []);
    });
  });

  it('sets no variable that no service given it reads', () => {
    expect(unreadNames(PLATFORM_SERVICES.map((service) => [service, containerEnv(containerOf(service), configMaps, secret)]))).toEqual([]);
  });

  it('gives each Secret key only to the services that read it, and every one that does', () => {
    for (const service of PLATFORM_SERVICES) {
      const container = containerOf(service);
      const given = container.envFrom?.some((source) => source.secretRef)
        ? Object.keys(secret.stringData)
        : (container.env ?? []).flatMap((variable) => (variable.valueFrom?.secretKeyRef ? [variable.valueFrom.secretKeyRef.key] : []));
      expect([service, given.sort()]).toEqual([service, Object.keys(secret.stringData).filter((key) => readsSecret(service, key)).sort()]);
    }
  });

  it('denies all ingress to the namespace\'s pods by default', () => {
    const defaults = ofKind(objects, 'NetworkPolicy').filter((p) => Object.keys(p.spec.podSelector.matchLabels ?? {}).length === 0);
    expect(defaults.map((p) => [p.spec.policyTypes, p.spec.ingress ?? []])).toEqual([[['Ingress'], []]]);
  });

  it('exposes only the gateway: every Service is ClusterIP and the Ingress routes to the gateway alone', () => {
    expect(ofKind(objects, 'Service').filter((s) => (s.spec.type ?? 'ClusterIP') !== 'ClusterIP').map((s) => s.metadata.name)).toEqual([]);
    // No Service reaches a management port, so no Ingress or peer can route to /metrics.
    const managementTargets = ofKind(objects, 'Service').flatMap((svc) => svc.spec.ports.filter((p) => p.targetPort === 'metrics' || resolvePort(containerOf(svc.metadata.name), p.targetPort) === resolvePort(containerOf(svc.metadata.name), 'metrics')));
    expect(managementTargets).toEqual([]);
    const backends = ofKind(objects, 'Ingress').flatMap((ingress) => ingress.spec.rules.flatMap((rule) => rule.http.paths.map((path) => path.backend.service)));
    expect(backends).toEqual([{ name: 'gateway', port: { name: 'http' } }]);
  });

  it('has a migration Job for every service with migrations, running dist/migrate.js with the database URL', () => {
    const jobServices = jobs.map((job) => job.metadata.name.replace(/-migrate$/, ''));
    expect(jobs.map((job) => job.metadata.name)).toEqual(jobServices.map((service) => `${service}-migrate`));
    expect(migrated.filter((service) => !jobServices.includes(service))).toEqual([]);
    expect(jobServices.filter((service) => exists(`services/${service}`) && !hasMigrations(service))).toEqual([]);
    for (const [index, job] of jobs.entries()) {
      const service = jobServices[index]!;
      const [container, ...more] = job.spec.template.spec.containers;
      expect([service, more.length, container!.image, container!.command, job.spec.template.spec.restartPolicy]).toEqual([service, 0, IMAGE(service), ['node', 'dist/migrate.js'], 'Never']);
      if (exists(`services/${service}`)) expect([service, distEntryExists(service, 'dist/migrate.js')]).toEqual([service, true]);
      const env = containerEnv(container!, configMaps, secret);
      expect(unknownNames(env)).toEqual([]);
      expect(isServiceName(service) && configOf(service, env).DATABASE_URL).toBeTruthy();
      expect(container!.securityContext?.readOnlyRootFilesystem).toBe(true);
      expect(job.spec.template.spec.securityContext?.runAsNonRoot).toBe(true);
    }
  });

  it('keeps the example Secret to accepted names with placeholder values, every referenced key defined', () => {
    expect([secret.kind, secret.metadata.name]).toEqual(['Secret', 'api-platform-secrets']);
    expect(unknownNames(secret.stringData)).toEqual([]);
    for (const [name, value] of Object.entries(secret.stringData)) expect([name, /CHANGE-ME|example\.com/.test(value)]).toEqual([name, true]);
    const referenced = [...deployments, ...jobs].flatMap((o) => o.spec.template.spec.containers.flatMap((c) => (c.env ?? []).flatMap((v) => (v.valueFrom?.secretKeyRef ? [v.valueFrom.secretKeyRef.key] : []))));
    expect(referenced.filter((key) => !(key in secret.stringData))).toEqual([]);
  });

  it('wires every secret a deployment sets from the Secret, to every service that reads it', () => {
    expect(DEPLOYED_SECRETS.filter((key) => !(key in secret.stringData))).toEqual([]);
    for (const service of PLATFORM_SERVICES) {
      const fromSecret = (containerOf(service).env ?? []).flatMap((variable) => (variable.valueFrom?.secretKeyRef ? [variable.name] : []));
      expect([service, DEPLOYED_SECRETS.filter((key) => readsSecret(service, key) && !fromSecret.includes(key))]).toEqual([service, []]);
    }
  });

  it('keeps secrets out of the ConfigMap', () => {
    const data = configMaps.flatMap((map) => Object.keys(map.data));
    expect(data.filter((name) => name in secret.stringData)).toEqual([]);
    expect(unknownNames(Object.fromEntries(configMaps.flatMap((map) => Object.entries(map.data))))).toEqual([]);
  });
});

describe('deploy/k8s/overlays/production', () => {
  const kustomization = loadKustomization(K8S_PRODUCTION);
  const base = loadBase();

  it('builds on the base, and every file it names exists', () => {
    expect(kustomization.resources).toContain('../../base');
    const files = [...(kustomization.resources ?? []).filter((r) => r.endsWith('.yaml')), ...(kustomization.patches ?? []).map((p) => p.path)];
    expect(files.filter((file) => !exists(`deploy/k8s/overlays/production/${file}`))).toEqual([]);
    expect([...files].sort()).toEqual(yamlFilesIn(K8S_PRODUCTION).filter((file) => file !== 'kustomization.yaml').sort());
  });

  it('patches only objects the base has, with names the config accepts', () => {
    for (const patch of (kustomization.patches ?? []).filter((p) => !p.target)) {
      for (const object of loadYamlDocuments(join(K8S_PRODUCTION, patch.path)) as K8sObject[]) {
        expect([patch.path, named(base, object.kind, object.metadata.name) !== undefined]).toEqual([patch.path, true]);
        if (object.kind === 'ConfigMap') expect(unknownNames(object.data)).toEqual([]);
      }
    }
  });
});

const K8S_ALL_IN_ONE = join(K8S_PRODUCTION, '../all-in-one');
const kubectl = spawnSync('kubectl', ['version', '--client'], { encoding: 'utf8' }).status === 0;

/** `kubectl kustomize <dir>`: the objects a cluster would be given. */
function rendered(dir: string): K8sObject[] {
  const result = spawnSync('kubectl', ['kustomize', dir], { encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 });
  if (result.status !== 0) throw new Error(`kubectl kustomize ${dir} failed: ${result.stderr}`);
  return parseAllDocuments(result.stdout).map((document) => document.toJS() as K8sObject);
}

/** Every probe path of a container, with the probe it belongs to. */
const probePaths = (container: Container) =>
  [container.startupProbe, container.livenessProbe, container.readinessProbe].flatMap((probe) => (probe ? [probe.httpGet.path] : []));

// kubectl is installed on every machine of this project's CI; without it the renders cannot be checked.
describeIf(kubectl, 'needs kubectl')('deploy/k8s as kubectl kustomize renders it', () => {
  it.each([['base', K8S_BASE], ['production', K8S_PRODUCTION], ['all-in-one', K8S_ALL_IN_ONE]])('renders the %s kustomization', (_name, dir) => {
    expect(rendered(dir).length).toBeGreaterThan(0);
  });

  it('production runs 2+ replicas of every service, each with an autoscaler, a disruption budget and a NetworkPolicy', () => {
    const objects = rendered(K8S_PRODUCTION);
    const deployments = ofKind(objects, 'Deployment');
    expect(deployments.map((d) => d.metadata.name).sort()).toEqual([...PLATFORM_SERVICES].sort());
    for (const deployment of deployments) {
      const name = deployment.metadata.name;
      const hpa = ofKind(objects, 'HorizontalPodAutoscaler').find((h) => (h.spec as { scaleTargetRef: { name: string } }).scaleTargetRef.name === name);
      expect([name, (hpa?.spec as { minReplicas?: number } | undefined)?.minReplicas ?? 0]).toEqual([name, expect.any(Number)]);
      expect((hpa!.spec as { minReplicas: number }).minReplicas).toBeGreaterThanOrEqual(2);
      expect([name, ofKind(objects, 'PodDisruptionBudget').some((pdb) => selects((pdb.spec as { selector: { matchLabels: Record<string, string> } }).selector.matchLabels, deployment.spec.template.metadata.labels))]).toEqual([name, true]);
      expect([name, ofKind(objects, 'NetworkPolicy').some((policy) => selects((policy.spec as { podSelector: { matchLabels?: Record<string, string> } }).podSelector.matchLabels ?? {}, deployment.spec.template.metadata.labels))]).toEqual([name, true]);
    }
    // Migrations run as Jobs before the rollout, one per service with tables.
    expect(ofKind(objects, 'Job').map((job) => job.metadata.name).sort()).toEqual(migrated.map((service) => `${service}-migrate`).sort());
  });

  it('all-in-one runs the one-process image alone: one Deployment of one pod, its Service and Ingress, no Jobs', () => {
    const objects = rendered(K8S_ALL_IN_ONE);
    const deployments = ofKind(objects, 'Deployment');
    expect(deployments.map((d) => [d.metadata.name, d.spec.replicas])).toEqual([['all-in-one', 1]]);
    const container = deployments[0]!.spec.template.spec.containers[0]!;
    expect(container.image).toBe(`api-platform/all-in-one:${ROOT_VERSION}`);
    expect(ofKind(objects, 'Job')).toEqual([]);
    expect(ofKind(objects, 'HorizontalPodAutoscaler')).toEqual([]);
    const ingress = ofKind(objects, 'Ingress');
    expect(JSON.stringify(ingress)).toContain('"name":"all-in-one"');
    // Its environment: what the all-in-one (every service's schema) accepts, on the volume it mounts.
    const configMaps = ofKind(objects, 'ConfigMap');
    const secret = loadYamlDocuments(join(K8S_BASE, 'secret.example.yaml'))[0] as KindOf<'Secret'>;
    const env = containerEnv(container, configMaps, secret);
    expect(unknownNames(env)).toEqual([]);
    const config = loadConfig(env, PLATFORM_CONFIG);
    expect([config.NODE_ENV, config.PORT, config.DATABASE_URL]).toEqual(['production', 3000, undefined]);
    // Every secret the README says to set is wired from the Secret; /metrics on the management port only.
    const fromSecret = (container.env ?? []).flatMap((variable) => (variable.valueFrom?.secretKeyRef ? [variable.name] : []));
    expect(DEPLOYED_SECRETS.filter((key) => !fromSecret.includes(key))).toEqual([]);
    expect(container.ports?.map((p) => [p.name, p.containerPort])).toEqual([['http', 3000], ['metrics', config.MANAGEMENT_PORT]]);
    const services = ofKind(objects, 'Service');
    expect(services.flatMap((svc) => svc.spec.ports.map((p) => resolvePort(container, p.targetPort)))).toEqual([3000]);
    expect(container.volumeMounts?.map((mount) => mount.mountPath)).toContain(config.DATA_DIR);
    expect(exists('apps/all-in-one/src/main.ts')).toBe(true);
  });
});

describe('every probe and metrics scrape of every deployment asks a route its process serves', () => {
  let deps: PlatformDependencies;
  const apps: App[] = [];
  beforeAll(async () => {
    deps = await openPlatformDependencies('embedded');
  });
  afterAll(async () => {
    for (const app of apps) await app.close();
    await deps?.dispose();
  });

  /** The process of `service`, built in this one on the embedded dependencies. */
  const build = async (service: ServiceName | 'all-in-one'): Promise<App> => {
    const app =
      service === 'all-in-one'
        ? await buildPlatform(deps.config, deps)
        : service === 'gateway'
          ? await buildGateway(deps.config, deps.logger)
          : await buildServiceApp(DEFINITIONS[service], deps);
    apps.push(app);
    return app;
  };

  it.each([...PLATFORM_SERVICES, 'all-in-one' as const])('%s', async (service) => {
    const objects = service === 'all-in-one' ? (loadYamlDocuments(join(K8S_ALL_IN_ONE, 'all-in-one.yaml')) as K8sObject[]) : loadBase();
    const deployment = named(objects, 'Deployment', service)!;
    const container = deployment.spec.template.spec.containers[0]!;
    // Prometheus scrapes the pod where its annotations say: the container's management port and /metrics.
    const scrape = deployment.spec.template.metadata.annotations ?? {};
    expect([scrape['prometheus.io/scrape'], Number(scrape['prometheus.io/port']), scrape['prometheus.io/path']]).toEqual(['true', resolvePort(container, 'metrics'), METRICS_PATH]);
    expect(resolvePort(container, 'metrics')).toBe(deps.config.MANAGEMENT_PORT);
    const paths = [...new Set(probePaths(container))];
    expect(paths.length).toBeGreaterThan(1);
    const app = await build(service);
    await app.ready();
    // A registered route, not merely an answer: an unknown path can answer 401 at the edge.
    for (const path of paths) expect([path, app.hasRoute({ method: 'GET', url: path })]).toEqual([path, true]);
    // /metrics is the management listener's alone: the public app has no such route.
    expect(app.hasRoute({ method: 'GET', url: METRICS_PATH })).toBe(false);
  });
});
