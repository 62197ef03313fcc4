#!/usr/bin/env python3
"""Structural checks of deploy/ without a cluster and without kustomize.

Renders each kustomization of deploy/k8s the way kustomize would for the
features used here (resources, namespace, configMapGenerator, images, JSON
patches), then checks what a cluster would only tell at apply time:

  * every YAML document parses and has apiVersion, kind and metadata.name;
  * every file a kustomization names exists (resources, generator files, envs);
  * workload selectors match their pod templates, Services select some pod and
    name ports those pods have, prometheus.io/port names a container port;
  * ConfigMaps, Secrets and PVCs that pods use exist (or are marked optional);
  * the TT_* variables given to the containers are ones docker/tensortier-entrypoint
    reads (also for deploy/compose), so a typo cannot pass silently;
  * the learner asks for nvidia.com/gpu in base and overlays/gpu, not in overlays/cpu;
    workers run only on labelled nodes, the fsdax ones with a hostPath mount;
  * the fleet-keys Secret is a placeholder holding no key material;
  * the dashboards JSON parses and each generated ConfigMap fits in 1 MiB.

  check_k8s.py SOURCE_DIR      exit 0: all passed, 1: failures (listed)
"""
import copy
import json
import os
import re
import sys

import yaml

SRC = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
K8S = os.path.join(SRC, "deploy", "k8s")
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL: " + msg)


def rel(path):
    return os.path.relpath(path, SRC)


def load_docs(path):
    with open(path) as f:
        docs = [d for d in yaml.safe_load_all(f) if d is not None]
    for i, d in enumerate(docs):
        where = "%s (document %d)" % (rel(path), i + 1)
        if not isinstance(d, dict):
            fail(where + ": not a mapping")
            continue
        for key in ("apiVersion", "kind"):
            if key not in d:
                fail(where + ": no " + key)
        if not (d.get("metadata") or {}).get("name"):
            fail(where + ": no metadata.name")
    return [d for d in docs if isinstance(d, dict)]


def read_env_file(path):
    out = {}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            if "=" not in line:
                fail("%s:%d: not NAME=VALUE" % (rel(path), n))
                continue
            k, v = line.split("=", 1)
            out[k] = v
    return out


# ---- A small kustomize: what the kustomizations of deploy/k8s use.
def json_pointer_parts(path):
    return [p.replace("~1", "/").replace("~0", "~") for p in path.lstrip("/").split("/")]


def apply_json_patch(obj, ops, where):
    for op in ops:
        parts = json_pointer_parts(op["path"])
        parent = obj
        try:
            for p in parts[:-1]:
                parent = parent[int(p)] if isinstance(parent, list) else parent[p]
            last = parts[-1]
            if op["op"] == "add":
                if isinstance(parent, list):
                    parent.insert(len(parent) if last == "-" else int(last), copy.deepcopy(op["value"]))
                else:
                    parent[last] = copy.deepcopy(op["value"])
            elif op["op"] == "remove":
                if isinstance(parent, list):
                    del parent[int(last)]
                else:
                    del parent[last]
            elif op["op"] == "replace":
                if isinstance(parent, list):
                    parent[int(last)] = copy.deepcopy(op["value"])
                else:
                    if last not in parent:
                        raise KeyError(last)
                    parent[last] = copy.deepcopy(op["value"])
            else:
                fail("%s: patch op %s not understood by this check" % (where, op["op"]))
        except (KeyError, IndexError, ValueError, TypeError) as e:
            fail("%s: patch %s %s does not apply (%s)" % (where, op["op"], op["path"], e))


