#!/usr/bin/env bash
# `make bench-kubewarden`: this policy in Kubewarden's policy-server, next to the trivial policy,
# the trivial policy with the injected pod's host calls (the ceiling), the bound (those host calls
# and ours' answer, no work) and the floor, against a loopback fake API server; then `kwctl bench`
# on the same modules. Writes RESULTS.md next to this file. See README.md there.
#
# KWCTL, POLICY_SERVER  paths (or command names) of the two binaries; without them: one line, exit 0
# ROUNDS (3), DURATION (8 s per run), PAUSE (2 s before each run)
# OLD_POLICY            another build of policy.wasm, measured and compared in the same rounds
# LIST_DELAY            seconds: restart with a slow API server and time the first admissions
# KWCTL_BENCH           1 (0 skips kwctl bench)
# AUDIT_ONLY            1: only the background audit check (`make audit-kubewarden`), no wrk needed
#
# Every run also sends the audit scanner's requests (tests/fixtures/audit/) to policy-server's
# /audit endpoint under deploy/'s policies and reports what the scanner would record.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
HERE=$ROOT/benches/kubewarden
WORK=$ROOT/target/bench-kubewarden
REQUESTS=$HERE/requests
FIXTURE=$ROOT/tests/fixtures/linkerd-config/edge-26.8.3/install_default.yaml
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-8}
PAUSE=${PAUSE:-2}
OLD_POLICY=${OLD_POLICY:-}
LIST_DELAY=${LIST_DELAY:-}
KWCTL_BENCH=${KWCTL_BENCH:-1}
AUDIT_ONLY=${AUDIT_ONLY:-0}
AUDIT_FIXTURES=$ROOT/tests/fixtures/audit
AUDIT_POLICIES=(audit-policy.yaml verify-policy.yaml cluster-admission-policy.yaml)
# tiny-bench runs 100 samples of 1..100 iterations (5,050 validate calls) after one warm-up call
# when both times are 0, so a replay session of 5,100 admissions never runs out.
KWCTL_ADMISSIONS=5100
API_PID='' PS_PID=''

# --- prerequisites -------------------------------------------------------------------------

