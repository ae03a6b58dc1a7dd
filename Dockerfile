# svc as a multi-user HTTP service: PowerShell 7 plus the svc bundle, run by a non-root user,
# listening on all interfaces of the container.
#
#   docker build -t svc .
#   docker run --rm -p 127.0.0.1:8080:8080 svc           # the embedded default configuration
#   docker run --rm -p 8080:8080 -v "$PWD/appsettings.json:/etc/svc/appsettings.json:ro" \
#     -e SVC_CONFIG=/etc/svc/appsettings.json svc
ARG DENO_VERSION=2.9.6
# PowerShell is pinned by its own version, the one bin/pwsh installs and the tests run on, and comes
# from NuGet as bin/pwsh gets it. (mcr.microsoft.com/powershell:7.4-ubuntu-22.04, the base before,
# stopped being updated when PowerShell's images moved to the .NET SDK's in 2025: it stays on a 7.4
# release older than 7.4.20, without the fixes of the advisories of August and September 2026.) It runs on
# the .NET 10 runtime image, whose tag follows .NET's patch releases at every build; pwsh is started
# through `dotnet`, so the image builds for amd64 and arm64 alike.
ARG POWERSHELL_VERSION=7.6.10
ARG DOTNET_SDK_IMAGE=mcr.microsoft.com/dotnet/sdk:10.0-noble
ARG DOTNET_RUNTIME_IMAGE=mcr.microsoft.com/dotnet/runtime:10.0-noble

FROM denoland/deno:${DENO_VERSION} AS bundle
WORKDIR /src
COPY deno.json deno.lock main.ts appsettings.json ./
COPY lib ./lib
# One JavaScript file with the host script and the default configuration embedded.
RUN deno bundle --platform deno -o /out/svc.js main.ts

FROM denoland/deno:bin-${DENO_VERSION} AS deno

FROM ${DOTNET_SDK_IMAGE} AS powershell
ARG POWERSHELL_VERSION
RUN dotnet tool install PowerShell --version "${POWERSHELL_VERSION}" --tool-path /tmp/tool \
 && cp -r "/tmp/tool/.store/powershell/${POWERSHELL_VERSION}/powershell/${POWERSHELL_VERSION}/tools/net10.0/any/unix" /opt/powershell

FROM ${DOTNET_RUNTIME_IMAGE}
COPY --from=deno /deno /usr/local/bin/deno
COPY --from=powershell /opt/powershell /opt/powershell
COPY --from=bundle /out/svc.js /opt/svc/svc.js
# PowerShell as one process on any architecture (the package's own launcher is built for x64).
RUN printf '#!/bin/sh\nexec dotnet /opt/powershell/pwsh.dll "$@"\n' > /usr/local/bin/pwsh \
 && chmod 755 /usr/local/bin/pwsh
# The caches live in the image, beside svc and owned by its user (0700: code is loaded from there),
# where a volume mounted on the home directory cannot hide them.
RUN useradd --create-home --uid 10001 --shell /usr/sbin/nologin svc \
 && install -d -o 10001 -g 10001 -m 700 /opt/svc/cache
USER 10001:10001
# The embedded default configuration has no authentication, and svc refuses to serve callers
# without credentials on a non-loopback address unless told so: SVC_ALLOW_ANONYMOUS=true says so.
# Anyone who reaches the published port can then call every tool as this user, so publish it to
# 127.0.0.1 only, or mount a configuration with authentication on and set SVC_ALLOW_ANONYMOUS=false.
ENV SVC_TRANSPORT=http \
    SVC_ALLOW_ANONYMOUS=true \
    SVC_HOST=0.0.0.0 \
    SVC_PORT=8080 \
    SVC_PWSH=/usr/local/bin/pwsh \
    SVC_LOG_FORMAT=json \
    SVC_CACHE_DIR=/opt/svc/cache \
    SVC_HOST_CACHE_DIR=/opt/svc/cache \
    DENO_DIR=/home/svc/.cache/deno \
    POWERSHELL_TELEMETRY_OPTOUT=1
# Built ahead, as this user and into the caches it reads: doctor compiles the worker host and
# discovers the embedded default configuration's catalog, so a container's first answer needs
# neither (about 1.3 s of a first start on two cores), also on a read-only root file system. A
# mounted configuration of other commands is discovered at start (into SVC_CACHE_DIR, which
# deploy/kubernetes points at a volume); the host stays compiled.
RUN ["deno", "run", "--no-config", "--allow-read", "--allow-write", "--allow-env", "--allow-run", "--allow-sys", "--allow-ffi", "/opt/svc/svc.js", "doctor"]
EXPOSE 8080
# /health answers 503 only when the pool cannot recover by itself (its last worker start failed and
# none is starting), not while it replenishes; readiness (/health/ready) is for the orchestrator,
# not for restarting the container.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["deno", "eval", "const r = await fetch('http://127.0.0.1:8080/health'); Deno.exit(r.ok ? 0 : 1)"]
# Narrow permissions instead of -A: files, environment, network, pwsh, system information, and
# FFI for the one libc call that keeps workers out of svc's /proc entries.
ENTRYPOINT ["deno", "run", "--no-config", "--allow-read", "--allow-write", "--allow-env", "--allow-net", "--allow-run", "--allow-sys", "--allow-ffi", "/opt/svc/svc.js"]
CMD ["serve"]
