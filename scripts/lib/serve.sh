# Sourced by the Node test runners (webui/e2e/run.sh, e2e/openai/run.sh):
# builds baton, starts `baton serve` on a free loopback port with a
# temporary SQLite database and the example networks, and stops it on exit.
#
#   serve_start NAME LOG   builds, creates an API key named NAME (in $KEY),
#                          starts serve with its log in LOG and waits for its
#                          address (in $URL)
#
# The caller defines fail MESSAGE (prints and exits non-zero) and ROOT, the
# repository's root.

TMP=$(mktemp -d)
PID=""
serve_cleanup() {
  if [ -n "$PID" ] && kill -0 "$PID" 2>/dev/null; then
    kill -TERM "$PID" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$PID" 2>/dev/null || break; sleep 0.2; done
    kill -KILL "$PID" 2>/dev/null || true
  fi
  rm -rf "$TMP"
}
trap serve_cleanup EXIT

serve_start() {
  local name=$1 log=$2
  (cd "$ROOT" && go build -o "$TMP/baton" ./cmd/baton) || fail "go build"
  local db="sqlite:$TMP/baton.db"
  KEY=$("$TMP/baton" keys create --owner e2e --name "$name" --database "$db" 2>/dev/null) || fail "baton keys create"
  "$TMP/baton" serve --addr 127.0.0.1:0 --database "$db" \
    --network "$ROOT/examples/support/network.yaml" \
    --network "$ROOT/examples/research/network.yaml" >"$log" 2>&1 &
  PID=$!
  URL=""
  for _ in $(seq 1 150); do
    URL=$(grep -o 'listening on http://[0-9.:]*' "$log" | head -n1 | sed 's/^listening on //' || true)
    [ -n "$URL" ] && break
    kill -0 "$PID" 2>/dev/null || { cat "$log"; fail "baton serve exited"; }
    sleep 0.2
  done
  [ -n "$URL" ] || { cat "$log"; fail "baton serve did not start"; }
  echo "baton serve at $URL"
}
