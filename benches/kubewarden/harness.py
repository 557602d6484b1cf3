#!/usr/bin/env python3
"""Helpers of run.sh (Python 3 standard library only).

  harness.py policies OUT ID=MODULE=SETTINGS...   policy-server's policies file
  harness.py bound-settings ANSWER REQUEST OUT    the bound's settings: ANSWER (kwctl run's) as its answer
  harness.py answers WORK                         check WORK/answers/*, write WORK/answers.json
  harness.py session RECORDED N OUT               a kwctl replay session: RECORDED's exchanges N times
  harness.py report WORK                          the Markdown of RESULTS.md, on stdout
  harness.py manifest-policies OUT MODULE MANIFEST...
                                                  append deploy/ policies to policy-server's policies file
  harness.py audit WORK FIXTURES                  the audit's answers as the scanner reports them:
                                                  WORK/audit.md, checked against FIXTURES/expected.json
"""

import base64
import glob
import hashlib
import json
import os
import re
import statistics
import sys

# run.sh's policy ids: ours with empty settings is `ours`, with deploy/settings/<name>.yaml
# `ours-<name>`; OLD_POLICY's build the same with `old`.
TRIVIAL, GET, CEILING, BOUND, FLOOR = "trivial", "trivial-get", "ceiling", "bound", "floor"
LABELS = {
    TRIVIAL: "trivial",
    GET: "trivial + Namespace get",
    CEILING: "ceiling: trivial + Namespace get + ConfigMap list",
    BOUND: "bound: ours' host calls and answer (in its settings), no work",
    FLOOR: "floor",
}
SCENARIOS = {
    "typical": "typical Deployment pod",
    "skipped": "pod outside the mesh (namespace not annotated)",
    "service": "Service",
}


def label(policy):
    if policy in LABELS:
        return LABELS[policy]
    who, _, settings = policy.partition("-")
    who = "ours" if who == "ours" else "old (OLD_POLICY)"
    return f"{who}, " + (f"`deploy/settings/{settings}.yaml`" if settings else "empty settings")


def rank(policy):
    """ours, ours-*, old, old-*, then the calibration policies: the order of the tables."""
    fixed = [TRIVIAL, GET, CEILING, BOUND, FLOOR]
    if policy in fixed:
        return (2, fixed.index(policy), "")
    return (0 if policy.startswith("ours") else 1, "-" in policy, policy)


# ---------------------------------------------------------------- policies file


def wasm_metadata(path):
    """The Kubewarden metadata kwctl annotate stores in the custom section io.kubewarden.metadata."""
    data = open(path, "rb").read()
    i = 8
    while i < len(data):
        section = data[i]
        size, i = leb128(data, i + 1)
        if section == 0:
            name_len, j = leb128(data, i)
            if data[j:j + name_len] == b"io.kubewarden.metadata":
                return json.loads(data[j + name_len:i + size])
        i += size
    return {}


def leb128(data, i):
    value = shift = 0
    while True:
        byte = data[i]
        i += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, i