executable() { # a path or a command name -> its path, or nothing
  local p=${1:-}
  [[ -z $p || $p == */* ]] || p=$(command -v "$p" || true)
  if [[ -n $p && -x $p ]]; then echo "$p"; fi
}

prerequisites() {
  KWCTL=$(executable "${KWCTL:-}")
  POLICY_SERVER=$(executable "${POLICY_SERVER:-}")
  local missing=()
  [[ -n $KWCTL ]] || missing+=("KWCTL=<path of kwctl>")
  [[ -n $POLICY_SERVER ]] || missing+=("POLICY_SERVER=<path of policy-server>")
  ((AUDIT_ONLY)) || command -v wrk >/dev/null || missing+=("wrk (apt-get install -y wrk)")
  if ((${#missing[@]})); then
    local target=bench-kubewarden
    ((AUDIT_ONLY == 0)) || target=audit-kubewarden
    echo "$target: skipped, it needs ${missing[*]} (benches/kubewarden/README.md)"
    exit 0
  fi
}

# --- modules, settings, policies -----------------------------------------------------------

# name, raw module, metadata: annotated into $WORK/<name>.wasm (policy-server loads annotated
# modules). The raw module's sha256 is taken now: a build may replace it while the rounds run.
annotate() {
  "$KWCTL" annotate -m "$3" -o "$WORK/$1.wasm" "$2" >/dev/null
  local raw annotated
  raw=$(sha256sum <"$2" | cut -d' ' -f1)
  annotated=$(sha256sum <"$WORK/$1.wasm" | cut -d' ' -f1)
  echo "$1 $2 $(stat -c %s "$2") $raw $annotated" >>"$WORK/modules.txt"
}

prepare_modules() {
  annotate ours "$ROOT/policy.wasm" "$ROOT/policy.yaml"
  [[ -z $OLD_POLICY ]] || annotate old "$OLD_POLICY" "$ROOT/policy.yaml"
  annotate trivial "$ROOT/target/wasm32-wasip1/release/trivial_policy.wasm" \
    "$ROOT/benches/trivial-policy/metadata.yml"
  annotate floor "$ROOT/target/wasm32-wasip1/release/floor_policy.wasm" "$HERE/floor-metadata.yml"
  annotate bound "$ROOT/target/wasm32-wasip1/release/bound_policy.wasm" \
    "$ROOT/benches/trivial-policy/metadata.yml"
}

# The bound's settings: ours' answer to the typical pod (kwctl run, against a fake API of its
# own, so that the counts below are policy-server's alone) as the answer it gives.
bound_settings() {
  start_fake_api 0
  KUBECONFIG=$WORK/kubeconfig "$KWCTL" run --allow-context-aware --request-path "$REQUESTS/typical.json" \
    --settings-path "$WORK/settings/empty.yaml" "$WORK/ours.wasm" >"$WORK/bound-answer.json" \
    2>"$WORK/bound-answer.log" || fail "kwctl run of ours for the bound failed" "$WORK/bound-answer.log"
  stop "$API_PID"
  API_PID=''
  python3 "$HERE/harness.py" bound-settings "$WORK/bound-answer.json" "$REQUESTS/typical.json" \
    "$WORK/settings/bound.yaml"
}

# POLICIES: "id module settings-file"; MEASURED: the ids of the rounds; SKIPPED_BY and
# SERVICE_BY: the ids timed on the other two requests (the trivial policy decodes a Pod, so it
# answers a Service with an error: the Service is compared with the floor only).
prepare_policies() {
  local s name who
  mkdir -p "$WORK/settings"
  echo '{}' >"$WORK/settings/empty.yaml"
  echo 'lookup: true' >"$WORK/settings/get.yaml"
  printf 'lookup: true\nlistConfigMaps: linkerd\n' >"$WORK/settings/ceiling.yaml"
  bound_settings
  POLICIES=() MEASURED=() SKIPPED_BY=() SERVICE_BY=()
  for who in ours ${OLD_POLICY:+old}; do
    POLICIES+=("$who $who $WORK/settings/empty.yaml")
    MEASURED+=("$who") SKIPPED_BY+=("$who") SERVICE_BY+=("$who")
    for s in "$ROOT"/deploy/settings/*.yaml; do
      name=$(basename "$s" .yaml)
      POLICIES+=("$who-$name $who $s")
      # OLD_POLICY is measured with defaults.yaml only; every other setting is compared by answers
      [[ $who == ours || $name == defaults ]] && MEASURED+=("$who-$name")
    done
  done
  POLICIES+=("trivial trivial $WORK/settings/empty.yaml" "trivial-get trivial $WORK/settings/get.yaml"
    "ceiling trivial $WORK/settings/ceiling.yaml" "bound bound $WORK/settings/bound.yaml"
    "floor floor $WORK/settings/empty.yaml")
  MEASURED+=(trivial trivial-get ceiling bound floor)
  echo "${MEASURED[@]}" >"$WORK/measured.txt"
  SKIPPED_BY+=(trivial-get floor) SERVICE_BY+=(floor)
  local entries=() id module settings
  for p in "${POLICIES[@]}"; do
    read -r id module settings <<<"$p"
    entries+=("$id=$WORK/$module.wasm=$settings")
  done
  python3 "$HERE/harness.py" policies "$WORK/policies.yml" "${entries[@]}"
  audit_policies
}

# deploy/'s three policies as the controller configures them, on ours (ids clusterwide-<name>).
audit_policies() {
  local manifests=()
  for m in "${AUDIT_POLICIES[@]}"; do manifests+=("$ROOT/deploy/$m"); done
  python3 "$HERE/harness.py" manifest-policies "$WORK/policies.yml" "$WORK/ours.wasm" "${manifests[@]}"
}

# --- the fake API server and policy-server -------------------------------------------------

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

wait_for() { # seconds, pid, command...: until the command succeeds, while pid lives
  local deadline=$((SECONDS + $1)) pid=$2
  shift 2
  until "$@" >/dev/null 2>&1; do
    kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)) || return 1
    sleep 0.2
  done
}

start_fake_api() { # LIST delay (s)
  rm -f "$WORK/api.port"
  python3 "$HERE/fake_apiserver.py" --port-file "$WORK/api.port" --linkerd-config "$FIXTURE" \
    --kube-root-ca "$HERE/kube-root-ca.crt" --objects "$REQUESTS/cluster.json" \
    --objects "$AUDIT_FIXTURES/cluster.json" --list-delay "$1" \
    2>>"$WORK/fake-api.log" &
  API_PID=$!
  wait_for 20 "$API_PID" test -s "$WORK/api.port" ||
    fail "the fake API server did not start" "$WORK/fake-api.log"
  cat >"$WORK/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: fake
  cluster:
    server: http://127.0.0.1:$(<"$WORK/api.port")
users:
- name: fake
  user: {}
contexts:
- name: fake
  context:
    cluster: fake
    user: fake
current-context: fake
EOF
}

start_policy_server() {
  PS_PORT=$(free_port)
  local ready_port
  ready_port=$(free_port)
  PS_CMD=(env KUBECONFIG="$WORK/kubeconfig" "$POLICY_SERVER" --addr 127.0.0.1 --port "$PS_PORT"
    --readiness-probe-port "$ready_port" --workers 2 --policies "$WORK/policies.yml"
    --policies-download-dir "$WORK/downloads" --sigstore-cache-dir "$WORK/sigstore"
    --log-level warn --log-no-color)
  mkdir -p "$WORK/downloads"
  "${PS_CMD[@]}" >>"$WORK/policy-server.log" 2>&1 &
  PS_PID=$!
  wait_for 300 "$PS_PID" curl -fsS "http://127.0.0.1:$ready_port/readiness" ||
    fail "policy-server is not ready" "$WORK/policy-server.log"
}

stop() { # pid
  [[ -n $1 ]] || return 0
  kill "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}

cleanup() {
  stop "$PS_PID"
  stop "$API_PID"
}

fail() { # message, log
  echo "bench-kubewarden: $1; the end of $2:" >&2
  tail -n 20 "$2" >&2
  exit 1
}

# --- measuring -----------------------------------------------------------------------------

post() { # policy, request, output file -> the seconds it took
  curl -sS -o "$3" -w '%{time_total}' -H 'Content-Type: application/json' \
    --data-binary @"$REQUESTS/$2.json" "http://127.0.0.1:$PS_PORT/validate/$1"
}

# Every policy's answer to every request, before measuring (and warming every reflector).
check_answers() {
  local p id scenario
  mkdir -p "$WORK/answers"
  for p in "${POLICIES[@]}"; do
    id=${p%% *}
    for scenario in typical skipped service; do
      [[ $scenario != service || $id != trivial* && $id != ceiling ]] || continue
      # the bound answers with the typical pod's mutation whatever it is asked
      [[ $scenario == typical || $id != bound ]] || continue
      post "$id" "$scenario" "$WORK/answers/$id.$scenario.json" >/dev/null
    done
  done
  python3 "$HERE/harness.py" answers "$WORK" || fail "wrong answers (above)" "$WORK/policy-server.log"
}

cpu_ticks() { # steal ticks, all ticks (/proc/stat: user nice system idle iowait irq softirq steal)
  awk '/^cpu / { print $9, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9 }' /proc/stat
}

run_wrk() { # round, pass, request, policy, threads, connections
  local s0 t0 s1 t1 out load
  sleep "$PAUSE"
  load=$(cut -d' ' -f1 /proc/loadavg)
  read -r s0 t0 < <(cpu_ticks)
  out=$(BODY_FILE=$REQUESTS/$3.json wrk -t"$5" -c"$6" -d"${DURATION}s" --latency -s "$HERE/post.lua" \
    "http://127.0.0.1:$PS_PORT/validate/$4")
  read -r s1 t1 < <(cpu_ticks)
  out=$(grep '^RESULT ' <<<"$out")
  out="round=$1 pass=$2 scenario=$3 policy=$4 ${out#RESULT } load=$load"
  echo "$out steal_ticks=$((s1 - s0)) total_ticks=$((t1 - t0))" | tee -a "$WORK/runs.txt" >&2
}

in_order() { # round, words: the words, reversed in even rounds
  local out=() w
  for w in "${@:2}"; do
    if (($1 % 2)); then out+=("$w"); else out=("$w" "${out[@]}"); fi
  done
  echo "${out[@]}"
}

rounds() {
  local r id
  for ((r = 1; r <= ROUNDS; r++)); do
    for id in $(in_order "$r" "${MEASURED[@]}"); do run_wrk "$r" throughput typical "$id" 2 8; done
    for id in $(in_order "$r" "${MEASURED[@]}"); do run_wrk "$r" latency typical "$id" 1 1; done
    for id in $(in_order "$r" "${SKIPPED_BY[@]}"); do run_wrk "$r" latency skipped "$id" 1 1; done
    for id in $(in_order "$r" "${SERVICE_BY[@]}"); do run_wrk "$r" latency service "$id" 1 1; done
  done
}

# kwctl bench of one policy: record its host calls against the fake API with `kwctl run`, then
# replay them, repeated, so that every validate call finds its answers (kwctl warns about the
# leftovers at exit: no warning means the session ran out and the figure is not valid).
kwctl_bench() { # id, module, settings
  local base=$WORK/kwctl/$1 session=$WORK/kwctl/session.yml replay=()
  KUBECONFIG=$WORK/kubeconfig "$KWCTL" run --allow-context-aware \
    --request-path "$REQUESTS/typical.json" --settings-path "$3" \
    --record-host-capabilities-interactions "$base.recorded.yml" "$WORK/$2.wasm" \
    >"$base.run.json" 2>"$base.run.log"
  grep -c '^- type: Exchange' "$base.recorded.yml" >"$base.calls" || true
  python3 "$HERE/harness.py" session "$base.recorded.yml" "$KWCTL_ADMISSIONS" "$session"
  [[ ! -s $session ]] || replay=(--replay-host-capabilities-interactions "$session")
  KUBECONFIG=$WORK/kubeconfig "$KWCTL" bench --allow-context-aware "${replay[@]}" \
    --warm-up-time 0 --measurement-time 0 --request-path "$REQUESTS/typical.json" \
    --settings-path "$3" "$WORK/$2.wasm" >"$base.bench.txt" 2>"$base.bench.log" ||
    echo "bench-kubewarden: kwctl bench $1 failed" >&2
  if ((${#replay[@]})) && ! grep -q 'have not been replayed' "$base.bench.log"; then
    echo "bench-kubewarden: kwctl bench $1 ran out of replayed answers" | tee "$base.ran-out" >&2
  fi
  rm -f "$session" "$base.bench.log"
}

kwctl_benches() {
  local p id module settings
  mkdir -p "$WORK/kwctl"
  for p in "${POLICIES[@]}"; do
    read -r id module settings <<<"$p"
    [[ " ${MEASURED[*]} " == *" $id "* ]] || continue
    echo "kwctl bench $id" >&2
    kwctl_bench "$id" "$module" "$settings"
  done
}

# A slow API server (LIST after LIST_DELAY s): restart both, then admit 3 pods one after another.
slow_api() {
  local n
  stop "$PS_PID"
  stop "$API_PID"
  PS_PID='' API_PID=''
  start_fake_api "$LIST_DELAY"
  start_policy_server
  mkdir -p "$WORK/slow"
  for n in 1 2 3; do
    echo "n=$n seconds=$(post ours typical "$WORK/slow/$n.json")" >>"$WORK/slow.txt"
  done
  curl -sS "http://127.0.0.1:$(<"$WORK/api.port")/_counts" >"$WORK/slow-counts.json"
}

# --- the background audit ------------------------------------------------------------------

# Every request of tests/fixtures/audit/ to /audit/<id> of each of deploy/'s policies, as the audit
# scanner sends them; WORK/audit.md is the table of what the scanner would record. Non-zero when a
# result is not the module tests' (tests/fixtures/audit/expected.json).
audit() {
  local id manifest request
  mkdir -p "$WORK/audit"
  echo "$("$POLICY_SERVER" --version | head -n1 | awk '{ print $2 }') $(date -u '+%Y-%m-%dT%H:%MZ')" \
    >"$WORK/ps-version.txt"
  while read -r id manifest; do
    for request in "$AUDIT_FIXTURES"/*.json; do
      [[ $(basename "$request") != expected.json && $(basename "$request") != cluster.json ]] || continue
      curl -sS -o "$WORK/audit/$id.$(basename "$request")" -H 'Content-Type: application/json' \
        --data-binary @"$request" "http://127.0.0.1:$PS_PORT/audit/$id"
    done
  done <"$WORK/audit-policies.txt"
  python3 "$HERE/harness.py" audit "$WORK" "$AUDIT_FIXTURES"
}

# `make audit-kubewarden`: the audit alone, in a minute: ours under deploy/'s policies, the fake
# API server, policy-server, the requests; the table on stdout and in AUDIT.md.
audit_only() {
  prerequisites
  rm -rf "$WORK"
  mkdir -p "$WORK"
  trap cleanup EXIT
  annotate ours "$ROOT/policy.wasm" "$ROOT/policy.yaml"
  : >"$WORK/policies.yml"
  audit_policies
  start_fake_api 0
  start_policy_server
  local status=0
  audit || status=$?
  cp "$WORK/audit.md" "$HERE/AUDIT.md"
  cat "$WORK/audit.md"
  echo "audit-kubewarden: wrote benches/kubewarden/AUDIT.md" >&2
  return "$status"
}

# --- the report ----------------------------------------------------------------------------

describe() {
  local cpu
  cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
  {
    echo "started=$(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "cpu=$cpu"
    echo "cores=$(nproc)"
    echo "load=$(cut -d' ' -f1-3 /proc/loadavg)"
    echo "ps_version=$("$POLICY_SERVER" --version | head -n1 | awk '{ print $2 }')"
    echo "kwctl_version=$("$KWCTL" --version | head -n1 | awk '{ print $2 }')"
    echo "wrk_version=$(wrk -v 2>&1 | head -n1 | awk '{ print $1, $2 }')"
    echo "duration=$DURATION"
    echo "pause=$PAUSE"
    echo "list_delay=$LIST_DELAY"
  } >"$WORK/meta.txt"
  read -r STEAL0 TOTAL0 < <(cpu_ticks)
}

finish() {
  local s1 t1
  read -r s1 t1 < <(cpu_ticks)
  {
    echo "finished=$(date -u '+%H:%M UTC')"
    echo "steal=$(awk -v s=$((s1 - STEAL0)) -v t=$((t1 - TOTAL0)) 'BEGIN { printf "%.1f %%", 100 * s / t }')"
  } >>"$WORK/meta.txt"
  {
    echo "# $(basename "$0") ran these (ports chosen at run time):"
    printf '%q ' "${PS_CMD[@]}"
    echo
    local req=benches/kubewarden/requests lua=benches/kubewarden/post.lua
    local url="http://127.0.0.1:\$PORT/validate/\$POLICY"
    echo "BODY_FILE=$req/typical.json wrk -t2 -c8 -d${DURATION}s --latency -s $lua $url"
    echo "BODY_FILE=$req/\$REQUEST.json wrk -t1 -c1 -d${DURATION}s --latency -s $lua $url"
    echo "KUBECONFIG=$WORK/kubeconfig $KWCTL run --allow-context-aware --request-path $req/typical.json" \
      "--settings-path \$SETTINGS --record-host-capabilities-interactions \$RECORDED \$MODULE"
    echo "KUBECONFIG=$WORK/kubeconfig $KWCTL bench --allow-context-aware" \
      "--replay-host-capabilities-interactions \$RECORDED_x$KWCTL_ADMISSIONS --warm-up-time 0" \
      "--measurement-time 0 --request-path $req/typical.json --settings-path \$SETTINGS \$MODULE"
  } | sed "s#$ROOT/##g" >"$WORK/commands.txt"
  python3 "$HERE/harness.py" report "$WORK" >"$HERE/RESULTS.md"
  echo "bench-kubewarden: wrote benches/kubewarden/RESULTS.md" >&2
}

main() {
  prerequisites
  rm -rf "$WORK"
  mkdir -p "$WORK"
  trap cleanup EXIT
  describe
  prepare_modules
  prepare_policies
  start_fake_api 0
  start_policy_server
  check_answers
  ((ROUNDS == 0)) || rounds
  # policy-server's requests only: kwctl run's recordings below reach the same fake API
  curl -sS "http://127.0.0.1:$(<"$WORK/api.port")/_counts" >"$WORK/counts.json"
  audit || echo "bench-kubewarden: the audit's results are not the module tests' (above)" >&2
  ((KWCTL_BENCH == 0)) || kwctl_benches
  [[ -z $LIST_DELAY ]] || slow_api
  finish
}

if ((AUDIT_ONLY)); then audit_only; else main "$@"; fi
