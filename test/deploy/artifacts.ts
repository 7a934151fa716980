// Reads the deployment artifacts (Dockerfile, docker-compose.yml, deploy/k8s) and the facts
// of the repository they must agree with, so deploy.test.ts can cross-check them without a
// Docker engine or a cluster.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse, parseAllDocuments } from 'yaml';
import { DOMAIN_SERVICES, SERVICE_NAMES, SERVICES, type ServiceName } from '@app/contracts';
import { credentialsService } from '@app/credentials';
import { crudService } from '@app/crud-service';
import { gatewayConfig } from '@app/gateway';
import { healthService } from '@app/health';
import { identityService } from '@app/identity';
import { configKeysOf as variablesOf, type ConfigSchema, type Service } from '@app/platform';
import { ssoService } from '@app/sso';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const K8S_BASE = join(ROOT, 'deploy/k8s/base');
export const K8S_PRODUCTION = join(ROOT, 'deploy/k8s/overlays/production');

export const read = (path: string): string => readFileSync(join(ROOT, path), 'utf8');
export const exists = (path: string): boolean => existsSync(join(ROOT, path));

/** Every service of the registry (@app/contracts), the gateway included. */
export const PLATFORM_SERVICES: ServiceName[] = [...SERVICE_NAMES];

/** The port a service listens on when it runs alone: the registry's. */
export const portOf = (service: ServiceName): number => SERVICES[service].port;

/** Each service as it declares itself (defineService); the gateway is the edge, not a service of the kit. */
export const DEFINITIONS: Record<Exclude<ServiceName, 'gateway'>, Service> = {
  identity: identityService,
  credentials: credentialsService,
  sso: ssoService,
  crud: crudService,
  health: healthService,
};

/** A service's own config schema (none, or one), which its process parses beside the shared one. */
export function ownConfigOf(service: ServiceName): ConfigSchema[] {
  const own = service === 'gateway' ? gatewayConfig : DEFINITIONS[service].config;
  return own ? [own] : [];
}

/** The variables of a service's own schema. */
export const ownVariablesOf = (service: ServiceName): string[] => ownConfigOf(service).flatMap((schema) => Object.keys(schema.shape));

/** Every variable a service's process reads: the shared ones and its own. */
export function configKeysOf(service: ServiceName): Set<string> {
  return new Set<string>(variablesOf(ownConfigOf(service)));
}

/** Whether a name is a service of the registry. */
export const isServiceName = (name: string): name is ServiceName => (SERVICE_NAMES as string[]).includes(name);

/** The services of this checkout: folders under services/ with a standalone entry. */
export function repositoryServices(): string[] {
  return readdirSync(join(ROOT, 'services')).filter((name) => exists(`services/${name}/src/main.ts`));
}

/** Whether a service has tables, i.e. Prisma migrations the migration step must apply. */
export const hasMigrations = (service: string): boolean => exists(`services/${service}/prisma/migrations`);

