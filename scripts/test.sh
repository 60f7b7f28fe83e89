#!/usr/bin/env bash
# Runs every test of baton on a fresh machine: installs and starts what the
# tests need (PostgreSQL, staticcheck, Chromium + playwright-core for the web
# UI, the npm OpenAI clients), then runs vet, staticcheck, the Go tests (with
# -race on the packages with concurrency), the OpenAI clients against a real
# baton serve (e2e/openai) and the browser tests.
#
# Environment:
#   BATON_TEST_DATABASE_URL  PostgreSQL for the store tests
#                            (default postgres://postgres@127.0.0.1:5432/test?sslmode=disable)
#   SKIP_BROWSER=1           skip the browser tests (never set in CI)
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '\n== %s\n' "$*"; }

export BATON_TEST_DATABASE_URL=${BATON_TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test?sslmode=disable}
export PATH="$(go env GOPATH)/bin:$PATH"

log "PostgreSQL"
if ! pg_isready -h 127.0.0.1 -p 5432 -q 2>/dev/null; then
  if command -v pg_ctlcluster >/dev/null; then
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n1)" main start || true
  fi
  for _ in $(seq 1 30); do pg_isready -h 127.0.0.1 -p 5432 -q && break; sleep 1; done
fi
if pg_isready -h 127.0.0.1 -p 5432 -q 2>/dev/null; then
  echo "PostgreSQL is up"
elif [ "${CI:-}" = "true" ]; then
  echo "PostgreSQL is not reachable at 127.0.0.1:5432 and CI=true: the store tests must run" >&2
  exit 1
else
  echo "PostgreSQL is not reachable: PostgreSQL tests will skip" >&2
  unset BATON_TEST_DATABASE_URL
fi

log "tools"
command -v staticcheck >/dev/null || go install honnef.co/go/tools/cmd/staticcheck@v0.6.1
# tmux runs the terminal test of `baton chat` (it fails without tmux when CI=true).
if ! command -v tmux >/dev/null && command -v apt-get >/dev/null; then
  sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo -n"
  { $sudo apt-get update -qq && $sudo apt-get install -y -qq tmux; } || true
fi
command -v tmux >/dev/null || echo "tmux is missing: the terminal test of baton chat skips (fails with CI=true)" >&2
# HAProxy is the load balancer in front of the replicas of e2e TestKillReplicas
# (the configuration of docs/deploy.md; the test fails without it when CI=true).
if ! command -v haproxy >/dev/null && [ ! -x /usr/sbin/haproxy ] && command -v apt-get >/dev/null; then
  sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo -n"
  { $sudo apt-get update -qq && $sudo apt-get install -y -qq haproxy; } || true
fi

log "go vet + staticcheck"
test -z "$(gofmt -l $(git ls-files '*.go'))" || { gofmt -l $(git ls-files '*.go'); echo "gofmt needed" >&2; exit 1; }
go vet ./...
staticcheck ./...

log "go test"
# -race where goroutines meet; the rest without, to keep CI well under 20 minutes.
# One pattern for both lists, so that each package runs once.
race_re='/(runner|store|continuation|server|protocols|service|draft|summary|threadhandoff|memory|telemetry|model|threads|cmd/baton|internal/sse|internal/hangup|inspect)(/|$)'
race_pkgs=$(go list ./... | grep -E "$race_re" || true)
other_pkgs=$(go list ./... | grep -v -E "$race_re" || true)
[ -z "$race_pkgs" ] || go test -race -count=1 -timeout 15m $race_pkgs
[ -z "$other_pkgs" ] || go test -count=1 -timeout 15m $other_pkgs

log "examples"
for f in examples/*/network.yaml; do
  [ -f "$f" ] || continue
  go run ./cmd/baton validate "$f"
done
# Each example network's eval set, offline: the scripted model, the tools
# answered from the recordings (exit 1 on a score under its threshold).
for f in examples/*/eval.yaml; do
  [ -f "$f" ] || continue
  go run ./cmd/baton eval "$f"
done

# The official OpenAI Node client and the Vercel AI SDK against a real baton serve.
if [ -x e2e/openai/run.sh ]; then
  log "OpenAI clients (npm openai, @ai-sdk/openai-compatible, @ai-sdk/openai)"
  e2e/openai/run.sh
fi

if [ -x webui/e2e/run.sh ] && [ "${SKIP_BROWSER:-}" != "1" ]; then
  log "browser tests"
  webui/e2e/run.sh
fi
log "all tests passed"
