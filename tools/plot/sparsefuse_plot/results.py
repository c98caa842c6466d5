"""Finding, validating and organising result.json files (sparsefuse-result/1).

A results directory is searched recursively for files named result.json.
Each becomes a Result: its model, worker count, scheme and, when several
results differ in some other scenario setting at the same model, scale and
scheme (a sweep over bandwidth, say), a "variant" naming that setting. The
series a figure draws are keyed by (scheme label, variant); the scheme label
is the preset name, plus the knobs that distinguish results of one preset.
"""
import json
import math
import os
import re
from collections import Counter, defaultdict

from sparsefuse_plot import style
from sparsefuse_plot.stats import mean_ci95

FORMAT_PREFIX = "sparsefuse-result/"
BREAKDOWN_KEYS = ("forward", "backward", "compression", "communication_exposed", "sync_wait", "optimizer")
BREAKDOWN_NAMES = {
    "forward": "forward",
    "backward": "backward",
    "compression": "compression",
    "communication_exposed": "exposed communication",
    "sync_wait": "sync wait",
    "optimizer": "optimizer",
}
# Scenario settings that identify a series rather than a variant of it.
_IDENTITY_KEYS = ("description", "model", "workers", "scheme")
# Settings whose values make repetitions of one configuration, not variants: results that
# differ only in these are drawn as one point, their mean with a 95% interval.
REPEAT_KEYS = ("seed",)


class InputProblem(Exception):
    """Bad input (exit status 2): the message names the file and what was expected."""


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _at(doc, pointer, file):
    node = doc
    for part in pointer.strip("/").split("/"):
        if isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        elif isinstance(node, dict) and part in node:
            node = node[part]
        else:
            raise InputProblem(f"{file}: at {pointer}: missing; expected a sparsefuse-result/1 file")
    return node


# Larger values are no time, rate or size a run produces, and their squares and sums (the 95%
# intervals of repeats) would overflow a float.
_MAX_NUMBER = 1e18


def _number(doc, pointer, file, positive=False):
    value = _at(doc, pointer, file)
    if not _is_number(value) or (positive and value <= 0) or (not positive and value < 0) or value > _MAX_NUMBER:
        raise InputProblem(f"{file}: at {pointer}: expected a number {'> 0' if positive else '>= 0'} "
                           f"and <= {_MAX_NUMBER:g}, got {json.dumps(value)[:40]}")
    return float(value)


def model_label(model):
    """The scenario's "model": a built-in name, or {"trace": path} (named after the file)."""
    if isinstance(model, str):
        return model
    if isinstance(model, dict) and isinstance(model.get("trace"), str):
        name = os.path.basename(model["trace"])
        return name[:-5] if name.endswith(".json") else name
    if isinstance(model, dict) and isinstance(model.get("name"), str):
        return model["name"]
    return json.dumps(model, sort_keys=True)[:40]


def flatten(node, prefix=""):
    """{"a": {"b": 1}} -> {"a.b": 1}; lists are kept whole."""
    out = {}
    if isinstance(node, dict):
        for key, value in node.items():
            out.update(flatten(value, f"{prefix}{key}."))
    else:
        out[prefix[:-1]] = node
    return out


# Units by key suffix (DESIGN: every JSON key with a unit names it). Longest suffixes first:
# "gpu_memory_gbytes_per_s" is GB/s, not seconds.
UNIT_SUFFIXES = (("_gbytes_per_s", "GB/s"), ("_samples_per_s", "samples/s"), ("_per_s", "/s"), ("_gbps", "Gb/s"),
                 ("_us", "us"), ("_ns", "ns"), ("_s", "s"), ("_bytes", "B"))


def key_unit(key):
    """The unit a key's suffix names, or "" when it names none."""
    for suffix, unit in UNIT_SUFFIXES:
        if key.endswith(suffix):
            return unit
    return ""


def value_sort_key(value):
    """Orders setting values numerically (0, 5, 10, 22, 50, 100, not as strings), then strings
    in the presets' order, then anything else by its JSON text."""
    if _is_number(value):
        return (0, float(value), "")
    if isinstance(value, str):
        return (1, style.preset_rank(value), value)
    return (2, 0.0, json.dumps(value, sort_keys=True))


