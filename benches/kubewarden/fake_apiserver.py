#!/usr/bin/env python3
"""A loopback Kubernetes API server for benchmarking policy-server (Python 3 standard library only).

It serves what policy-server's kube client asks for: discovery (/api, /api/v1, /apis,
/apis/<group>/v1, /version), GET of a named object, LIST of a collection (delayed by
--list-delay), and WATCH (?watch=true|1): the connection is held open with chunked transfer
and nothing but BOOKMARK events is sent, until the client goes away or its timeoutSeconds ends,
as a real API server does on a cluster where nothing changes. kube-rs reflectors (policy-server's
list_resources_by_namespace) LIST, then WATCH.

The objects are shaped as a real API server returns them (Kubernetes API reference: ObjectMeta,
ListMeta, APIResourceList, WatchEvent, Status): uid, resourceVersion, creationTimestamp,
managedFields, the kubernetes.io/metadata.name label on namespaces, status on Namespaces and
ReplicaSets, list items without apiVersion/kind (a real LIST leaves them out), and every
namespace holds the kube-root-ca.crt ConfigMap. Namespace `linkerd` holds what a default Linkerd
install puts there: linkerd-config (from a fixture), linkerd-identity-trust-roots, kube-root-ca.crt.

Request counts (GET, LIST, WATCH, discovery): GET /_counts answers them as JSON; they are also
printed on stderr at exit.
"""

import argparse
import copy
import json
import os
import re
import select
import signal
import socket
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

CREATED = "2026-11-30T09:00:00Z"
LINKERD_VERSION = "edge-26.8.3"
# Placeholders of Linkerd's install golden, set to the version the golden was taken from.
PLACEHOLDERS = ("install-control-plane-version", "install-proxy-version", "install-debug-version",
                "dev-undefined")

# kind -> (group, plural, singular, namespaced, shortNames), all at version v1. Verbs as
# `kubectl api-resources -o wide` lists them for these resources.
RESOURCES = {
    "Namespace": ("", "namespaces", "namespace", False, ["ns"]),
    "ConfigMap": ("", "configmaps", "configmap", True, ["cm"]),
    "Pod": ("", "pods", "pod", True, ["po"]),
    "Service": ("", "services", "service", True, ["svc"]),
    "Deployment": ("apps", "deployments", "deployment", True, ["deploy"]),
    "ReplicaSet": ("apps", "replicasets", "replicaset", True, ["rs"]),
    "Job": ("batch", "jobs", "job", True, []),
}
VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
CLUSTER_VERBS = ["create", "delete", "get", "list", "patch", "update", "watch"]
ROOT_CA_DESCRIPTION = (
    "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints "
    "such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across "
    "distributions of Kubernetes clusters.")


def api_version(kind):
    group = RESOURCES[kind][0]
    return f"{group}/v1" if group else "v1"


# ---------------------------------------------------------------- the cluster's objects


def indent_of(line):
    return len(line) - len(line.lstrip())


def read_configmap_yaml(text):
    """The YAML subset Linkerd's ConfigMap fixtures use: nested mappings of plain or quoted
    scalars and `|` block scalars (the standard library has no YAML reader)."""
    lines = [line for line in text.splitlines() if line.strip() != "---"]
    root = {}
    stack, i = [(-1, root)], 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        key, _, value = line.strip().partition(":")
        value = value.strip()
        while stack[-1][0] >= indent_of(line):
            stack.pop()
        parent = stack[-1][1]
        if value in ("|", "|-"):
            start = i
            while i < len(lines) and (not lines[i].strip() or indent_of(lines[i]) > indent_of(line)):
                i += 1
            block = lines[start:i]
            while block and not block[-1].strip():
                block.pop()
            cut = min(indent_of(b) for b in block if b.strip())
            body = "\n".join(b[cut:] for b in block)
            parent[key] = body if value == "|-" else body + "\n"
        elif value == "":
            parent[key] = {}
            stack.append((indent_of(line), parent[key]))
        else:
            parent[key] = json.loads(value) if value[0] == '"' else value.strip("'")
    return root