def policies(out, entries):
    """Each entry ID=MODULE=SETTINGS: the module's own contextAwareResources, every host capability
    (what the controller writes for a ClusterAdmissionPolicy), the settings file's text indented."""
    lines = []
    for entry in entries:
        pid, module, settings = entry.split("=", 2)
        resources = wasm_metadata(module).get("contextAwareResources", [])
        lines += [f"{pid}:", f"  module: file://{os.path.abspath(module)}", "  allowedToMutate: true",
                  f"  contextAwareResources: {json.dumps(resources)}", '  hostCapabilities: ["*"]',
                  "  settings:"]
        lines += ["    " + line for line in open(settings, encoding="utf-8").read().splitlines()]
    with open(out, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    return 0


def pointer(path):
    return [t.replace("~1", "/").replace("~0", "~") for t in path.split("/")[1:]]


def patched(doc, ops):
    """`doc` with a JSON Patch applied (the add, remove and replace that policy-evaluator's diff
    writes); any other operation stops the run."""
    for op in ops:
        if op["op"] not in ("add", "replace", "remove"):
            raise SystemExit(f"bound-settings: unexpected patch operation {op['op']}")
        *parent, last = pointer(op["path"])
        target = doc
        for key in parent:
            target = target[int(key)] if isinstance(target, list) else target[key]
        if isinstance(target, list):
            last = len(target) if last == "-" else int(last)
            if op["op"] == "add":
                target.insert(last, op["value"])
                continue
        if op["op"] == "remove":
            del target[last]
        else:
            target[last] = op["value"]
    return doc


def bound_settings(answer, request, out):
    """benches/bound-policy's settings: the injector's host calls, and as its answer the validation
    response that gives policy-server ours' answer (`kwctl run`'s) to the typical pod: the request's
    object with ours' patch applied, and ours' audit annotations."""
    response = json.load(open(answer, encoding="utf-8"))
    review = json.load(open(request, encoding="utf-8"))
    if not response.get("allowed") or not response.get("patch"):
        raise SystemExit(f"bound-settings: {answer} is not an injection: {json.dumps(response)[:300]}")
    mutated = patched(review["request"]["object"], json.loads(base64.b64decode(response["patch"])))
    validation = {"accepted": True, "mutated_object": mutated}
    if response.get("auditAnnotations"):
        validation["audit_annotations"] = response["auditAnnotations"]
    with open(out, "w", encoding="utf-8") as f:
        json.dump({"listConfigMaps": "linkerd", "answer": validation}, f)
        f.write("\n")
    return 0


# ---------------------------------------------------------------- answers


def read_answer(path):
    raw = open(path, "rb").read()
    try:
        response = json.loads(raw)["response"]
    except (ValueError, KeyError):
        text = raw.decode(errors="replace")[:300]
        return {"same_as": raw, "allowed": False, "message": text, "patch": None}
    patch = base64.b64decode(response["patch"]) if response.get("patch") else None
    # policy-server writes auditAnnotations from a hash map, in a different key order each time:
    # two answers are the same when the decoded patches are byte-identical and the rest is equal JSON
    rest = {k: v for k, v in response.items() if k != "patch"}
    message = (response.get("status") or {}).get("message", "")
    return {"same_as": (patch, rest), "allowed": response.get("allowed", False), "message": message,
            "patch": patch}


def problem(policy, scenario, a):
    if not a["allowed"]:
        return f"{policy} rejected the {scenario} request: {a['message']}"
    if policy == FLOOR:
        return "the floor answered a patch" if a["patch"] else None
    if scenario == "typical" and not a["patch"]:
        return f"{policy} answered the typical pod without a patch"
    if scenario == "typical" and policy.startswith(("ours", "old")) and b"linkerd-proxy" not in a["patch"]:
        return f"{policy}'s patch of the typical pod has no linkerd-proxy"
    return None


def answers(work):
    """Every answer allowed; ours injects the typical pod (a patch with the proxy), the trivial
    policies label it, the floor answers no patch; OLD_POLICY's answers are the same as ours, and
    so is the bound's to the typical pod."""
    found = {}
    for path in sorted(glob.glob(os.path.join(work, "answers", "*.json"))):
        policy, scenario = os.path.basename(path)[:-len(".json")].rsplit(".", 1)
        found[(policy, scenario)] = read_answer(path)
    problems = [p for (policy, scenario), a in found.items() if (p := problem(policy, scenario, a))]
    summary = []
    for (policy, scenario), a in sorted(found.items()):
        old = found.get(("old" + policy[len("ours"):], scenario)) if policy.startswith("ours") else None
        summary.append({
            "policy": policy, "scenario": scenario, "allowed": a["allowed"], "message": a["message"],
            "patch_bytes": len(a["patch"] or b""),
            "patch_sha256": hashlib.sha256(a["patch"]).hexdigest() if a["patch"] else "",
            "old_identical": None if old is None else old["same_as"] == a["same_as"],
        })
    with open(os.path.join(work, "answers.json"), "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=1)
    bound, ours = found.get((BOUND, "typical")), found.get(("ours", "typical"))
    if bound and ours and bound["same_as"] != ours["same_as"]:
        problems.append("the bound's answer to the typical pod is not ours: it would bound nothing")
    for p in problems:
        print(f"bench-kubewarden: wrong answer: {p}", file=sys.stderr)
    differ = [f"{s['policy']}/{s['scenario']}" for s in summary if s["old_identical"] is False]
    if differ:
        print(f"bench-kubewarden: OLD_POLICY answers differently: {', '.join(differ)}", file=sys.stderr)
    return 1 if problems else 0


# ---------------------------------------------------------------- kwctl sessions


def session(recorded, n, out):
    """kwctl's replay pops one recorded exchange per host call and fails once they run out, so
    the session repeats one admission's exchanges as often as kwctl bench calls validate."""
    text = open(recorded, encoding="utf-8").read() if os.path.exists(recorded) else ""
    with open(out, "w", encoding="utf-8") as f:
        if text.strip() not in ("", "[]"):
            f.write((text if text.endswith("\n") else text + "\n") * int(n))
    return 0


# ---------------------------------------------------------------- the background audit


def spec_blocks(path):
    """A ClusterAdmissionPolicy manifest of deploy/, block style as shipped: metadata.name, and
    each key of `spec` (two spaces in) with the lines under it, as written. The standard library
    has no YAML reader; policy-server reads the copied lines as YAML itself."""
    lines = open(path, encoding="utf-8").read().splitlines()
    name, blocks, key, section = None, {}, None, None
    for line in lines:
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if not line.startswith(" "):
            section, key = line.rstrip(":"), None
            continue
        m = re.match(r"  (\w+):(.*)$", line)
        if m:
            key = m.group(1)
            if section == "metadata" and key == "name":
                name = m.group(2).strip()
            elif section == "spec":
                blocks[key] = [m.group(2).strip()]
        elif section == "spec" and key:
            blocks[key].append(line)
    return name, blocks


def manifest_policies(out, module, manifests):
    """policy-server's entries for deploy/'s policies, as the controller writes them for a
    ClusterAdmissionPolicy: id `clusterwide-<name>`, the manifest's mode, mutating, evaluation
    timeout, context-aware resources and settings, every host capability. Appended to OUT; the
    ids and manifests to OUT's directory's audit-policies.txt."""
    lines, ids = [], []
    for manifest in manifests:
        name, spec = spec_blocks(manifest)
        pid = f"clusterwide-{name}"
        ids.append(f"{pid} {os.path.basename(manifest)}")
        lines += [f"{pid}:", f"  module: file://{os.path.abspath(module)}",
                  f"  policyMode: {spec['mode'][0]}", f"  allowedToMutate: {spec['mutating'][0]}",
                  f"  timeoutEvalSeconds: {spec['timeoutEvalSeconds'][0]}", '  hostCapabilities: ["*"]']
        for key in ("contextAwareResources", "settings"):
            lines += [f"  {key}:"] + spec[key][1:]
    with open(out, "a", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(os.path.dirname(out), "audit-policies.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(ids) + "\n")
    return 0


def scanner_result(path):
    """What the audit scanner records for an answer: `pass` when allowed, else `fail` with the
    status message (report/report.go, computePolicyResult, getCategoryAndMessage); `error` when
    the endpoint did not answer an AdmissionReview."""
    raw = open(path, "rb").read()
    try:
        response = json.loads(raw)["response"]
    except (ValueError, KeyError, TypeError):
        return "error", raw.decode(errors="replace")[:300].strip()
    if response.get("allowed"):
        return "pass", ""
    return "fail", (response.get("status") or {}).get("message", "")


def cell(result, message):
    return result + (f": {message}" if message else "").replace("|", "\\|")


def audit(work, fixtures):
    """The report table of the audit step (WORK/audit.md), and every result compared with the
    module tests' (FIXTURES/expected.json, host/tests/audit.rs)."""
    expected = json.load(open(os.path.join(fixtures, "expected.json"), encoding="utf-8"))
    policies = [line.split() for line in open(os.path.join(work, "audit-policies.txt"), encoding="utf-8")]
    cases = list(next(iter(expected.values())))
    rows, problems, compared = [], [], 0
    for case in cases:
        request = json.load(open(os.path.join(fixtures, f"{case}.json"), encoding="utf-8"))["request"]
        row = [f"`{case}`", f"{request['namespace']}/{request['name']}"]
        for pid, manifest in policies:
            got = scanner_result(os.path.join(work, "audit", f"{pid}.{case}.json"))
            row.append(cell(*got))
            want = expected.get(manifest, {}).get(case)
            if want is not None:
                compared += 1
                if got != (want["result"], want["message"]):
                    problems.append(f"{pid} {case}: {cell(*got)}; the module tests expect {cell(want['result'], want['message'])}")
        rows.append(row)
    ps, started = open(os.path.join(work, "ps-version.txt"), encoding="utf-8").read().split()[:2]
    module = next((line.split()[3] for line in open(os.path.join(work, "modules.txt"), encoding="utf-8")
                   if line.startswith("ours ")), "?")
    text = [
        "### Background audit: the audit scanner's requests to policy-server's `/audit/<policy>`", "",
        f"{started}: policy-server {ps} ran `policy.wasm` (sha256 `{module[:16]}…`) under the three "
        "policies of deploy/ as the controller "
        "configures them (id `clusterwide-<name>`, their mode, settings and context-aware resources). "
        "Each request of tests/fixtures/audit/, built as the audit scanner builds it "
        "(`scanner/admission_request.go`), was POSTed to `/audit/<id>` and the answer mapped as the "
        "scanner maps it (`report/report.go`: allowed is `pass`, anything else `fail` with the status "
        "message). The fake API server holds namespace `shop` (`linkerd.io/inject: enabled`), `plain`, "
        "Deployment `shop/web` and its ReplicaSet, and a default edge-26.8.3 control plane.", "",
        table(["request", "pod"] + [f"`{pid}` (`deploy/{m}`)" for pid, m in policies], rows), "",
        f"{compared - len(problems)} of {compared} results are the module tests' "
        "(tests/fixtures/audit/expected.json, host/tests/audit.rs).", ""]
    with open(os.path.join(work, "audit.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(text))
    for p in problems:
        print(f"bench-kubewarden: audit: {p}", file=sys.stderr)
    return 1 if problems else 0


# ---------------------------------------------------------------- report


def kv_lines(path):
    if not os.path.exists(path):
        return []
    return [dict(field.split("=", 1) for field in line.split()) for line in open(path, encoding="utf-8")]


def ms(us):
    return "-" if us is None else f"{us / 1000:.2f} ms" if us >= 1000 else f"{us:.0f} µs"


def ratio(x):
    return "-" if x is None else f"{x:.2f}"


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(out + ["| " + " | ".join(str(c) for c in row) + " |" for row in rows])


class Runs:
    """runs.txt: one line per wrk run (round, pass, scenario, policy, rps, p50_us, p99_us, ...)."""

    def __init__(self, work):
        self.rows = kv_lines(os.path.join(work, "runs.txt"))
        self.rounds = sorted({int(r["round"]) for r in self.rows})
        self.by_key = {(r["pass"], r["scenario"], r["policy"], int(r["round"])): r for r in self.rows}

    def values(self, pass_, scenario, policy, key):
        rows = [self.by_key.get((pass_, scenario, policy, rnd)) for rnd in self.rounds]
        return [float(r[key]) if r else None for r in rows]

    def ratios(self, pass_, scenario, a, b, key):
        mine, theirs = self.values(pass_, scenario, a, key), self.values(pass_, scenario, b, key)
        return [x / y if x is not None and y else None for x, y in zip(mine, theirs)]

    def steal(self, pass_, scenario, policy):
        steal = self.values(pass_, scenario, policy, "steal_ticks")
        total = self.values(pass_, scenario, policy, "total_ticks")
        return ", ".join(f"{100 * s / t:.0f} %" if t else "-" for s, t in zip(steal, total))

    def policies(self, pass_, scenario):
        ids = {r["policy"] for r in self.rows if (r["pass"], r["scenario"]) == (pass_, scenario)}
        return sorted(ids, key=rank)

    def errors(self):
        return sum(int(r["non2xx"]) + int(r["socket_errors"]) for r in self.rows)

    def loads(self):
        loads = [float(r["load"]) for r in self.rows]
        if not loads:
            return ""
        return f" Load average (1 min) before the runs: {min(loads):.2f} to {max(loads):.2f}."


def joined(xs, fmt):
    return ", ".join(fmt(x) for x in xs)


def throughput_section(runs):
    rows = []
    for p in runs.policies("throughput", "typical"):
        rps = runs.values("throughput", "typical", p, "rps")
        to_trivial = runs.ratios("throughput", "typical", p, TRIVIAL, "rps")
        to_ceiling = runs.ratios("throughput", "typical", p, CEILING, "rps")
        rows.append([label(p), joined(rps, lambda x: f"{x:.0f}"), f"{median(rps):.0f}",
                     joined(to_trivial, ratio), f"**{ratio(median(to_trivial))}**",
                     joined(to_ceiling, ratio), f"**{ratio(median(to_ceiling))}**",
                     runs.steal("throughput", "typical", p)])
    return table(["policy", "req/s per round", "median", "/ trivial per round", "median",
                  "/ ceiling per round", "median", "steal per run"], rows)


def latency_section(runs):
    rows = []
    for p in runs.policies("latency", "typical"):
        p50 = runs.values("latency", "typical", p, "p50_us")
        p99 = runs.values("latency", "typical", p, "p99_us")
        to_ceiling = runs.ratios("latency", "typical", p, CEILING, "p50_us")
        rows.append([label(p), joined(p50, ms), f"**{ms(median(p50))}**", joined(p99, ms), ms(median(p99)),
                     ratio(median(to_ceiling)), runs.steal("latency", "typical", p)])
    return table(["policy", "p50 per round", "median p50", "p99 per round", "median p99",
                  "p50 / ceiling (median)", "steal per run"], rows)


def ratio_section(runs):
    ours = [p for p in runs.policies("throughput", "typical") if p.startswith("ours-")]
    pairs = [("throughput", "rps", "ours", TRIVIAL), ("throughput", "rps", "ours", CEILING)]
    pairs += [("throughput", "rps", p, CEILING) for p in ours]
    pairs += [("throughput", "rps", CEILING, TRIVIAL), ("throughput", "rps", FLOOR, TRIVIAL),
              ("latency", "p50_us", "ours", CEILING), ("latency", "p50_us", "ours", TRIVIAL),
              ("latency", "p50_us", CEILING, TRIVIAL), ("latency", "p50_us", FLOOR, TRIVIAL),
              ("throughput", "rps", "ours", "old"), ("latency", "p50_us", "ours", "old"),
              ("throughput", "rps", "ours", BOUND), ("throughput", "rps", BOUND, CEILING),
              ("latency", "p50_us", "ours", BOUND), ("latency", "p50_us", BOUND, CEILING)]
    rows = []
    for pass_, key, a, b in pairs:
        rs = runs.ratios(pass_, "typical", a, b, key)
        if any(x is not None for x in rs):
            what = "throughput" if pass_ == "throughput" else "p50, one in flight"
            rows.append([f"{what}: {a} / {b}"] + [ratio(x) for x in rs] + [f"**{ratio(median(rs))}**"])
    return table(["ratio within the round"] + [f"round {r}" for r in runs.rounds] + ["median"], rows)


def scenario_section(runs):
    rows = []
    for scenario, title in SCENARIOS.items():
        for p in runs.policies("latency", scenario):
            if scenario == "typical" and p not in ("ours", "old", GET, FLOOR):
                continue
            p50 = runs.values("latency", scenario, p, "p50_us")
            to_get = median(runs.ratios("latency", scenario, p, GET, "p50_us"))
            to_floor = median(runs.ratios("latency", scenario, p, FLOOR, "p50_us"))
            rows.append([title, label(p), joined(p50, ms), f"**{ms(median(p50))}**", ratio(to_get),
                         ratio(to_floor), runs.steal("latency", scenario, p)])
    head = ["request", "policy", "p50 per round", "median", "/ trivial + Namespace get", "/ floor",
            "steal per run"]
    return table(head, rows) + (
        "\n\nRatios are medians of the ratios within each round. The trivial policy decodes a Pod, so "
        "it answers a Service with an error: the Service is compared with the floor only.")


def answer_cell(a):
    if not a["allowed"]:
        what = f"rejected: {a['message']}"
    elif a["patch_bytes"]:
        what = f"patch {a['patch_bytes']:,} B `{a['patch_sha256'][:8]}`"
    else:
        what = "no patch"
    return what + (" (**OLD_POLICY differs**)" if a["old_identical"] is False else "")


def answers_section(work):
    path = os.path.join(work, "answers.json")
    if not os.path.exists(path):
        return "(no answers checked)"
    found = json.load(open(path, encoding="utf-8"))
    cells = {}
    for a in found:
        cells.setdefault(a["policy"], {})[a["scenario"]] = answer_cell(a)
    rows = [[label(p)] + [cells[p].get(s, "not asked") for s in SCENARIOS] for p in sorted(cells, key=rank)]
    text = table(["policy"] + list(SCENARIOS.values()), rows) + (
        "\n\nEvery answer is checked before measuring (allowed; ours injects the typical pod, the "
        "trivial policies label it, the floor answers no patch); a patch's sha256 is of the decoded "
        "JSON Patch.")
    compared = [a["old_identical"] for a in found if a["old_identical"] is not None]
    if compared:
        text += (f" OLD_POLICY against this build: {sum(compared)} of {len(compared)} answers the same "
                 "(the decoded patch byte for byte, the rest of the response as JSON: policy-server "
                 "orders `auditAnnotations` differently from one answer to the next).")
    return text


def counts_section(work):
    out = []
    for name, title in (("counts.json", "policy-server during the answers and the rounds"),
                        ("slow-counts.json", "the slow API server run (LIST_DELAY)")):
        path = os.path.join(work, name)
        if os.path.exists(path):
            c = json.load(open(path, encoding="utf-8"))
            out.append(f"{title}: GET {c['get']}, LIST {c['list']}, WATCH {c['watch']}, discovery "
                       f"{c['discovery']}.\n\n" + table(["request", "count"], list(c["paths"].items())))
    if not out:
        return "(no counts)"
    return "\n\n".join(out) + (
        "\n\npolicy-server caches a `get_resource` answer for 5 s and serves "
        "`list_resources_by_namespace` from a reflector (one LIST, then a WATCH that kube-rs renews "
        "every 290 s).")


UNITS = {"ns": 1e-3, "µs": 1.0, "us": 1.0, "ms": 1e3, "s": 1e6}


def parse_time(text):
    m = re.match(r"([\d.]+)\s*(ns|µs|us|ms|s)\b", text)
    return float(m.group(1)) * UNITS[m.group(2)] if m else None


def kwctl_row(work, policy):
    base = os.path.join(work, "kwctl", policy)
    text = re.sub(r"\x1b\[[0-9;]*m", "", open(base + ".bench.txt", encoding="utf-8", errors="replace").read())
    block = text[text.rfind("validate ["):] if "validate [" in text else ""
    med = re.search(r"med = (\S+),", block)
    mean = re.search(r"\[\S+ (\S+) \S+\] \(sample", block)
    iterations = re.search(r"validate \[(.+?) iterations", block)
    calls = open(base + ".calls", encoding="utf-8").read().strip() if os.path.exists(base + ".calls") else "?"
    if os.path.exists(base + ".ran-out") or not med:  # the failure path was timed, or nothing
        return [label(policy), "failed", "-", "-", calls]
    return [label(policy), f"**{ms(parse_time(med.group(1)))}**", ms(parse_time(mean.group(1))),
            iterations.group(1), calls]


def kwctl_section(work):
    ids = open(os.path.join(work, "measured.txt"), encoding="utf-8").read().split()
    rows = [kwctl_row(work, p) for p in ids if os.path.exists(os.path.join(work, "kwctl", f"{p}.bench.txt"))]
    if not rows:
        return "(kwctl bench not run)"
    head = ["module (settings)", "median validate", "mean", "iterations", "host calls per admission"]
    return table(head, rows) + (
        "\n\nMedian of tiny-bench's 100 per-sample means (samples of 1 to 100 `validate` calls, after one "
        "warm-up call); host calls as `kwctl run --record-host-capabilities-interactions` recorded them "
        "against the fake API, replayed.")


def slow_section(work):
    rows = []
    for r in kv_lines(os.path.join(work, "slow.txt")):
        a = read_answer(os.path.join(work, "slow", f"{r['n']}.json"))
        if not a["allowed"]:
            answer = f"rejected: {a['message']}"
        else:
            answer = f"allowed, patch {len(a['patch']):,} B" if a["patch"] else "allowed, no patch"
        rows.append([r["n"], ms(float(r["seconds"]) * 1e6), answer])
    return table(["admission after readiness", "latency", "answer"], rows) if rows else None


def modules_section(work):
    """modules.txt: name, path, bytes, sha256 and annotated sha256, taken when run.sh annotated them."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(work)))
    rows = []
    for line in open(os.path.join(work, "modules.txt"), encoding="utf-8"):
        name, raw, size, digest, annotated = line.split()
        where = os.path.relpath(raw, root) if raw.startswith(root + os.sep) else raw
        rows.append([name, f"`{where}`", f"{int(size):,}", f"`{digest}`", f"`{annotated[:16]}…`"])
    return table(["module", "file", "bytes", "sha256", "annotated sha256"], rows)


def header(meta, runs):
    return (
        f"Generated by `make bench-kubewarden` (benches/kubewarden/run.sh) from {meta['started']} to "
        f"{meta['finished']}. Machine: {meta['cpu']}, {meta['cores']} cores; load average at the start "
        f"{meta['load']}; CPU steal over the whole run {meta['steal']}. policy-server {meta['ps_version']}, "
        f"kwctl {meta['kwctl_version']}, {meta['wrk_version']}. {len(runs.rounds)} interleaved rounds of "
        f"{meta['duration']} s per run (order reversed every other round, {meta['pause']} s pause before "
        "each run), policy-server `--workers 2`, requests from benches/kubewarden/requests. The ceiling is "
        "the trivial policy with the injected pod's two host calls (`{\"lookup\": true, \"listConfigMaps\": "
        "\"linkerd\"}`). The bound (benches/bound-policy) makes the same two host calls as ours, skims the "
        "payload and the answers, and answers the typical pod with ours' answer, which it carries in its "
        "settings: what ours would cost if its own work cost nothing, plus what policy-server spends on "
        "11 KB more settings in every payload, so ours can come out above it. Errors (non-2xx and socket "
        f"errors) over all runs: {runs.errors()}.{runs.loads()}")


def report(work):
    lines = open(os.path.join(work, "meta.txt"), encoding="utf-8").read().splitlines()
    meta = dict(line.split("=", 1) for line in lines)
    runs = Runs(work)
    s = [f"## policy-server and `kwctl bench` ({meta['started']})", "", header(meta, runs), "",
         "### Modules", "", modules_section(work), ""]
    if runs.rows:
        s += ["### Throughput, typical pod (`wrk -t2 -c8`)", "", throughput_section(runs), "",
              "### One request in flight, typical pod (`wrk -t1 -c1 --latency`)", "", latency_section(runs),
              "", "### Ratios within each round", "", ratio_section(runs), "",
              "### Other requests, one request in flight", "", scenario_section(runs), ""]
    s += ["### `kwctl bench` (typical pod, replayed host calls)", "", kwctl_section(work), "",
          "### Answers", "", answers_section(work), "",
          "### Fake API server requests", "", counts_section(work), ""]
    slow = slow_section(work)
    if slow:
        s += [f"### Slow API server: LIST answers after {meta['list_delay']} s, policy-server just restarted",
              "", "Typical pod admissions to `ours`, one after another, right after readiness "
              "(policy-server's default `--policy-timeout` of 2 s):", "", slow, ""]
    if os.path.exists(os.path.join(work, "audit.md")):
        s += [open(os.path.join(work, "audit.md"), encoding="utf-8").read()]
    commands = open(os.path.join(work, "commands.txt"), encoding="utf-8").read().rstrip()
    s += ["### Commands", "", "```sh", commands, "```", ""]
    sys.stdout.write("\n".join(s))
    return 0


def main(argv):
    commands = {"policies": lambda a: policies(a[0], a[1:]), "answers": lambda a: answers(a[0]),
                "session": lambda a: session(*a), "report": lambda a: report(a[0]),
                "bound-settings": lambda a: bound_settings(*a),
                "manifest-policies": lambda a: manifest_policies(a[0], a[1], a[2:]),
                "audit": lambda a: audit(*a)}
    if len(argv) < 3 or argv[1] not in commands:
        print(__doc__, file=sys.stderr)
        return 2
    return commands[argv[1]](argv[2:])


if __name__ == "__main__":
    sys.exit(main(sys.argv))