/** `dist/<entry>.js` of a service exists after a build when its `src/<entry>.ts` does. */
export function distEntryExists(service: string, distPath: string): boolean {
  const source = distPath.replace(/^dist\//, 'src/').replace(/\.js$/, '.ts');
  return exists(`services/${service}/${source}`);
}

/**
 * The services a service calls over HTTP in split mode: every peer whose URL variable its
 * sources read (`variablesReadBy`), and sso for all: every process's token verifier fetches
 * sso's JWKS, where sso itself verifies with its own keys. The gateway is open to all anyway.
 */
export function callsOf(service: ServiceName): ServiceName[] {
  const reads = new Set([...variablesReadBy(service), SERVICES.sso.urlVariable]);
  return PLATFORM_SERVICES.filter((peer) => peer !== service && peer !== 'gateway' && reads.has(SERVICES[peer].urlVariable));
}

/**
 * The variables a service's sources read: every `config.NAME`, and the URL variable of each
 * peer it reaches through the kit: its typed clients (`clients.identity`, ...), the health
 * report's `clients.readiness` (every domain service), the gateway's `routingTable` (every
 * service with public prefixes). A source that hides these behind another name is not seen.
 */
export function variablesReadBy(service: ServiceName): string[] {
  const sources = sourceFiles(join(ROOT, 'services', service, 'src')).map((path) => readFileSync(path, 'utf8')).join('\n');
  const named = [...sources.matchAll(/\bconfig\.([A-Z][A-Z0-9_]*)\b/g)].map((match) => match[1]!);
  const peers = PLATFORM_SERVICES.filter((peer) => new RegExp(`\\bclients\\.${peer}\\b`).test(sources));
  if (/\bclients\.readiness\(/.test(sources)) peers.push(...DOMAIN_SERVICES);
  if (/\broutingTable\(/.test(sources)) peers.push(...PLATFORM_SERVICES.filter((peer) => SERVICES[peer].prefixes.length > 0));
  return [...new Set([...named, ...peers.map((peer) => SERVICES[peer].urlVariable)])].sort();
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'generated' ? [] : sourceFiles(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') ? [path] : [];
  });
}

// ---- Dockerfile

export interface Instruction {
  keyword: string;
  args: string;
  /** The stage it belongs to (its `AS` name). */
  stage: string;
}

/** The Dockerfile's instructions, continuation lines joined and comments dropped. */
export function dockerfileInstructions(text: string): Instruction[] {
  const lines = text.split('\n').filter((line) => !line.trim().startsWith('#'));
  const joined = lines.join('\n').replace(/\\\n/g, ' ');
  let stage = '(global)';
  return joined
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean)
    .map((line) => {
      const [keyword = '', ...rest] = line.split(/\s+/);
      const args = rest.join(' ');
      if (keyword.toUpperCase() === 'FROM') stage = /\bAS\s+(\S+)/i.exec(args)?.[1] ?? args;
      return { keyword: keyword.toUpperCase(), args, stage };
    });
}

// ---- docker-compose.yml

export interface ComposeService {
  image?: string;
  build?: { context: string; args?: Record<string, string> };
  command?: string[];
  environment?: Record<string, string>;
  ports?: string[];
  depends_on?: Record<string, { condition: string }>;
  stop_grace_period?: string;
  read_only?: boolean;
  healthcheck?: { test: string[] };
}

export function loadCompose(): { services: Record<string, ComposeService> } {
  return parse(read('docker-compose.yml'), { merge: true }) as { services: Record<string, ComposeService> };
}

/** Compose's `${NAME:-default}` interpolation, with the environment empty: the defaults. */
export function interpolateDefaults(env: Record<string, string>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(env).map(([name, value]) => [name, String(value).replace(/\$\{[A-Z0-9_]+:-([^}]*)\}/g, '$1')]),
  );
}

// ---- Kubernetes

export interface Metadata {
  name: string;
  labels?: Record<string, string>;
}
export interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { secretKeyRef?: { name: string; key: string; optional?: boolean } };
}
export interface Probe {
  httpGet: { path: string; port: string | number };
}
export interface Container {
  name: string;
  image: string;
  command?: string[];
  args?: string[];
  ports?: { name?: string; containerPort: number }[];
  envFrom?: { configMapRef?: { name: string }; secretRef?: { name: string } }[];
  env?: EnvVar[];
  startupProbe?: Probe;
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  lifecycle?: { preStop?: { exec?: { command: string[] } } };
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  volumeMounts?: { name: string; mountPath: string }[];
  securityContext?: { readOnlyRootFilesystem?: boolean; allowPrivilegeEscalation?: boolean; runAsNonRoot?: boolean };
}
export interface PodTemplate {
  metadata: { labels: Record<string, string>; annotations?: Record<string, string> };
  spec: {
    containers: Container[];
    restartPolicy?: string;
    terminationGracePeriodSeconds?: number;
    securityContext?: { runAsNonRoot?: boolean; runAsUser?: number };
  };
}
export interface LabelSelector {
  matchLabels?: Record<string, string>;
}
export interface NetworkPolicyPeer {
  podSelector?: LabelSelector;
  namespaceSelector?: LabelSelector;
  ipBlock?: unknown;
}
export type K8sObject =
  | { kind: 'Deployment'; metadata: Metadata; spec: { replicas?: number; selector: LabelSelector; template: PodTemplate } }
  | { kind: 'Job'; metadata: Metadata; spec: { template: PodTemplate } }
  | { kind: 'Service'; metadata: Metadata; spec: { type?: string; selector: Record<string, string>; ports: { port: number; targetPort: string | number }[] } }
  | { kind: 'HorizontalPodAutoscaler'; metadata: Metadata; spec: { scaleTargetRef: { kind: string; name: string }; minReplicas: number; maxReplicas: number; metrics: { type: string; resource?: { name: string } }[] } }
  | { kind: 'PodDisruptionBudget'; metadata: Metadata; spec: { selector: LabelSelector; minAvailable?: number | string; maxUnavailable?: number | string } }
  | { kind: 'NetworkPolicy'; metadata: Metadata; spec: { podSelector: LabelSelector; policyTypes: string[]; ingress?: { from?: NetworkPolicyPeer[]; ports?: { port: string | number }[] }[] } }
  | { kind: 'ConfigMap'; metadata: Metadata; data: Record<string, string> }
  | { kind: 'Secret'; metadata: Metadata; stringData: Record<string, string> }
  | { kind: 'Ingress'; metadata: Metadata; spec: { rules: { http: { paths: { backend: { service: { name: string; port: { name?: string; number?: number } } } }[] } }[] } };