def fields_v1(tree):
    """The FieldsV1 set of a JSON subtree (maps as `f:` keys, leaves and lists as {})."""
    if not isinstance(tree, dict) or not tree:
        return {}
    return {".": {}, **{f"f:{k}": fields_v1(v) for k, v in tree.items()}}


def metadata_fields(meta):
    """The `f:metadata` set of labels, annotations and ownerReferences (no "." at this level)."""
    kept = ("labels", "annotations", "ownerReferences")
    return {f"f:{k}": fields_v1(v) for k, v in meta.items() if k in kept}


def managed(manager, operation, version, fields, subresource=None):
    entry = {"manager": manager, "operation": operation, "apiVersion": version, "time": CREATED,
             "fieldsType": "FieldsV1", "fieldsV1": fields}
    if subresource:
        entry["subresource"] = subresource
    return entry


class Cluster:
    """Objects keyed by (kind, namespace, name); resourceVersions from one counter, as etcd's."""

    def __init__(self, kube_root_ca):
        self.objects = {}
        self.rv = 1000
        self.kube_root_ca = kube_root_ca

    def add(self, obj, managers):
        meta = obj["metadata"]
        self.rv += 1
        ns = meta.get("namespace", "")
        meta.setdefault("uid", str(uuid.uuid5(uuid.NAMESPACE_URL, f"{obj['kind']}/{ns}/{meta['name']}")))
        meta["resourceVersion"] = str(self.rv)
        meta["creationTimestamp"] = CREATED
        meta["managedFields"] = managers
        self.objects[(obj["kind"], ns, meta["name"])] = obj

    def namespace(self, name, labels=None, annotations=None, applied=False):
        """A Namespace and its kube-root-ca.crt. Made by `kubectl create namespace` (then
        `kubectl annotate`), or applied server-side when `applied`."""
        labels = dict(labels or {}, **{"kubernetes.io/metadata.name": name})
        meta = {"name": name, "labels": labels, **({"annotations": annotations} if annotations else {})}
        obj = {"apiVersion": "v1", "kind": "Namespace", "metadata": meta,
               "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}}
        if applied:
            self.applied(obj)
        else:
            managers = [managed("kubectl-create", "Update", "v1",
                                {"f:metadata": metadata_fields({"labels": labels})})]
            if annotations:
                managers.append(managed("kubectl-annotate", "Update", "v1",
                                        {"f:metadata": metadata_fields({"annotations": annotations})}))
            self.add(obj, managers)
        self.root_ca(name)

    def root_ca(self, namespace):
        """kube-root-ca.crt, put in every namespace by kube-controller-manager's root-ca-cert-publisher."""
        meta = {"name": "kube-root-ca.crt", "namespace": namespace,
                "annotations": {"kubernetes.io/description": ROOT_CA_DESCRIPTION}}
        data = {"ca.crt": self.kube_root_ca}
        fields = {"f:data": fields_v1(data), "f:metadata": metadata_fields(meta)}
        self.add({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data},
                 [managed("kube-controller-manager", "Update", "v1", fields)])

    def applied(self, obj):
        """An object applied server-side (`kubectl apply --server-side`): one Apply entry."""
        fields = {f"f:{k}": fields_v1(v) for k, v in obj.items() if k in ("data", "spec") and v}
        fields["f:metadata"] = metadata_fields(obj["metadata"])
        self.add(obj, [managed("kubectl", "Apply", obj["apiVersion"], fields)])

    def workload(self, obj):
        """A Deployment or ReplicaSet as its controller leaves it (status written through /status)."""
        kind, meta, spec = obj["kind"], obj["metadata"], obj.get("spec", {})
        replicas = spec.get("replicas", 1)
        status = {"replicas": replicas, "availableReplicas": replicas, "readyReplicas": replicas,
                  "observedGeneration": 1}
        if kind == "ReplicaSet":
            status["fullyLabeledReplicas"] = replicas
            meta.setdefault("annotations", {}).update({
                "deployment.kubernetes.io/desired-replicas": str(replicas),
                "deployment.kubernetes.io/max-replicas": str(replicas + 1),
                "deployment.kubernetes.io/revision": "1"})
        meta.setdefault("generation", 1)
        obj["status"] = status
        writer = "kube-controller-manager" if kind == "ReplicaSet" else "kubectl-client-side-apply"
        fields = {"f:metadata": metadata_fields(meta), "f:spec": fields_v1(spec)}
        self.add(obj, [
            managed(writer, "Update", obj["apiVersion"], fields),
            managed("kube-controller-manager", "Update", obj["apiVersion"],
                    {"f:status": fields_v1(status)}, "status"),
        ])


def linkerd_control_plane(cluster, fixture):
    """Namespace `linkerd` with the ConfigMaps of a default install: linkerd-config (the
    fixture, placeholders set to the version), the trust roots (the same values'
    identityTrustAnchorsPEM, labelled as Linkerd's chart does) and kube-root-ca.crt."""
    text = open(fixture, encoding="utf-8").read()
    for placeholder in PLACEHOLDERS:
        text = text.replace(placeholder, LINKERD_VERSION)
    config = dict(read_configmap_yaml(text), apiVersion="v1", kind="ConfigMap")
    anchors = re.search(r"^identityTrustAnchorsPEM: \|\n((?:  .*\n)+)", config["data"]["values"], re.M)
    pem = "".join(line[2:] + "\n" for line in anchors.group(1).splitlines())
    cluster.namespace("linkerd", labels={"linkerd.io/is-control-plane": "true",
                                         "config.linkerd.io/admission-webhooks": "disabled",
                                         "linkerd.io/control-plane-ns": "linkerd"},
                      annotations={"linkerd.io/inject": "disabled"}, applied=True)
    cluster.applied(config)
    labels = {"linkerd.io/control-plane-component": "identity", "linkerd.io/control-plane-ns": "linkerd"}
    cluster.applied({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": "linkerd-identity-trust-roots", "namespace": "linkerd", "labels": labels,
        "annotations": dict(config["metadata"]["annotations"])}, "data": {"ca-bundle.crt": pem}})