def render(kdir, seen=()):
    """Returns the objects of the kustomization in kdir."""
    kfile = os.path.join(kdir, "kustomization.yaml")
    if kdir in seen:
        fail(rel(kfile) + ": resource cycle")
        return []
    with open(kfile) as f:
        k = yaml.safe_load(f) or {}
    where = rel(kfile)
    if k.get("kind") not in ("Kustomization", None):
        fail(where + ": kind " + str(k.get("kind")))
    objs = []
    for r in k.get("resources", []):
        p = os.path.normpath(os.path.join(kdir, r))
        if os.path.isdir(p):
            if not os.path.exists(os.path.join(p, "kustomization.yaml")):
                fail("%s: resource %s is a directory without kustomization.yaml" % (where, r))
                continue
            objs += render(p, seen + (kdir,))
        elif os.path.isfile(p):
            objs += [copy.deepcopy(d) for d in load_docs(p)]
        else:
            fail("%s: resource %s does not exist" % (where, r))
    for g in k.get("configMapGenerator", []):
        data = {}
        for entry in g.get("files", []):
            key, _, path = entry.rpartition("=")
            p = os.path.normpath(os.path.join(kdir, path))
            if not os.path.isfile(p):
                fail("%s: generator %s: no file %s" % (where, g["name"], path))
                continue
            with open(p) as f:
                data[key or os.path.basename(p)] = f.read()
        for env in g.get("envs", []):
            p = os.path.normpath(os.path.join(kdir, env))
            if not os.path.isfile(p):
                fail("%s: generator %s: no env file %s" % (where, g["name"], env))
                continue
            data.update(read_env_file(p))
        size = sum(len(v.encode()) for v in data.values())
        if size > 1024 * 1024:
            fail("%s: ConfigMap %s holds %d bytes, over the 1 MiB limit" % (where, g["name"], size))
        objs.append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": g["name"]}, "data": data,
                     "_generated": True})
    ns = k.get("namespace")
    if ns:
        for o in objs:
            if o["kind"] != "Namespace":
                o["metadata"]["namespace"] = ns
    for img in k.get("images", []):
        for o in objs:
            for c in pod_containers(o):
                name, _, _ = c.get("image", "").partition(":")
                if name == img["name"] and "newTag" in img:
                    c["image"] = name + ":" + str(img["newTag"])
    for i, p in enumerate(k.get("patches", [])):
        t = p.get("target", {})
        ops = yaml.safe_load(p["patch"]) if "patch" in p else None
        if not isinstance(ops, list):
            fail("%s: patch %d is not a JSON 6902 list (not understood by this check)" % (where, i + 1))
            continue
        hits = [o for o in objs
                if o["kind"] == t.get("kind") and o["metadata"]["name"] == t.get("name")]
        if not hits:
            fail("%s: patch %d targets %s/%s, which is not there" % (where, i + 1, t.get("kind"), t.get("name")))
        for o in hits:
            apply_json_patch(o, ops, "%s patch %d" % (where, i + 1))
    return objs


def pod_spec(o):
    if o.get("kind") in ("Deployment", "DaemonSet", "StatefulSet", "Job"):
        return ((o.get("spec") or {}).get("template") or {}).get("spec") or {}
    return None


def pod_containers(o):
    s = pod_spec(o)
    return (s.get("containers") or []) + (s.get("initContainers") or []) if s else []


def entrypoint_variables():
    with open(os.path.join(SRC, "docker", "tensortier-entrypoint")) as f:
        return set(re.findall(r"\bTT_[A-Z_]+\b", f.read()))


