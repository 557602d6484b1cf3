#!/usr/bin/env python3
"""Helpers of run.sh (Python 3 standard library only).

  harness.py policies OUT ID=MODULE=SETTINGS...   policy-server's policies file
  harness.py answers WORK                         check the answers in WORK/answers, write WORK/answers.json
  harness.py session RECORDED N OUT               a kwctl replay session: RECORDED's exchanges N times
  harness.py report WORK                          the Markdown of RESULTS.md, on stdout
"""

import base64
import glob
import hashlib
import json
import os
import re
import statistics
import sys

# The policies of the rounds (run.sh's ids): ours with empty settings is `ours`, with
# deploy/settings/<name>.yaml `ours-<name>`; OLD_POLICY's build the same with `old`.
TRIVIAL, GET, CEILING, FLOOR = "trivial", "trivial-get", "ceiling", "floor"
LABELS = {
    "ours": "ours, empty settings",
    TRIVIAL: "trivial",
    GET: "trivial + Namespace get",
    CEILING: "ceiling: trivial + Namespace get + ConfigMap list",
    FLOOR: "floor",
}
SCENARIOS = {"typical": "typical Deployment pod", "skipped": "pod outside the mesh (namespace not annotated)",
             "service": "Service"}


def label(policy):
    if policy in LABELS:
        return LABELS[policy]
    m = re.fullmatch(r"(ours|old)(?:-(.+))?", policy)
    if m:
        who = "ours" if m.group(1) == "ours" else "old (OLD_POLICY)"
        return f"{who}, " + (f"`deploy/settings/{m.group(2)}.yaml`" if m.group(2) else "empty settings")
    return policy