def build_cluster(args):
    cluster = Cluster(open(args.kube_root_ca, encoding="utf-8").read())
    for name in ("default", "kube-system", "kube-public", "kube-node-lease"):
        cluster.namespace(name)
    linkerd_control_plane(cluster, args.linkerd_config)
    objects = [obj for path in args.objects or [] for obj in json.load(open(path, encoding="utf-8"))]
    for obj in objects:
        obj = copy.deepcopy(obj)
        key = (obj["kind"], obj["metadata"].get("namespace", ""), obj["metadata"]["name"])
        if key in cluster.objects:  # the first file that holds an object wins
            continue
        if obj["kind"] == "Namespace":
            cluster.namespace(obj["metadata"]["name"], annotations=obj["metadata"].get("annotations"))
        elif obj["kind"] in ("Deployment", "ReplicaSet"):
            cluster.workload(obj)
        else:
            cluster.applied(obj)
    return cluster


# ---------------------------------------------------------------- selectors


def label_selector_matches(selector, labels):
    """Equality-based selectors: `k=v`, `k==v`, `k!=v`, `k`, `!k`, comma-separated."""
    for term in filter(None, (t.strip() for t in (selector or "").split(","))):
        if "!=" in term:
            k, v = term.split("!=", 1)
            ok = labels.get(k) != v
        elif "=" in term:
            k, v = re.split("==?", term, maxsplit=1)
            ok = labels.get(k) == v
        else:
            ok = (term[1:] not in labels) if term.startswith("!") else (term in labels)
        if not ok:
            return False
    return True


def field_selector_matches(selector, obj):
    """`metadata.name` and `metadata.namespace` equality terms."""
    meta = obj["metadata"]
    have = {"metadata.name": meta["name"], "metadata.namespace": meta.get("namespace", "")}
    for term in filter(None, (selector or "").split(",")):
        k, v = re.split("==?", term, maxsplit=1)
        if have.get(k) != v:
            return False
    return True


# ---------------------------------------------------------------- discovery and paths