export type KindOf<K extends K8sObject['kind']> = Extract<K8sObject, { kind: K }>;

export interface Kustomization {
  resources?: string[];
  patches?: { path: string; target?: unknown }[];
  images?: { name: string; newTag?: string }[];
  namespace?: string;
}

export const yamlFilesIn = (dir: string): string[] => readdirSync(dir).filter((name) => /\.ya?ml$/.test(name));

export function loadYamlDocuments(path: string): unknown[] {
  return parseAllDocuments(readFileSync(path, 'utf8')).map((document) => {
    if (document.errors.length > 0) throw new Error(`${path}: ${document.errors.map((e) => e.message).join('; ')}`);
    return document.toJS() as unknown;
  });
}

export function loadKustomization(dir: string): Kustomization {
  return parse(readFileSync(join(dir, 'kustomization.yaml'), 'utf8')) as Kustomization;
}

/** Every object the base's kustomization lists. */
export function loadBase(): K8sObject[] {
  return (loadKustomization(K8S_BASE).resources ?? []).flatMap((file) => loadYamlDocuments(join(K8S_BASE, file)) as K8sObject[]);
}

export function ofKind<K extends K8sObject['kind']>(objects: K8sObject[], kind: K): KindOf<K>[] {
  return objects.filter((object): object is KindOf<K> => object.kind === kind);
}

export function named<K extends K8sObject['kind']>(objects: K8sObject[], kind: K, name: string): KindOf<K> | undefined {
  return ofKind(objects, kind).find((object) => object.metadata.name === name);
}

/** Whether a selector picks pods with these labels (matchLabels only, as the manifests use). */
export function selects(selector: Record<string, string> | undefined, labels: Record<string, string>): boolean {
  if (!selector || Object.keys(selector).length === 0) return false;
  return Object.entries(selector).every(([key, value]) => labels[key] === value);
}

/**
 * The environment a container sees: its ConfigMaps (envFrom), then its own `env`, with
 * Secret references resolved from the example Secret.
 */
export function containerEnv(container: Container, configMaps: KindOf<'ConfigMap'>[], secret: KindOf<'Secret'>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const source of container.envFrom ?? []) {
    if (source.configMapRef) {
      const configMap = configMaps.find((map) => map.metadata.name === source.configMapRef!.name);
      if (!configMap) throw new Error(`${container.name}: no ConfigMap ${source.configMapRef.name}`);
      Object.assign(env, configMap.data);
    }
    if (source.secretRef) Object.assign(env, secret.stringData);
  }
  for (const variable of container.env ?? []) {
    const ref = variable.valueFrom?.secretKeyRef;
    if (ref) {
      if (ref.name !== secret.metadata.name) throw new Error(`${container.name}: no Secret ${ref.name}`);
      const value = secret.stringData[ref.key];
      if (value === undefined && !ref.optional) throw new Error(`${container.name}: Secret key ${ref.key} missing`);
      if (value !== undefined) env[variable.name] = value;
    } else {
      env[variable.name] = variable.value ?? '';
    }
  }
  return env;
}

/** A container port by name or number. */
export function resolvePort(container: Container, port: string | number): number | undefined {
  if (typeof port === 'number') return port;
  return container.ports?.find((candidate) => candidate.name === port)?.containerPort;
}

/** Compose's and Kubernetes' durations ("20s", "1m30s") in seconds. */
export function seconds(duration: string): number {
  const match = /^(?:(\d+)m)?(?:(\d+)s)?$/.exec(duration);
  if (!match || (!match[1] && !match[2])) throw new Error(`not a duration: ${duration}`);
  return Number(match[1] ?? 0) * 60 + Number(match[2] ?? 0);
}