# Absolute paths (/home/x/..., C:\...) in descriptions copied from result.json: a caption
# shipped with a figure must not carry a developer's directory layout.
_ABSOLUTE_PATH = re.compile(r"(?<![\w.:/])(?:/|[A-Za-z]:\\)[^\s,;|()'\"]*[/\\]([^\s,;|()'\"/\\]+)")


# Section references into notes kept outside the repository ("<name>.md §1.2"), which
# results written by older versions carry in their descriptions.
_EXTERNAL_SECTION = re.compile(r"(?:,\s*|\s*\()?\b[\w-]+\.md\s*§\s*[\d.]+(?:\s*[-,]\s*§?\s*[\d.]+)*\)?")


def portable_text(text):
    """TEXT with every absolute path replaced by its file name and references to documents
    outside the repository removed."""
    def drop(m):
        # "(notes.md §1.2)" goes whole; ", notes.md §1.2)" leaves the bracket it closes.
        whole = m.group(0)
        return ")" if whole.endswith(")") and not whole.lstrip().startswith("(") else ""
    return _EXTERNAL_SECTION.sub(drop, _ABSOLUTE_PATH.sub(lambda m: m.group(1), text))


def format_value(key, value, units=True):
    """A compact rendering of a setting for labels; byte sizes in KiB/MiB/GiB, other units
    (from the key's suffix) appended when UNITS."""
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if _is_number(value):
        if key.endswith("_bytes") and value >= 1024 and float(value).is_integer():
            for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
                if value >= size and value % (size // 16) == 0:
                    return f"{value / size:g} {unit}"
        text = f"{value:g}"
        if not units:
            return text
        unit = key_unit(key)
        return text + (" " + unit if unit else "")
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True)


def lookup(scenario, dotted):
    node = scenario
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            raise KeyError(dotted)
        node = node[part]
    return node


class Result:
    def __init__(self, path, rel, doc):
        self.path = path
        self.rel = rel
        self.doc = doc
        file = rel
        fmt = doc.get("format") if isinstance(doc, dict) else None
        if not isinstance(doc, dict) or not isinstance(fmt, str) or not fmt.startswith(FORMAT_PREFIX):
            raise InputProblem(f"{file}: at /format: expected \"sparsefuse-result/1\", got "
                               f"{json.dumps(fmt) if isinstance(doc, dict) else 'a non-object document'}")
        self.iteration = {k: _number(doc, f"/iteration_time_s/{k}", file, positive=True)
                          for k in ("mean", "p50", "p99", "min", "max")}
        self.throughput = _number(doc, "/throughput_samples_per_s", file, positive=True)
        self.breakdown = {k: _number(doc, f"/breakdown_s/{k}", file) for k in BREAKDOWN_KEYS}
        buckets = _at(doc, "/buckets", file)
        if not isinstance(buckets, list):
            raise InputProblem(f"{file}: at /buckets: expected an array of buckets")
        for i, bucket in enumerate(buckets):
            for key in ("tensors", "bytes_per_worker", "elements"):
                _number(doc, f"/buckets/{i}/{key}", file)
        self.buckets = buckets
        scenario = _at(doc, "/scenario", file)
        if not isinstance(scenario, dict):
            raise InputProblem(f"{file}: at /scenario: expected an object")
        self.scenario = scenario
        self.model = model_label(_at(doc, "/scenario/model", file))
        workers = _at(doc, "/scenario/workers", file)
        if not isinstance(workers, int) or isinstance(workers, bool) or workers < 1:
            raise InputProblem(f"{file}: at /scenario/workers: expected an integer >= 1, got {json.dumps(workers)}")
        self.workers = workers
        scheme = _at(doc, "/scenario/scheme", file)
        if isinstance(scheme, str):
            scheme = {"preset": scheme}
        if not isinstance(scheme, dict) or not isinstance(scheme.get("preset"), str):
            raise InputProblem(f"{file}: at /scenario/scheme/preset: expected the preset name")
        self.scheme = scheme
        self.preset = scheme["preset"]
        provenance = doc.get("trace_provenance", "unknown")
        self.provenance = provenance if isinstance(provenance, str) and provenance else "unknown"
        timeline = os.path.join(os.path.dirname(path), "timeline.json")
        self.timeline = timeline if os.path.isfile(timeline) else None
        self.scheme_label = self.preset
        self.variant = ""
        self.variant_items = ()

    n = 1
    repeats = ()
    ci95 = {}

    @property
    def mean_s(self):
        return self.iteration["mean"]

    @property
    def repeat_id(self):
        """The values of REPEAT_KEYS (JSON text): results of one configuration that differ in them are repeats."""
        return json.dumps([self.scenario.get(k) for k in REPEAT_KEYS])

    @property
    def label(self):
        return f"{self.scheme_label}, {self.variant}" if self.variant else self.scheme_label

    @property
    def is_sparse(self):
        """Whether some bucket sends fewer elements than it covers (sparsified in part or whole)."""
        for b in self.buckets:
            elements = b.get("elements", 0)
            for key in ("dense_elements", "sent_elements"):
                if _is_number(b.get(key)) and b[key] < elements:
                    return True
        return False