def api_resource_list(group):
    resources = []
    for kind, (g, plural, singular, namespaced, short) in sorted(RESOURCES.items()):
        if g == group:
            r = {"name": plural, "singularName": singular, "namespaced": namespaced, "kind": kind,
                 "verbs": VERBS if namespaced else CLUSTER_VERBS}
            resources.append(dict(r, shortNames=short) if short else r)
            resources.append({"name": f"{plural}/status", "singularName": "", "namespaced": namespaced,
                              "kind": kind, "verbs": ["get", "patch", "update"]})
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": f"{group}/v1" if group else "v1",
            "resources": resources}


def discovery(path, port):
    if path == "/version":
        return {"major": "1", "minor": "33", "gitVersion": "v1.33.4", "gitCommit": "0" * 40,
                "gitTreeState": "clean", "buildDate": "2025-08-12T18:00:00Z", "goVersion": "go1.24.5",
                "compiler": "gc", "platform": "linux/amd64"}
    if path == "/api":
        return {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": f"127.0.0.1:{port}"}]}
    if path == "/apis":
        groups = sorted({g for g, *_ in RESOURCES.values() if g})
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [
            {"name": g, "versions": [{"groupVersion": f"{g}/v1", "version": "v1"}],
             "preferredVersion": {"groupVersion": f"{g}/v1", "version": "v1"}} for g in groups]}
    m = re.fullmatch(r"/api/v1|/apis/([^/]+)/v1", path)
    return api_resource_list(m.group(1) or "") if m else None


PREFIX = re.compile(r"/api/v1|/apis/(?P<group>[^/]+)/v1")
TAIL = re.compile(r"(?:/namespaces/(?P<ns>[^/]+))?/(?P<plural>[^/]+)(?:/(?P<name>[^/]+))?")


def parse_resource_path(path):
    """(kind, namespace or None, name or None) of a resource path, or None. /api/v1/namespaces/<n>
    is the Namespace <n>; /api/v1/namespaces/<n>/configmaps the ConfigMaps of <n>."""
    m = PREFIX.match(path)
    t = m and TAIL.fullmatch(path[m.end():])
    if not t:
        return None
    for kind, (group, plural, *_rest) in RESOURCES.items():
        if group == (m.group("group") or "") and plural == t.group("plural"):
            return kind, t.group("ns"), t.group("name")
    return None


def status_404(message, name=None, kind=None):
    doc = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
           "reason": "NotFound", "code": 404}
    return dict(doc, details={"name": name, "kind": kind}) if name else doc


