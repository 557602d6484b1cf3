#!/usr/bin/env bats
# End-to-end scenarios of the annotated policy module, run with two engines:
#   * kwctl run            (Kubewarden's CLI; skipped with a message when kwctl is not installed)
#   * injector-host run    (this project's engine)
# Context-aware lookups are answered from kwctl replay sessions (host/tests/data/e2e/session-*.yml),
# so both engines see exactly the same cluster. `make e2e-tests` runs everything; `make test` runs
# the injector-host half (E2E_ENGINES=injector-host).
#
# Environment: POLICY (default annotated-policy.wasm), INJECTOR_HOST (default
# target/debug/injector-host), KWCTL (default kwctl), E2E_ENGINES (default "kwctl injector-host").
# Needs bats >= 1.5, jq and base64.

bats_require_minimum_version 1.5.0

setup() {
  ROOT="$BATS_TEST_DIRNAME"
  DATA="$ROOT/host/tests/data/e2e"
  POLICY="${POLICY:-$ROOT/annotated-policy.wasm}"
  INJECTOR_HOST="${INJECTOR_HOST:-$ROOT/target/debug/injector-host}"
  KWCTL="${KWCTL:-kwctl}"
  E2E_ENGINES="${E2E_ENGINES:-kwctl injector-host}"
  [ -f "$POLICY" ] || {
    echo "$POLICY is missing: run 'make annotated-policy.wasm'" >&2
    return 1
  }
}

# evaluate ENGINE SESSION SETTINGS REQUEST: runs one request, AdmissionResponse JSON in $output.
evaluate() {
  local engine=$1 session=$2 settings=$3 request=$4
  case " $E2E_ENGINES " in
  *" $engine "*) ;;
  *) skip "$engine not selected (E2E_ENGINES=$E2E_ENGINES)" ;;
  esac
  local bin
  if [ "$engine" = kwctl ]; then
    command -v "$KWCTL" >/dev/null 2>&1 || skip "kwctl is not installed: only the injector-host half runs"
    bin="$KWCTL"
  else
    [ -x "$INJECTOR_HOST" ] || {
      echo "$INJECTOR_HOST is missing: run 'cargo build -p injector-host'" >&2
      return 1
    }
    bin="$INJECTOR_HOST"
  fi
  run --separate-stderr "$bin" run \
    --allow-context-aware \
    --replay-host-capabilities-interactions "$DATA/$session" \
    --settings-path "$DATA/$settings" \
    --request-path "$DATA/$request" \
    "$POLICY"
  echo "output = ${output}"
  echo "stderr = ${stderr}"
}

# The decoded JSON patch of the response in $output.
patch() {
  jq -r '.patch' <<<"$output" | base64 --decode
}

# --- scenarios (each runs with both engines) ---

injects_pod() {
  evaluate "$1" session-injected.yml settings-default.yaml pod-request.json
  [ "$status" -eq 0 ]
  [ "$(jq -r '.allowed' <<<"$output")" = true ]
  [ "$(jq -r '.patchType' <<<"$output")" = JSONPatch ]
  [ "$(jq -r '.auditAnnotations.injection' <<<"$output")" = injected ]
  patch | jq -e 'any(.[]; .op == "add" and .path == "/spec/initContainers" and
                 (.value | map(.name)) == ["linkerd-init", "linkerd-proxy"])'
  patch | jq -e 'any(.[]; .path == "/metadata/labels/linkerd.io~1proxy-deployment" and .value == "web")'
  patch | jq -e 'any(.[]; .path == "/metadata/annotations" and
                 .value["linkerd.io/trust-root-sha256"] == "8dc603abd4e755c25c94da05abbf29b9b283a784733651020d72f97ca8ab98e4")'
  # additions only: nothing of the pod is removed or replaced
  patch | jq -e 'all(.[]; .op == "add")'
}

skips_pod_in_plain_namespace() {
  evaluate "$1" session-not-annotated.yml settings-default.yaml pod-request.json
  [ "$status" -eq 0 ]
  [ "$(jq -r '.allowed' <<<"$output")" = true ]
  [ "$(jq -r '.patch' <<<"$output")" = null ]
  [[ "$(jq -r '.auditAnnotations.injection' <<<"$output")" == "skipped: neither the namespace nor the pod"* ]]
}

admits_pod_outside_the_mesh_without_linkerd_config() {
  evaluate "$1" session-no-linkerd-config.yml settings-default.yaml pod-request.json
  [ "$status" -eq 0 ]
  [ "$(jq -r '.allowed' <<<"$output")" = true ]
  [ "$(jq -r '.patch' <<<"$output")" = null ]
  [[ "$(jq -r '.warnings[0]' <<<"$output")" == "ConfigMap linkerd/linkerd-config not found: "*"; admitted without the default config.linkerd.io/opaque-ports annotation (proxy.opaquePorts) (an unusable linkerd-config rejects only pods that get a proxy)" ]]
  [ "$(jq -r '.auditAnnotations.values' <<<"$output")" = "not used: linkerd-config unusable" ]
}

rejects_when_namespace_unreadable() {
  evaluate "$1" session-namespace-error.yml settings-default.yaml pod-request.json
  [ "$status" -eq 0 ]
  [ "$(jq -r '.allowed' <<<"$output")" = false ]
  [[ "$(jq -r '.status.message' <<<"$output")" == "could not read Namespace shop to decide on proxy injection:"* ]]
}

annotates_service() {
  evaluate "$1" session-service.yml settings-default.yaml service-request.json
  [ "$status" -eq 0 ]
  [ "$(jq -r '.allowed' <<<"$output")" = true ]
  [ "$(patch | jq -c '.')" = '[{"op":"add","path":"/metadata/annotations","value":{"config.linkerd.io/opaque-ports":"3306"}}]' ]
}