def rank(policy):
    """ours, ours-*, old, old-*, then the calibration policies, in the order of the tables."""
    fixed = [TRIVIAL, GET, CEILING, FLOOR]
    if policy in fixed:
        return (2, fixed.index(policy), "")
    return (0 if policy.startswith("ours") else 1, 0 if "-" not in policy else 1, policy)


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
    """Each entry ID=MODULE=SETTINGS: the module's contextAwareResources, every host capability
    (what the controller writes for a ClusterAdmissionPolicy), the settings file's text indented."""
    lines = []
    for entry in entries:
        pid, module, settings = entry.split("=", 2)
        resources = wasm_metadata(module).get("contextAwareResources", [])
        text = open(settings, encoding="utf-8").read()
        lines += [f"{pid}:", f"  module: file://{os.path.abspath(module)}", "  allowedToMutate: true",
                  f"  contextAwareResources: {json.dumps(resources)}", '  hostCapabilities: ["*"]', "  settings:"]
        lines += ["    " + line for line in text.splitlines()]
    with open(out, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


# ---------------------------------------------------------------- answers


def read_answer(path):
    raw = open(path, "rb").read()
    try:
        response = json.loads(raw)["response"]
    except (ValueError, KeyError):
        return {"same_as": raw, "allowed": False, "message": raw.decode(errors="replace")[:300],
                "patch": None}
    patch = base64.b64decode(response["patch"]) if response.get("patch") else None
    # policy-server writes auditAnnotations from a hash map, in a different key order each time:
    # answers are compared as the decoded patch's bytes plus the rest of the response as JSON
    rest = {k: v for k, v in response.items() if k != "patch"}
    return {"same_as": (patch, rest), "allowed": response.get("allowed", False),
            "message": (response.get("status") or {}).get("message", ""), "patch": patch}


def answers(work):
    """Every answer allowed; ours injects the typical pod (a patch with the proxy) and the trivial
    policies label it; the floor answers no patch; OLD_POLICY's answers are the same."""
    found, problems = {}, []
    for path in sorted(glob.glob(os.path.join(work, "answers", "*.json"))):
        policy, scenario = os.path.basename(path)[:-5].rsplit(".", 1)
        a = read_answer(path)
        found[(policy, scenario)] = a
        if not a["allowed"]:
            problems.append(f"{policy} rejected the {scenario} request: {a['message']}")
        elif scenario == "typical" and policy != FLOOR and not a["patch"]:
            problems.append(f"{policy} answered the typical pod without a patch")
        elif scenario == "typical" and policy.startswith(("ours", "old")) and b"linkerd-proxy" not in a["patch"]:
            problems.append(f"{policy}'s patch of the typical pod has no linkerd-proxy")
        elif policy == FLOOR and a["patch"]:
            problems.append("the floor answered a patch")
    summary = []
    for (policy, scenario), a in sorted(found.items()):
        old = found.get((policy.replace("ours", "old", 1), scenario)) if policy.startswith("ours") else None
        summary.append({"policy": policy, "scenario": scenario, "allowed": a["allowed"], "message": a["message"],
                        "patch_bytes": len(a["patch"]) if a["patch"] else 0,
                        "patch_sha256": hashlib.sha256(a["patch"]).hexdigest() if a["patch"] else "",
                        "old_identical": None if old is None else old["same_as"] == a["same_as"]})
    with open(os.path.join(work, "answers.json"), "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=1)
    for p in problems:
        print(f"bench-kubewarden: wrong answer: {p}", file=sys.stderr)
    differ = [f"{s['policy']}/{s['scenario']}" for s in summary if s["old_identical"] is False]
    if differ:
        print(f"bench-kubewarden: OLD_POLICY answers differently: {', '.join(differ)}", file=sys.stderr)
    return 1 if problems else 0


# ---------------------------------------------------------------- kwctl sessions


def session(recorded, n, out):
    """kwctl's replay pops one recorded exchange per host call and fails once they run out, so
    the session repeats one admission's exchanges as often as kwctl bench will call validate."""
    text = open(recorded, encoding="utf-8").read() if os.path.exists(recorded) else ""
    if not text.strip() or text.strip() == "[]":
        open(out, "w").close()
        return 0
    if not text.endswith("\n"):
        text += "\n"
    with open(out, "w", encoding="utf-8") as f:
        for _ in range(int(n)):
            f.write(text)
    return 0


# ---------------------------------------------------------------- report


def kv_lines(path):
    rows = []
    if os.path.exists(path):
        for line in open(path, encoding="utf-8"):
            rows.append(dict(field.split("=", 1) for field in line.split()))
    return rows


def ms(us):
    return f"{us / 1000:.2f} ms" if us >= 1000 else f"{us:.0f} µs"


def pct(part, whole):
    return f"{100 * part / whole:.0f} %" if whole else "-"


def fmt_ratio(x):
    return "-" if x is None else f"{x:.2f}"


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


class Runs:
    def __init__(self, work):
        self.rows = kv_lines(os.path.join(work, "runs.txt"))
        self.rounds = sorted({int(r["round"]) for r in self.rows})

    def value(self, pass_, scenario, policy, rnd, key):
        for r in self.rows:
            if (r["pass"], r["scenario"], r["policy"], int(r["round"])) == (pass_, scenario, policy, rnd):
                return float(r[key])
        return None

    def steal(self, pass_, scenario, policy):
        out = []
        for rnd in self.rounds:
            s, t = self.value(pass_, scenario, policy, rnd, "steal_ticks"), \
                self.value(pass_, scenario, policy, rnd, "total_ticks")
            out.append(pct(s, t) if t else "-")
        return ", ".join(out)

    def policies(self, pass_, scenario):
        seen = []
        for r in self.rows:
            if r["pass"] == pass_ and r["scenario"] == scenario and r["policy"] not in seen:
                seen.append(r["policy"])
        return seen

    def ratios(self, pass_, key, a, b):
        out = []
        for rnd in self.rounds:
            x, y = self.value(pass_, "typical", a, rnd, key), self.value(pass_, "typical", b, rnd, key)
            out.append(x / y if x is not None and y else None)
        return out

    def loads(self):
        loads = [float(r["load"]) for r in self.rows if "load" in r]
        return f"Load average (1 min) before the runs: {min(loads):.2f} to {max(loads):.2f}." if loads else ""

    def errors(self):
        return sum(int(r["non2xx"]) + int(r["socket_errors"]) for r in self.rows)


def table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


def throughput_section(runs):
    ids = runs.policies("throughput", "typical")
    rows = []
    for p in ids:
        rps = [runs.value("throughput", "typical", p, r, "rps") for r in runs.rounds]
        to_trivial = runs.ratios("throughput", "rps", p, TRIVIAL)
        to_ceiling = runs.ratios("throughput", "rps", p, CEILING)
        rows.append([label(p), ", ".join(f"{x:.0f}" for x in rps if x is not None), f"{median(rps):.0f}",
                     ", ".join(fmt_ratio(x) for x in to_trivial), f"**{fmt_ratio(median(to_trivial))}**",
                     ", ".join(fmt_ratio(x) for x in to_ceiling), f"**{fmt_ratio(median(to_ceiling))}**",
                     runs.steal("throughput", "typical", p)])
    head = ["policy", "req/s per round", "median", "/ trivial per round", "median",
            "/ ceiling per round", "median", "steal per run"]
    return table(head, rows)


def latency_section(runs):
    ids = runs.policies("latency", "typical")
    rows = []
    for p in ids:
        p50 = [runs.value("latency", "typical", p, r, "p50_us") for r in runs.rounds]
        p99 = [runs.value("latency", "typical", p, r, "p99_us") for r in runs.rounds]
        to_ceiling = runs.ratios("latency", "p50_us", p, CEILING)
        rows.append([label(p), ", ".join(ms(x) for x in p50 if x is not None), f"**{ms(median(p50))}**",
                     ", ".join(ms(x) for x in p99 if x is not None), ms(median(p99)),
                     fmt_ratio(median(to_ceiling)), runs.steal("latency", "typical", p)])
    head = ["policy", "p50 per round", "median p50", "p99 per round", "median p99", "p50 / ceiling (median)",
            "steal per run"]
    return table(head, rows)


def ratio_section(runs):
    pairs = [("throughput", "rps", "ours", TRIVIAL), ("throughput", "rps", "ours", CEILING),
             ("throughput", "rps", CEILING, TRIVIAL), ("throughput", "rps", FLOOR, TRIVIAL),
             ("latency", "p50_us", "ours", CEILING), ("latency", "p50_us", "ours", TRIVIAL),
             ("latency", "p50_us", CEILING, TRIVIAL), ("latency", "p50_us", FLOOR, TRIVIAL)]
    ours = [p for p in runs.policies("throughput", "typical") if p.startswith("ours-")]
    pairs[2:2] = [("throughput", "rps", p, CEILING) for p in ours]
    if "old" in runs.policies("throughput", "typical"):
        pairs += [("throughput", "rps", "ours", "old"), ("latency", "p50_us", "ours", "old")]
    rows = []
    for pass_, key, a, b in pairs:
        rs = runs.ratios(pass_, key, a, b)
        if all(x is None for x in rs):
            continue
        what = "throughput" if pass_ == "throughput" else "p50, one in flight"
        rows.append([f"{what}: {a} / {b}"] + [fmt_ratio(x) for x in rs] + [f"**{fmt_ratio(median(rs))}**"])
    head = ["ratio within the round"] + [f"round {r}" for r in runs.rounds] + ["median"]
    return table(head, rows)


def scenario_section(runs):
    def against(scenario, p, base):
        mine = [runs.value("latency", scenario, p, r, "p50_us") for r in runs.rounds]
        theirs = [runs.value("latency", scenario, base, r, "p50_us") for r in runs.rounds]
        return fmt_ratio(median([x / y if x and y else None for x, y in zip(mine, theirs)]))

    rows = []
    for scenario in ("typical", "skipped", "service"):
        for p in runs.policies("latency", scenario):
            if scenario == "typical" and p not in ("ours", "old", GET, FLOOR):
                continue
            p50 = [runs.value("latency", scenario, p, r, "p50_us") for r in runs.rounds]
            rows.append([SCENARIOS[scenario], label(p), ", ".join(ms(x) for x in p50 if x is not None),
                         f"**{ms(median(p50))}**", against(scenario, p, GET), against(scenario, p, FLOOR),
                         runs.steal("latency", scenario, p)])
    head = ["request", "policy", "p50 per round", "median", "/ trivial + Namespace get", "/ floor", "steal per run"]
    return table(head, rows) + ("\n\nRatios are medians of the ratios within each round. The trivial policy "
                                "decodes a Pod, so it answers a Service with an error: the Service is compared "
                                "with the floor only.")


def answers_section(work):
    path = os.path.join(work, "answers.json")
    if not os.path.exists(path):
        return "(no answers checked)"
    cells, same, compared = {}, 0, 0
    for a in json.load(open(path, encoding="utf-8")):
        if not a["allowed"]:
            what = f"rejected: {a['message']}"
        elif a["patch_bytes"]:
            what = f"patch {a['patch_bytes']:,} B `{a['patch_sha256'][:8]}`"
        else:
            what = "no patch"
        if a["old_identical"] is not None:
            compared += 1
            same += a["old_identical"]
            what += "" if a["old_identical"] else " (**OLD_POLICY differs**)"
        cells.setdefault(a["policy"], {})[a["scenario"]] = what
    rows = [[label(p)] + [cells[p].get(s, "not asked") for s in SCENARIOS] for p in sorted(cells, key=rank)]
    text = table(["policy"] + list(SCENARIOS.values()), rows)
    text += ("\n\nEvery answer is checked before measuring (allowed; ours injects the typical pod, the trivial "
             "policies label it, the floor answers no patch); a patch's sha256 is of the decoded JSON Patch.")
    if compared:
        text += (f" OLD_POLICY against this build: {same} of {compared} answers identical (the decoded patch "
                 "byte for byte, the rest of the response as JSON: policy-server orders auditAnnotations "
                 "differently from one answer to the next).")
    return text


def counts_section(work):
    out = []
    for name, title in (("counts.json", "measurement"), ("slow-counts.json", "slow API (LIST_DELAY)")):
        path = os.path.join(work, name)
        if not os.path.exists(path):
            continue
        c = json.load(open(path, encoding="utf-8"))
        rows = [[k, v] for k, v in c["paths"].items()]
        out.append(f"Fake API server, {title}: GET {c['get']}, LIST {c['list']}, WATCH {c['watch']}, "
                   f"discovery {c['discovery']}.\n\n" + table(["request", "count"], rows))
    return "\n\n".join(out) or "(no counts)"


UNITS = {"ns": 1e-3, "µs": 1.0, "us": 1.0, "ms": 1e3, "s": 1e6}


def parse_time(text):
    m = re.match(r"([\d.]+)\s*(ns|µs|us|ms|s)", text)
    return float(m.group(1)) * UNITS[m.group(2)] if m else None


def kwctl_section(work):
    rows = []
    for policy in open(os.path.join(work, "measured.txt"), encoding="utf-8").read().split():
        path = os.path.join(work, "kwctl", f"{policy}.bench.txt")
        if not os.path.exists(path):
            continue
        text = re.sub(r"\x1b\[[0-9;]*m", "", open(path, encoding="utf-8", errors="replace").read())
        block = text[text.rfind("validate ["):] if "validate [" in text else ""
        med = re.search(r"med = ([\d.]+\s*\S+?),", block)
        mean = re.search(r"\[\S+ ([\d.]+\s*\S+) \S+\] \(sample", block)
        iters = re.search(r"validate \[(.+?) iterations", block)
        calls = open(path.replace(".bench.txt", ".calls"), encoding="utf-8").read().strip() \
            if os.path.exists(path.replace(".bench.txt", ".calls")) else "?"
        if os.path.exists(path.replace(".bench.txt", ".ran-out")):
            med = None  # the replay session ran out: the failure path was timed
        rows.append([label(policy), f"**{ms(parse_time(med.group(1)))}**" if med else "failed",
                     ms(parse_time(mean.group(1))) if mean else "-", iters.group(1) if iters else "-", calls])
    if not rows:
        return "(kwctl bench not run)"
    return table(["module (settings)", "median validate", "mean", "iterations", "host calls per admission"], rows)


def slow_section(work):
    rows = kv_lines(os.path.join(work, "slow.txt"))
    if not rows:
        return None
    out = []
    for r in rows:
        a = read_answer(os.path.join(work, "slow", f"{r['n']}.json"))
        if a["allowed"]:
            answer = f"allowed, patch {len(a['patch']):,} B" if a["patch"] else "allowed, no patch"
        else:
            answer = f"rejected: {a['message']}"
        out.append([r["n"], ms(float(r["seconds"]) * 1e6), answer])
    return table(["admission after readiness", "latency", "answer"], out)


def modules_section(work):
    rows = []
    for line in open(os.path.join(work, "modules.txt"), encoding="utf-8"):
        name, raw, annotated = line.split()
        rows.append([name, f"`{os.path.relpath(raw, os.path.dirname(os.path.dirname(work)))}`",
                     f"{os.path.getsize(raw):,}", f"`{sha256(raw)}`", f"`{sha256(annotated)[:16]}…`"])
    return table(["module", "file", "bytes", "sha256", "annotated sha256"], rows)


def sha256(path):
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def report(work):
    meta = dict(line.rstrip("\n").split("=", 1) for line in open(os.path.join(work, "meta.txt"), encoding="utf-8"))
    runs = Runs(work)
    s = [f"## policy-server and `kwctl bench` ({meta['started']})", "",
         f"Generated by `make bench-kubewarden` (benches/kubewarden/run.sh) from {meta['started']} to "
         f"{meta['finished']}. Machine: {meta['cpu']}, {meta['cores']} cores; load average at the start "
         f"{meta['load']}; CPU steal over the whole run {meta['steal']}. policy-server {meta['ps_version']}, "
         f"kwctl {meta['kwctl_version']}, {meta['wrk_version']}. {len(runs.rounds)} interleaved rounds of "
         f"{meta['duration']} s (order reversed every other round, {meta['pause']} s pause before each run), "
         f"policy-server `--workers 2`; requests: benches/kubewarden/requests; the ceiling is the trivial policy "
         f"with the injected pod's two host calls (`{{\"lookup\": true, \"listConfigMaps\": \"linkerd\"}}`). "
         f"Errors (non-2xx and socket errors) over all runs: {runs.errors()}. {runs.loads()}", "",
         "### Modules", "", modules_section(work), ""]
    if runs.rows:
        s += ["### Throughput, typical pod (`wrk -t2 -c8`)", "", throughput_section(runs), "",
              "### One request in flight, typical pod (`wrk -t1 -c1 --latency`)", "", latency_section(runs), "",
              "### Ratios within each round", "", ratio_section(runs), "",
              "### Other requests, one request in flight", "", scenario_section(runs), ""]
    s += ["### `kwctl bench` (typical pod, replayed host calls)", "", kwctl_section(work), "",
          "### Answers", "", answers_section(work), "",
          "### Fake API server requests", "", counts_section(work), ""]
    slow = slow_section(work)
    if slow:
        s += [f"### Slow API server: LIST answers after {meta.get('list_delay')} s, policy-server just restarted",
              "", "Pod admissions (typical pod, `ours`) sent one after another right after readiness:", "", slow, ""]
    s += ["### Commands", "", "```sh", open(os.path.join(work, "commands.txt"), encoding="utf-8").read().rstrip(),
          "```", ""]
    sys.stdout.write("\n".join(s))
    return 0


def main(argv):
    cmd, args = argv[1], argv[2:]
    if cmd == "policies":
        return policies(args[0], args[1:]) or 0
    if cmd == "answers":
        return answers(args[0])
    if cmd == "session":
        return session(*args)
    if cmd == "report":
        return report(args[0])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