def check_objects(name, objs, known_vars):
    where = "deploy/k8s/" + name
    by_kind = {}
    for o in objs:
        key = (o["kind"], o["metadata"]["name"])
        if key in by_kind:
            fail("%s: %s/%s defined twice" % (where, key[0], key[1]))
        by_kind[key] = o
    names = lambda kind: {n for (k, n) in by_kind if k == kind}
    pods = [o for o in objs if pod_spec(o) is not None]
    for o in pods:
        what = "%s: %s/%s" % (where, o["kind"], o["metadata"]["name"])
        spec = o["spec"]
        labels = (spec["template"].get("metadata") or {}).get("labels") or {}
        sel = (spec.get("selector") or {}).get("matchLabels") or {}
        if not sel or any(labels.get(k) != v for k, v in sel.items()):
            fail(what + ": selector %s does not match the pod labels %s" % (sel, labels))
        ps = pod_spec(o)
        vols = {v["name"]: v for v in ps.get("volumes", [])}
        ports = {p.get("name"): p["containerPort"] for c in pod_containers(o) for p in c.get("ports", [])}
        ann = (spec["template"].get("metadata") or {}).get("annotations") or {}
        if ann.get("prometheus.io/scrape") == "true":
            if int(ann.get("prometheus.io/port", "0")) not in ports.values():
                fail(what + ": prometheus.io/port %s is no container port" % ann.get("prometheus.io/port"))
        for c in pod_containers(o):
            if not c.get("image"):
                fail(what + ": container %s has no image" % c.get("name"))
            for m in c.get("volumeMounts", []):
                if m["name"] not in vols:
                    fail(what + ": mount of undefined volume " + m["name"])
            for e in c.get("envFrom", []):
                ref = e.get("configMapRef") or e.get("secretRef") or {}
                kind = "ConfigMap" if "configMapRef" in e else "Secret"
                if ref.get("name") not in names(kind) and not ref.get("optional"):
                    fail(what + ": envFrom %s %s does not exist" % (kind, ref.get("name")))
                if kind == "ConfigMap" and ref.get("name") in names(kind):
                    for var in by_kind[(kind, ref["name"])].get("data", {}):
                        if var.startswith("TT_") and var not in known_vars:
                            fail("%s: ConfigMap %s sets %s, which docker/tensortier-entrypoint does not read"
                                 % (where, ref["name"], var))
            for e in c.get("env", []):
                if e["name"].startswith("TT_") and e["name"] not in known_vars:
                    fail(what + ": env %s is not read by docker/tensortier-entrypoint" % e["name"])
                ref = (e.get("valueFrom") or {}).get("secretKeyRef") or (e.get("valueFrom") or {}).get("configMapKeyRef")
                if ref and not ref.get("optional"):
                    kind = "Secret" if "secretKeyRef" in e["valueFrom"] else "ConfigMap"
                    if ref["name"] not in names(kind):
                        fail(what + ": env %s refers to a missing %s %s" % (e["name"], kind, ref["name"]))
            for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
                port = ((c.get(probe) or {}).get("httpGet") or {}).get("port")
                if isinstance(port, str) and port not in ports:
                    fail(what + ": %s port %s is not a named container port" % (probe, port))
        for v in vols.values():
            for kind, field, ref in (("ConfigMap", "configMap", "name"), ("Secret", "secret", "secretName"),
                                     ("PersistentVolumeClaim", "persistentVolumeClaim", "claimName")):
                src = v.get(field)
                if src and src[ref] not in names(kind) and not src.get("optional"):
                    fail(what + ": volume %s: %s %s does not exist" % (v["name"], kind, src[ref]))
    for svc in (o for o in objs if o["kind"] == "Service"):
        what = "%s: Service/%s" % (where, svc["metadata"]["name"])
        sel = svc["spec"].get("selector") or {}
        matched = [o for o in pods
                   if all(((o["spec"]["template"].get("metadata") or {}).get("labels") or {}).get(k) == v
                          for k, v in sel.items())]
        if not matched:
            fail(what + ": selects no pod")
        for p in svc["spec"].get("ports", []):
            tp = p.get("targetPort", p["port"])
            for o in matched:
                cports = {cp.get("name"): cp["containerPort"] for c in pod_containers(o) for cp in c.get("ports", [])}
                if (isinstance(tp, str) and tp not in cports) or (isinstance(tp, int) and tp not in cports.values()):
                    fail(what + ": targetPort %s is not a port of %s" % (tp, o["metadata"]["name"]))
    for o in objs:
        if o["kind"] == "RoleBinding":
            if (o["roleRef"]["kind"], o["roleRef"]["name"]) not in by_kind:
                fail("%s: RoleBinding %s: no %s %s" % (where, o["metadata"]["name"], o["roleRef"]["kind"],
                                                      o["roleRef"]["name"]))
            for s in o.get("subjects", []):
                if s["kind"] == "ServiceAccount" and ("ServiceAccount", s["name"]) not in by_kind:
                    fail("%s: RoleBinding %s: no ServiceAccount %s" % (where, o["metadata"]["name"], s["name"]))
    return by_kind


def learner_gpu(by_kind):
    d = by_kind.get(("Deployment", "tensortier-learner"))
    if not d:
        return None
    limits = (pod_containers(d)[0].get("resources") or {}).get("limits") or {}
    return limits.get("nvidia.com/gpu")