ignores_update() {
  evaluate "$1" session-empty.yml settings-default.yaml pod-update-request.json
  [ "$status" -eq 0 ]
  [ "$(jq -r '.allowed' <<<"$output")" = true ]
  [ "$(jq -r '.patch' <<<"$output")" = null ]
}

verify_rejects_unmeshed_pod() {
  evaluate "$1" session-verify.yml settings-verify.yaml pod-request.json
  [ "$status" -eq 0 ]
  [ "$(jq -r '.allowed' <<<"$output")" = false ]
  [[ "$(jq -r '.status.message' <<<"$output")" == "pod is not meshed:"* ]]
  [ "$(jq -r '.auditAnnotations.verify' <<<"$output")" = "not meshed" ]
}

verify_admits_meshed_pod() {
  evaluate "$1" session-verify.yml settings-verify.yaml meshed-pod-request.json
  [ "$status" -eq 0 ]
  [ "$(jq -r '.allowed' <<<"$output")" = true ]
  [ "$(jq -r '.patch' <<<"$output")" = null ]
}

rejects_invalid_settings() {
  evaluate "$1" session-empty.yml settings-invalid.yaml pod-update-request.json
  [ "$status" -ne 0 ]
  [[ "$stderr" == *"Provided settings are not valid"*"settings.proxy.ports.admin: must be 1-65535, got 0"* ]]
}

@test "kwctl: injects a pod of a Deployment in an injected namespace" { injects_pod kwctl; }
@test "injector-host: injects a pod of a Deployment in an injected namespace" { injects_pod injector-host; }
@test "kwctl: skips a pod in a namespace without linkerd.io/inject" { skips_pod_in_plain_namespace kwctl; }
@test "injector-host: skips a pod in a namespace without linkerd.io/inject" { skips_pod_in_plain_namespace injector-host; }
@test "kwctl: admits a pod outside the mesh while linkerd-config is missing" { admits_pod_outside_the_mesh_without_linkerd_config kwctl; }
@test "injector-host: admits a pod outside the mesh while linkerd-config is missing" { admits_pod_outside_the_mesh_without_linkerd_config injector-host; }
@test "kwctl: rejects (transient) when the Namespace cannot be read" { rejects_when_namespace_unreadable kwctl; }
@test "injector-host: rejects (transient) when the Namespace cannot be read" { rejects_when_namespace_unreadable injector-host; }
@test "kwctl: adds the namespace's opaque ports to a Service" { annotates_service kwctl; }
@test "injector-host: adds the namespace's opaque ports to a Service" { annotates_service injector-host; }
@test "kwctl: admits an UPDATE unchanged without lookups" { ignores_update kwctl; }
@test "injector-host: admits an UPDATE unchanged without lookups" { ignores_update injector-host; }
@test "kwctl: verify mode rejects a pod that should be meshed" { verify_rejects_unmeshed_pod kwctl; }
@test "injector-host: verify mode rejects a pod that should be meshed" { verify_rejects_unmeshed_pod injector-host; }
@test "kwctl: verify mode admits a meshed pod" { verify_admits_meshed_pod kwctl; }
@test "injector-host: verify mode admits a meshed pod" { verify_admits_meshed_pod injector-host; }
@test "kwctl: invalid settings are refused" { rejects_invalid_settings kwctl; }
@test "injector-host: invalid settings are refused" { rejects_invalid_settings injector-host; }

# --- the module's metadata, as either annotator wrote it ---

@test "annotated module carries policy.yaml and the README" {
  case " $E2E_ENGINES " in *" injector-host "*) ;; *) skip "injector-host not selected" ;; esac
  # the metadata section, read back by the engine: run without --metadata-path grants exactly the
  # module's contextAwareResources (a lookup outside them would be refused)
  evaluate injector-host session-injected.yml settings-default.yaml pod-request.json
  [ "$status" -eq 0 ]
  [ "$(jq -r '.allowed' <<<"$output")" = true ]
  [[ "$stderr" != *"has not been granted"* ]]
  # the usage annotation is the README (the section is plain JSON inside the module)
  grep -q 'io.kubewarden.policy.usage' "$POLICY"
  grep -q '"protocolVersion":"v1"' "$POLICY"
}

# --- manual injection (injector-host only: kwctl has no equivalent) ---

@test "injector-host inject: manifests through the same module and settings" {
  case " $E2E_ENGINES " in *" injector-host "*) ;; *) skip "injector-host not selected" ;; esac
  run --separate-stderr "$INJECTOR_HOST" inject --module "$POLICY" \
    --settings-path "$DATA/settings-default.yaml" --context "$DATA/context.yaml" \
    "$ROOT/host/tests/data/inject/mixed.yaml"
  echo "stderr = ${stderr}"
  [ "$status" -eq 0 ]
  [[ "$stderr" == *'deployment "web" injected'* ]]
  [[ "$stderr" == *'daemonset "node-agent" skipped: hostNetwork is enabled'* ]]
  # the injected Deployment's template has the proxy; the untouched ConfigMap is byte for byte
  [[ "$output" == *"name: linkerd-proxy"* ]]
  [[ "$output" == *"  key: \"a value with 'quotes' and: colons\""* ]]
  # injecting the output again changes nothing
  local first="$output"
  run --separate-stderr "$INJECTOR_HOST" inject --module "$POLICY" \
    --settings-path "$DATA/settings-default.yaml" --context "$DATA/context.yaml" - <<<"$first"
  [ "$status" -eq 0 ]
  [ "$output" = "$first" ]
}