class Sweep:
    def __init__(self, path, rel, keys, results):
        self.path = path
        self.rel = rel
        self.keys = keys
        self.results = results  # [(Result, {key: value})]


def find_files(root, names):
    """One walk of ROOT (directories in sorted order): the paths of each of NAMES found below it."""
    found = {name: [] for name in names}
    for directory, subdirs, files in os.walk(root):
        subdirs.sort()
        for name in names:
            if name in files:
                found[name].append(os.path.join(directory, name))
    return found


def _load_json(path, rel):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except json.JSONDecodeError as e:
        raise InputProblem(f"{rel}: malformed JSON: {e.msg} at line {e.lineno} column {e.colno}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise InputProblem(f"{rel}: cannot read: {e}") from None


class Aggregate(Result):
    """Repeats of one configuration (differing only in REPEAT_KEYS) as one result: the mean of
    each time, throughput and breakdown component over the N runs, with the 95% interval
    half-widths of the iteration-time mean and the throughput in ci95. Buckets, scenario and
    timeline are the first run's (the seed changes timing, not the plan)."""

    def __init__(self, runs):
        first = runs[0]
        self.__dict__.update(first.__dict__)
        self.repeats = tuple(runs)
        self.n = len(runs)
        self.iteration = {k: mean_ci95([r.iteration[k] for r in runs])[0] for k in first.iteration}
        self.breakdown = {k: mean_ci95([r.breakdown[k] for r in runs])[0] for k in first.breakdown}
        mean, mean_half = mean_ci95([r.mean_s for r in runs])
        throughput, throughput_half = mean_ci95([r.throughput for r in runs])
        self.iteration["mean"] = mean
        self.throughput = throughput
        self.ci95 = {"iteration_time_mean_s": mean_half, "throughput_samples_per_s": throughput_half}


class ResultSet:
    """All results under a directory, labelled and de-duplicated."""

    def __init__(self, root, baseline=None):
        self.root = os.path.abspath(root)
        if not os.path.isdir(self.root):
            raise InputProblem(f"{root}: not a directory; expected a results directory (holding result.json files)")
        self.warnings = []
        found = find_files(self.root, ("result.json", "sweep.json", "validation.json"))
        paths = found["result.json"]
        if not paths:
            raise InputProblem(f"{root}: no result.json found (searched recursively); write some with "
                               "'sparsefuse compare ... --out DIR' or 'sparsefuse simulate ... --out DIR'")
        self.all = [Result(p, self.rel(p), _load_json(p, self.rel(p))) for p in paths]
        self._label_schemes()
        self._label_variants()
        self._deduplicate()
        self.models = sorted({r.model for r in self.results})
        self.series_order = self._series_order()
        self.baseline = self._choose_baseline(baseline)
        self.sweeps = self._load_sweeps(found["sweep.json"])
        self.validations = self._load_validations(found["validation.json"])

    @property
    def shown_root(self):
        """The results directory as reports show it: relative to the working directory when below
        it, else its name (a report or caption must not hold a developer's absolute path)."""
        rel = os.path.relpath(self.root)
        return rel if not rel.startswith(os.pardir) else os.path.basename(self.root.rstrip(os.sep)) or "."

    def rel(self, path):
        rel = os.path.relpath(path, self.root)
        return os.path.join(os.path.basename(self.root.rstrip(os.sep)) or ".", rel) if rel != "." else rel

    # --- labelling -------------------------------------------------------
    def _label_schemes(self):
        by_preset = defaultdict(list)
        for r in self.all:
            by_preset[r.preset].append(r)
        for preset, results in by_preset.items():
            knobs = sorted({k for r in results for k in r.scheme if k != "preset"})
            differing = [k for k in knobs if len({json.dumps(r.scheme.get(k), sort_keys=True) for r in results}) > 1]
            for r in results:
                if differing:
                    parts = [f"{k}={format_value(k, r.scheme.get(k))}" for k in differing]
                    r.scheme_label = f"{preset} ({', '.join(parts)})"

    def _label_variants(self):
        groups = defaultdict(list)
        flat = {}
        for r in self.all:
            flat[id(r)] = {k: json.dumps(v, sort_keys=True)
                           for k, v in flatten({k: v for k, v in r.scenario.items()
                                               if k not in _IDENTITY_KEYS + REPEAT_KEYS}).items()}
            groups[(r.model, r.workers, r.scheme_label)].append(r)
        keys = sorted({k for f in flat.values() for k in f})
        variant_keys = [k for k in keys
                        if any(len({flat[id(r)].get(k) for r in g}) > 1 for g in groups.values())]
        self.variant_keys = variant_keys
        # Labels name a setting by its last component unless two variant keys share it.
        lasts = Counter(k.split(".")[-1] for k in variant_keys)
        short = {k: k.split(".")[-1] if lasts[k.split(".")[-1]] == 1 else k for k in variant_keys}
        for r in self.all:
            items = []
            for k in variant_keys:
                try:
                    value = lookup(r.scenario, k)
                except KeyError:
                    value = None
                items.append((k, value))
            r.variant_items = tuple(items)
        # Labels name only the settings that vary among one scheme's results; all of them
        # still decide which results are compared (variant_items).
        by_scheme = defaultdict(list)
        for r in self.all:
            by_scheme[r.scheme_label].append(r)
        for results in by_scheme.values():
            shown = [i for i, k in enumerate(variant_keys)
                     if len({json.dumps(r.variant_items[i][1], sort_keys=True) for r in results}) > 1]
            for r in results:
                r.variant = ", ".join(f"{short[r.variant_items[i][0]]}="
                                      f"{format_value(r.variant_items[i][0], r.variant_items[i][1], units=False)}"
                                      for i in shown)

    def _deduplicate(self):
        seen = {}
        repeats = defaultdict(list)
        # Of results that describe the same configuration and seed, keep the shallowest file (a
        # compare output before a sweep point), then the first by path.
        for r in sorted(self.all, key=lambda r: (r.rel.count(os.sep), r.rel)):
            # As JSON text: a variant value may be an object or array (one file's "variability" a
            # number, another's an object), which a tuple key cannot hold.
            config = (r.model, r.workers, r.scheme_label, json.dumps(r.variant_items, sort_keys=True))
            key = config + (r.repeat_id,)
            if key in seen:
                self.warnings.append(f"{r.rel} describes the same model, scale, scheme and seed as {seen[key].rel}; "
                                     f"the figures use {seen[key].rel}")
                continue
            seen[key] = r
            repeats[config].append(r)
        self.results = []
        for config, runs in repeats.items():
            if len(runs) > 1:
                runs.sort(key=lambda r: value_sort_key(json.loads(r.repeat_id)))
                self.results.append(Aggregate(runs))
            else:
                self.results.append(runs[0])

    def _series_order(self):
        labels = {}
        for r in self.results:
            labels.setdefault(r.label, r)

        def sort_key(label):
            r = labels[label]
            numeric = tuple((0, v, "") if _is_number(v) else (1, 0, json.dumps(v, sort_keys=True))
                            for _, v in r.variant_items)
            # Knobs by value, not by label text: "tensors_per_buffer=5" before "=10".
            knobs = tuple((k, value_sort_key(v)) for k, v in sorted(r.scheme.items()) if k != "preset")
            return (style.preset_rank(r.preset), r.preset, knobs, r.scheme_label, numeric)

        return sorted(labels, key=sort_key)

    def scheme_labels(self):
        seen = []
        for label in self.series_order:
            s = self.by_label(label).scheme_label
            if s not in seen:
                seen.append(s)
        return seen

    def by_label(self, label):
        for r in self.results:
            if r.label == label:
                return r
        raise KeyError(label)

    def _choose_baseline(self, requested):
        schemes = self.scheme_labels()
        if requested:
            if requested in schemes:
                return requested
            matches = [s for s in schemes if self._preset_of(s) == requested]
            if len(matches) == 1:
                return matches[0]
            if matches:
                raise InputProblem(f"--baseline {requested}: several schemes use that preset; name one of: "
                                   + ", ".join(matches))
            raise InputProblem(f"--baseline {requested}: no such scheme in the results; expected one of: "
                               + ", ".join(schemes))
        # compare.csv lists the baseline first: follow it so the figures match compare's table.
        firsts = Counter()
        for directory, subdirs, files in os.walk(self.root):
            subdirs.sort()
            if "compare.csv" in files:
                try:
                    with open(os.path.join(directory, "compare.csv"), encoding="utf-8") as f:
                        lines = f.read().splitlines()
                    if len(lines) > 1 and lines[0].startswith("scheme,"):
                        firsts[lines[1].split(",")[0]] += 1
                except OSError:
                    pass
        for name, _ in firsts.most_common():
            for s in schemes:
                if s == name or self._preset_of(s) == name:
                    return s
        return schemes[0]

    def _preset_of(self, scheme_label):
        for r in self.results:
            if r.scheme_label == scheme_label:
                return r.preset
        return None

    # --- queries ---------------------------------------------------------
    def for_model(self, model):
        return [r for r in self.results if r.model == model]

    def workers_of(self, model):
        return sorted({r.workers for r in self.for_model(model)})

    def find(self, model, workers, scheme_label, variant_items):
        for r in self.results:
            if (r.model, r.workers, r.scheme_label, r.variant_items) == (model, workers, scheme_label, variant_items):
                return r
        return None

    def baseline_of(self, r):
        return self.find(r.model, r.workers, self.baseline, r.variant_items)

    def speedup(self, r):
        """Baseline mean iteration time / this one (same model, scale, variant); None without a baseline."""
        base = self.baseline_of(r)
        return base.mean_s / r.mean_s if base else None

    def ordered(self, results):
        rank = {label: i for i, label in enumerate(self.series_order)}
        return sorted(results, key=lambda r: (rank[r.label], r.workers))

    def chosen_scale(self, model, workers=None):
        have = self.workers_of(model)
        if workers is None:
            return have[-1]
        return workers if workers in have else None

    # --- validations (sparsefuse validate --out DIR) --------------------------
    def _load_validations(self, paths):
        loaded = []
        for path in paths:
            rel = self.rel(path)
            doc = _load_json(path, rel)
            if not isinstance(doc, dict) or doc.get("format") != "sparsefuse-validation/1":
                raise InputProblem(f"{rel}: at /format: expected \"sparsefuse-validation/1\"")
            metrics = doc.get("metrics")
            if not isinstance(metrics, list) or not metrics:
                raise InputProblem(f"{rel}: at /metrics: expected a non-empty array")
            for i, m in enumerate(metrics):
                if not isinstance(m, dict) or not isinstance(m.get("name"), str):
                    raise InputProblem(f"{rel}: at /metrics/{i}/name: expected a string")
                for key in ("measured", "simulated"):
                    _number(doc, f"/metrics/{i}/{key}", rel)
            buckets = doc.get("buckets")
            if not isinstance(buckets, list):
                raise InputProblem(f"{rel}: at /buckets: expected an array")
            for i, _ in enumerate(buckets):
                for key in ("index", "measured_duration_s", "simulated_duration_s"):
                    _number(doc, f"/buckets/{i}/{key}", rel)
            loaded.append((path, rel, doc))
        return loaded

    # --- sweeps ----------------------------------------------------------
    def _load_sweeps(self, paths):
        sweeps = []
        for path in paths:
            directory = os.path.dirname(path)
            doc = _load_json(path, self.rel(path))
            keys = doc.get("keys") if isinstance(doc, dict) else None
            if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
                raise InputProblem(f"{self.rel(path)}: at /keys: expected an array of setting names")
            members = []
            prefix = os.path.abspath(directory) + os.sep
            for r in self.all:
                if not r.path.startswith(prefix):
                    continue
                values = {}
                for key in keys:
                    value = self._sweep_value(r, key, doc)
                    if value is None:
                        self.warnings.append(f"{r.rel}: no value for swept key \"{key}\"; left out of the heatmap")
                        break
                    values[key] = value
                else:
                    members.append((r, values))
            sweeps.append(Sweep(path, self.rel(path), keys, members))
        return sweeps

    @staticmethod
    def _sweep_value(r, key, doc):
        if key in ("scheme", "scheme.preset"):
            return r.scheme_label
        if key == "model":
            return r.model
        try:
            value = lookup(r.scenario, key)
        except KeyError:
            value = None
        if value is None:  # fall back on the sweep's own list of points, by directory name
            point_id = os.path.basename(os.path.dirname(r.path))
            points = doc.get("points")
            if isinstance(points, list):
                for p in points:
                    if isinstance(p, dict) and str(p.get("id")) == point_id:
                        for holder in (p.get("values"), p.get("set"), p):
                            if isinstance(holder, dict) and key in holder:
                                return holder[key]
        if isinstance(value, dict) and "preset" in value:
            return value["preset"]
        return value

    # --- descriptions ----------------------------------------------------
    def provenance(self, results):
        kinds = sorted({r.provenance for r in results})
        return kinds[0] if len(kinds) == 1 else "mixed (" + ", ".join(kinds) + ")"

    @staticmethod
    def network(results):
        texts = sorted({describe_network(r.doc) for r in results})
        return texts[0] if len(texts) == 1 else "network varies"

    def caption(self, results, scale=None, extra=""):
        models = sorted({r.model for r in results})
        workers = sorted({r.workers for r in results})
        if scale is not None:
            scale_text = f"{scale} workers"
        elif len(workers) == 1:
            scale_text = f"{workers[0]} workers"
        else:
            scale_text = f"{workers[0]}-{workers[-1]} workers"
        iterations = sorted({r.scenario.get("iterations") for r in results if _is_number(r.scenario.get("iterations"))})
        parts = [", ".join(models), scale_text, f"trace: {self.provenance(results)}", self.network(results)]
        if len(iterations) == 1:
            parts.append(f"{iterations[0]} measured iterations")
        costs = sorted({r.doc.get("compression_costs") for r in results
                        if isinstance(r.doc.get("compression_costs"), str) and r.doc.get("compression_costs")})
        if costs and any(r.breakdown["compression"] > 0 for r in results):
            parts.append("compression costs: " + "; ".join(costs))
        if extra:
            parts.append(extra)
        roots = sorted({os.path.dirname(os.path.dirname(r.rel)) or os.path.dirname(r.rel) for r in results})
        count = sum(r.n for r in results)  # repeats averaged into one point each count
        parts.append(f"from {count} result.json" + (f" under {roots[0]}/" if len(roots) == 1 and roots[0] else ""))
        return portable_text(" | ".join(parts))


def describe_network(doc):
    """Where a result's communication times come from, in a few words, for captions and reports:
    a real run's executor, else the collective cost model of its resolved scenario."""
    executor = doc.get("executor") if isinstance(doc, dict) else None
    if isinstance(executor, dict):
        return (f"real run: {executor.get('name', '?')} over {executor.get('transport', '?')}, "
                f"{executor.get('ranks', '?')} ranks on {executor.get('host', '?')}")
    scenario = doc.get("scenario") if isinstance(doc, dict) else None
    network = scenario.get("network") if isinstance(scenario, dict) else None
    if not isinstance(network, dict):
        return "network unknown"
    model = network.get("model", "flat")
    topology = scenario.get("topology")
    where = ""
    if isinstance(topology, dict):
        shape = f"{topology.get('nodes', '?')} x {topology.get('gpus_per_node', '?')} GPUs"
        where = f" on {topology['preset']} ({shape})" if isinstance(topology.get("preset"), str) else f" on {shape}"
    if model == "nccl":
        return "NCCL model" + where
    if model == "calibrated":
        return f"measured collective table {os.path.basename(str(network.get('profile', '?')))}" + where
    if model == "seed-table":
        return "seed code's 8-node collective table" + where
    parts = []
    if _is_number(network.get("latency_us")):
        parts.append(f"{network['latency_us']:g} us")
    if _is_number(network.get("bandwidth_gbps")):
        parts.append(f"{network['bandwidth_gbps']:g} Gb/s")
    if isinstance(network.get("allreduce"), str):
        parts.append(f"{network['allreduce']} allreduce")
    return "flat network" + (" " + ", ".join(parts) if parts else "")