def check_fleet(name, by_kind):
    where = "deploy/k8s/" + name
    gpu = learner_gpu(by_kind)
    if name.endswith("cpu"):
        if gpu is not None:
            fail(where + ": the CPU overlay still asks for nvidia.com/gpu")
        env = {e["name"]: e.get("value") for e in pod_containers(by_kind[("Deployment", "tensortier-learner")])[0]
               .get("env", [])}
        if env.get("TT_DEVICE") != "cpu":
            fail(where + ": the CPU overlay does not set TT_DEVICE=cpu")
    elif gpu is None:
        fail(where + ": the learner does not ask for nvidia.com/gpu")
    workers = [o for (k, n), o in by_kind.items() if k == "DaemonSet"]
    if not workers:
        fail(where + ": no worker DaemonSet")
    for ds in workers:
        ps = pod_spec(ds)
        what = "%s: DaemonSet/%s" % (where, ds["metadata"]["name"])
        node_sel = ps.get("nodeSelector") or {}
        terms = (((ps.get("affinity") or {}).get("nodeAffinity") or {})
                 .get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms") or []
        if not any(k.startswith("tensortier.io/") for k in node_sel) and not any(
                e["key"].startswith("tensortier.io/") for t in terms for e in t.get("matchExpressions", [])):
            fail(what + ": runs on every node (no tensortier.io/ node label selects it)")
        env = {e["name"]: e.get("value") for e in pod_containers(ds)[0].get("env", [])}
        tier = env.get("TT_SLOW_TIER", "")
        if tier.startswith("pmem:"):
            mount_dir = tier[len("pmem:"):]
            mounts = {m["mountPath"]: m["name"] for m in pod_containers(ds)[0].get("volumeMounts", [])}
            vols = {v["name"]: v for v in ps.get("volumes", [])}
            if mount_dir not in mounts or "hostPath" not in vols.get(mounts[mount_dir], {}):
                fail(what + ": TT_SLOW_TIER=%s but no hostPath volume is mounted there" % tier)
        if tier == "dax-kmem":
            caps = ((pod_containers(ds)[0].get("securityContext") or {}).get("capabilities") or {}).get("add") or []
            if "SYS_NICE" not in caps:
                fail(what + ": dax-kmem needs CAP_SYS_NICE (mbind under the RuntimeDefault seccomp profile)")
    secret = by_kind.get(("Secret", "tensortier-fleet-keys"))
    if not secret:
        fail(where + ": no tensortier-fleet-keys Secret placeholder")
    elif secret.get("data") or secret.get("stringData"):
        fail(where + ": the tensortier-fleet-keys placeholder holds data: keys are never committed")


def check_compose(known_vars):
    cdir = os.path.join(SRC, "deploy", "compose")
    for fname in sorted(os.listdir(cdir)):
        if not fname.startswith("docker-compose") or not fname.endswith(".yml"):
            continue
        with open(os.path.join(cdir, fname)) as f:
            doc = yaml.safe_load(f)
        for sname, svc in (doc.get("services") or {}).items():
            env = svc.get("environment") or {}
            keys = env.keys() if isinstance(env, dict) else [e.split("=", 1)[0] for e in env]
            for k in keys:
                if k.startswith("TT_") and k not in known_vars:
                    fail("deploy/compose/%s: service %s sets %s, which docker/tensortier-entrypoint does not read"
                         % (fname, sname, k))
            for v in svc.get("volumes") or []:
                host = v.split(":", 1)[0] if isinstance(v, str) else ""
                if host.startswith(".") and "$" not in host and not os.path.exists(os.path.join(cdir, host)):
                    fail("deploy/compose/%s: service %s mounts %s, which does not exist" % (fname, sname, host))


def main():
    known_vars = entrypoint_variables()
    for root, _, files in os.walk(os.path.join(SRC, "deploy")):
        for fn in files:
            if fn.endswith((".yaml", ".yml")):
                with open(os.path.join(root, fn)) as f:
                    try:
                        list(yaml.safe_load_all(f))
                    except yaml.YAMLError as e:
                        fail("%s: %s" % (rel(os.path.join(root, fn)), e))
    for fn in ("convergence.json", "fleet.json", "memory.json"):
        p = os.path.join(SRC, "dashboards", "grafana", fn)
        try:
            with open(p) as f:
                json.load(f)
        except (OSError, ValueError) as e:
            fail("%s: %s" % (rel(p), e))
    kdirs = sorted(os.path.relpath(r, K8S) for r, _, fs in os.walk(K8S) if "kustomization.yaml" in fs)
    for name in kdirs:
        objs = render(os.path.join(K8S, name))
        by_kind = check_objects(name, objs, known_vars)
        if name == "base" or name.startswith("overlays"):
            check_fleet(name, by_kind)
        print("deploy/k8s/%s: %d objects (%s)" % (name, len(objs), ", ".join(
            sorted({o["kind"] for o in objs}))))
    check_compose(known_vars)
    if failures:
        print("%d failure(s)" % len(failures))
        return 1
    print("deploy/ manifests: all structural checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
