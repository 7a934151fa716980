# syntax=docker/dockerfile:1
#
# One image recipe for every service of the monorepo. Build one image per service:
#
#   docker build --build-arg SERVICE=identity --build-arg PORT=3001 -t api-platform/identity .
#
# SERVICE is a folder under services/, PORT its port (DEFAULT_PORTS in libs/platform/src/config.ts).
# The image runs `node dist/main.js` from services/$SERVICE; the same image runs the service's
# migrations with `node dist/migrate.js` (the Kubernetes Job and the compose migrate step).
# The one-process platform (deploy/k8s/overlays/all-in-one) is the workspace apps/all-in-one:
#
#   docker build --build-arg SERVICE=all-in-one --build-arg WORKSPACE=apps/all-in-one \
#     --build-arg PORT=3000 -t api-platform/all-in-one .

# Node 24, the active LTS: Node 20 left upstream support in April 2026. The code also runs on
# Node 20.19+ and 22 (package.json engines); --build-arg NODE_IMAGE=node:22-slim selects 22.
ARG NODE_IMAGE=node:24-slim

# ---- manifests: only the files `npm ci` reads, so the dependency layers below stay cached
# while source files change (BuildKit compares the copied content, not this stage's inputs).
FROM ${NODE_IMAGE} AS manifests
WORKDIR /src
COPY . .
RUN mkdir -p /out \
 && cp package.json package-lock.json /out/ \
 && find libs services apps test -maxdepth 2 -name package.json -exec cp --parents {} /out/ \;

# ---- build: every workspace compiled to dist/ (libs first, turbo orders them).
FROM ${NODE_IMAGE} AS build
ENV PRISMA_HIDE_UPDATE_MESSAGE=1 CHECKPOINT_DISABLE=1 TURBO_TELEMETRY_DISABLED=1
WORKDIR /app
COPY --from=manifests /out/ ./
# Install scripts stay off: @prisma/engines' postinstall downloads a native engine nothing
# here uses, and the root postinstall (prisma generate) needs the sources copied next.
RUN npm ci --ignore-scripts
COPY . .
# prisma-generate.mjs points PRISMA_SCHEMA_ENGINE_BINARY at node itself when it is unset:
# `prisma generate` insists on the schema engine's presence but never runs it.
RUN node scripts/prisma-generate.mjs && npm run build
# The runtime tree: each workspace's dist/ and Prisma migrations, nothing else of the sources.
RUN mkdir -p /out \
 && for dir in libs/* services/* apps/*; do \
      if [ -d "$dir/dist" ]; then mkdir -p "/out/$dir" && cp -r "$dir/dist" "/out/$dir/"; fi; \
      if [ -d "$dir/prisma/migrations" ]; then mkdir -p "/out/$dir/prisma" && cp -r "$dir/prisma/migrations" "/out/$dir/prisma/"; fi; \
    done

# ---- deps: production dependencies of one service only (-w), with argon2's native addon
# compiled here, where the toolchain is, so the runtime stage carries no compiler.
FROM ${NODE_IMAGE} AS deps
ARG SERVICE
ARG WORKSPACE=services/${SERVICE}
RUN test -n "$SERVICE" \
 || { echo 'build with --build-arg SERVICE=<folder under services/> --build-arg PORT=<its port>' >&2; exit 1; }
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY --from=manifests /out/ ./
# --omit=optional drops the Prisma CLI and TypeScript, which the lock marks devOptional
# (optional peers of @prisma/client): nothing at run time needs them. Install scripts stay
# off (the root postinstall runs prisma generate, a build step); argon2's runs alone after:
# node-gyp-build keeps its prebuilt binary when it loads and compiles it otherwise, against
# the image's own Node headers (nodedir) rather than a download.
RUN npm ci --omit=dev --omit=optional --ignore-scripts -w "${WORKSPACE}" \
 && if [ -d node_modules/argon2 ]; then npm rebuild argon2 --nodedir=/usr/local; fi \
 && npm cache clean --force

# ---- runtime: the service's dependencies, every workspace's compiled code, a non-root user.
FROM ${NODE_IMAGE} AS runtime
ARG SERVICE
ARG WORKSPACE=services/${SERVICE}
ARG PORT
RUN test -n "$SERVICE" && test -n "$PORT" \
 || { echo 'build with --build-arg SERVICE=<folder under services/> --build-arg PORT=<its port>' >&2; exit 1; }
# The process settings of `npm start` (scripts/start.mjs says why; README's Benchmark how they
# were measured), so every pod the manifests run has them too: glibc's mmap threshold fixed at
# 32 KiB (by default it rises to the largest block freed, after which argon2's blocks stay
# resident once freed), huge pages for what glibc maps (each argon2 block is faulted in 2 MiB
# at a time, not 4 KiB), and V8's young generation at 8 MB rather than 16.
ENV NODE_ENV=production PORT=${PORT} MALLOC_MMAP_THRESHOLD_=32768 GLIBC_TUNABLES=glibc.malloc.hugetlb=1 NODE_OPTIONS=--max-semi-space-size=8
WORKDIR /app
COPY --from=deps /app/ ./
COPY --from=build /out/ ./
RUN test -f "${WORKSPACE}/dist/main.js" \
 || { echo "${WORKSPACE}/dist/main.js missing: is SERVICE a folder under services/ (or WORKSPACE apps/all-in-one)?" >&2; exit 1; }
# The node image's `node` user, by number so Kubernetes' runAsNonRoot can verify it.
USER 1000:1000
WORKDIR /app/${WORKSPACE}
EXPOSE ${PORT}
# Compose waits on this; Kubernetes ignores it and uses the Deployment's probes instead.
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + process.env.PORT + '/health/readiness').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
CMD ["node", "dist/main.js"]