# ---------------------------------------------------------------- HTTP


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake-apiserver/1"

    def log_message(self, fmt, *args):
        if self.server.verbose:
            sys.stderr.write("fake-apiserver: " + fmt % args + "\n")

    def send_json(self, code, doc):
        body = json.dumps(doc, separators=(",", ":")).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        url = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        srv = self.server
        if url.path == "/_counts":
            return self.send_json(200, srv.snapshot())
        doc = discovery(url.path, srv.server_address[1])
        if doc is not None:
            srv.count("discovery", url.path)
            return self.send_json(200, doc)
        target = parse_resource_path(url.path)
        if target is None:
            return self.send_json(404, status_404("the server could not find the requested resource"))
        kind, ns, name = target
        if name is not None:
            srv.count("get", url.path)
            return self.get(kind, ns, name)
        if query.get("watch") in ("true", "1"):
            srv.count("watch", url.path)
            return self.watch(kind, query)
        srv.count("list", url.path)
        time.sleep(srv.list_delay)
        return self.send_json(200, self.list_doc(kind, ns, query))

    def get(self, kind, ns, name):
        obj = self.server.cluster.objects.get((kind, ns or "", name))
        if obj:
            return self.send_json(200, obj)
        group, plural = RESOURCES[kind][0], RESOURCES[kind][1]
        resource = f"{plural}.{group}" if group else plural
        return self.send_json(404, status_404(f'{resource} "{name}" not found', name, plural))

    def list_doc(self, kind, ns, query):
        items = []
        for (k, n, _name), obj in sorted(self.server.cluster.objects.items()):
            labels = obj["metadata"].get("labels", {})
            if k == kind and (ns is None or n == ns) \
                    and label_selector_matches(query.get("labelSelector"), labels) \
                    and field_selector_matches(query.get("fieldSelector"), obj):
                items.append({key: v for key, v in obj.items() if key not in ("apiVersion", "kind")})
        return {"kind": f"{kind}List", "apiVersion": api_version(kind),
                "metadata": {"resourceVersion": str(self.server.cluster.rv)}, "items": items}

    def watch(self, kind, query):
        """Nothing changes: hold the stream open (BOOKMARKs when asked) until the client leaves
        or timeoutSeconds ends, then end the chunked body as a real API server does."""
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()
        deadline = time.monotonic() + float(query.get("timeoutSeconds", 1800))
        bookmarks = query.get("allowWatchBookmarks") in ("true", "1")
        next_bookmark = time.monotonic() + self.server.bookmark_interval
        try:
            while time.monotonic() < deadline and not self.server.stopping.is_set():
                if self.client_gone(1.0):
                    return
                if bookmarks and time.monotonic() >= next_bookmark:
                    next_bookmark += self.server.bookmark_interval
                    self.bookmark(kind)
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            return
        finally:
            self.close_connection = True

    def bookmark(self, kind):
        event = {"type": "BOOKMARK", "object": {"kind": kind, "apiVersion": api_version(kind),
                                                "metadata": {"resourceVersion": str(self.server.cluster.rv)}}}
        chunk = json.dumps(event, separators=(",", ":")).encode() + b"\n"
        self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        self.wfile.flush()

    def client_gone(self, timeout):
        readable, _, _ = select.select([self.connection], [], [], timeout)
        if not readable:
            return False
        try:
            return self.connection.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address, cluster, args):
        super().__init__(address, Handler)
        self.cluster = cluster
        self.list_delay = args.list_delay
        self.bookmark_interval = args.bookmark_interval
        self.verbose = args.verbose
        self.stopping = threading.Event()
        self.lock = threading.Lock()
        self.counts = {"get": 0, "list": 0, "watch": 0, "discovery": 0}
        self.paths = {}

    def count(self, verb, path):
        with self.lock:
            self.counts[verb] += 1
            key = f"{verb.upper()} {path}"
            self.paths[key] = self.paths.get(key, 0) + 1

    def snapshot(self):
        with self.lock:
            return dict(self.counts, paths=dict(sorted(self.paths.items())))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--port", type=int, default=0, help="0: any free port (see --port-file)")
    p.add_argument("--port-file", help="write the port here once listening")
    p.add_argument("--linkerd-config", required=True, help="a linkerd-config ConfigMap fixture (YAML)")
    p.add_argument("--kube-root-ca", required=True, help="PEM served as ca.crt of kube-root-ca.crt")
    p.add_argument("--objects", action="append",
                   help="JSON array of workload objects (Namespaces, Deployments, ReplicaSets); repeatable, "
                        "an object already given is kept as first given")
    p.add_argument("--list-delay", type=float, default=0.0, help="seconds before a LIST answers (a slow API)")
    p.add_argument("--bookmark-interval", type=float, default=60.0, help="seconds between BOOKMARK events")
    p.add_argument("--dump", action="store_true", help="print every object as JSON and exit")
    p.add_argument("--verbose", action="store_true")
    args = p.parse_args()
    cluster = build_cluster(args)
    if args.dump:
        json.dump([o for _, o in sorted(cluster.objects.items())], sys.stdout, indent=1)
        return
    server = Server(("127.0.0.1", args.port), cluster, args)

    def stop(_sig, _frame):
        server.stopping.set()
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    if args.port_file:
        with open(args.port_file + ".tmp", "w", encoding="utf-8") as f:
            f.write(str(server.server_address[1]))
        os.replace(args.port_file + ".tmp", args.port_file)
    server.serve_forever(poll_interval=0.2)
    print(json.dumps(server.snapshot()), file=sys.stderr)


if __name__ == "__main__":
    main()
