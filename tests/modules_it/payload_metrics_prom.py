#!/usr/bin/env python3
"""Checks a Prometheus text exposition (format 0.0.4) read from a file or stdin.

    payload_metrics_prom.py [FILE] [--require FAMILY]... [--dump-json]

Checks, failing with a message naming the line:
  - every line is a comment (# HELP / # TYPE / other #), blank, or a sample
    `name{label="value",...} value [timestamp]` with valid metric and label
    names, correctly escaped label values, a float value (+Inf/-Inf/NaN ok);
  - at most one HELP and one TYPE per family; TYPE comes before the family's
    samples; a family's samples are contiguous; no series appears twice;
  - counters are not negative;
  - histograms: per label set (le aside) the buckets' le values increase,
    their counts never decrease, the last bucket is le="+Inf" and equals
    _count, and _sum is present;
  - the text ends with a newline;
  - every --require FAMILY is present.
With --dump-json, prints {series: value} as JSON (series as written, labels
sorted) for the caller to check values. Python 3 standard library only.
"""
import json
import math
import re
import sys

NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
LABEL = r"[a-zA-Z_][a-zA-Z0-9_]*"
SAMPLE_RE = re.compile(r"^(" + NAME + r")(\{.*\})?[ \t]+(\S+)(?:[ \t]+(-?\d+))?$")
HELP_RE = re.compile(r"^#[ \t]+HELP[ \t]+(" + NAME + r")(?:[ \t]+(.*))?$")
TYPE_RE = re.compile(r"^#[ \t]+TYPE[ \t]+(" + NAME + r")[ \t]+(\S+)$")
TYPES = {"counter", "gauge", "histogram", "summary", "untyped"}


class Bad(Exception):
    pass


def parse_labels(text, lineno):
    """Parses '{a="x",b="y"}' into a list of (name, value)."""
    assert text[0] == "{" and text[-1] == "}"
    body, i, out = text[1:-1], 0, []
    while i < len(body):
        m = re.match(LABEL, body[i:])
        if not m:
            raise Bad(f"line {lineno}: bad label name at {body[i:]!r}")
        name = m.group(0)
        i += len(name)
        if body[i:i + 2] != '="':
            raise Bad(f"line {lineno}: expected =\" after label {name}")
        i += 2
        value = []
        while True:
            if i >= len(body):
                raise Bad(f"line {lineno}: unterminated value of label {name}")
            c = body[i]
            if c == "\\":
                if i + 1 >= len(body) or body[i + 1] not in '\\"n':
                    raise Bad(f"line {lineno}: bad escape in label {name}")
                value.append({"\\": "\\", '"': '"', "n": "\n"}[body[i + 1]])
                i += 2
            elif c == '"':
                i += 1
                break
            elif c == "\n":
                raise Bad(f"line {lineno}: newline in label {name}")
            else:
                value.append(c)
                i += 1
        out.append((name, "".join(value)))
        if i < len(body):
            if body[i] != ",":
                raise Bad(f"line {lineno}: expected , between labels")
            i += 1
    names = [n for n, _ in out]
    if len(names) != len(set(names)):
        raise Bad(f"line {lineno}: a label appears twice")
    return out


def parse_value(text, lineno):
    if text in ("+Inf", "Inf"):
        return math.inf
    if text == "-Inf":
        return -math.inf
    if text == "NaN":
        return math.nan
    try:
        return float(text)
    except ValueError:
        raise Bad(f"line {lineno}: bad sample value {text!r}") from None


def family_of(name, types):
    """The family a sample name belongs to (histogram/summary suffixes)."""
    for suffix in ("_bucket", "_sum", "_count"):
        if name.endswith(suffix):
            base = name[: -len(suffix)]
            if types.get(base) in ("histogram", "summary"):
                return base
    return name


def check(text, require):
    if text and not text.endswith("\n"):
        raise Bad("the exposition does not end with a newline")
    types, helps, seen_series = {}, set(), set()
    samples = []  # (family, name, labels, value, lineno)
    finished, current = set(), None
    for lineno, line in enumerate(text.split("\n")[:-1] if text else [], 1):
        if not line.strip():
            continue
        if line.startswith("#"):
            m = HELP_RE.match(line)
            if m:
                if m.group(1) in helps:
                    raise Bad(f"line {lineno}: second HELP for {m.group(1)}")
                helps.add(m.group(1))
                continue
            m = TYPE_RE.match(line)
            if m:
                fam, typ = m.groups()
                if typ not in TYPES:
                    raise Bad(f"line {lineno}: unknown type {typ}")
                if fam in types:
                    raise Bad(f"line {lineno}: second TYPE for {fam}")
                if any(s[0] == fam for s in samples):
                    raise Bad(f"line {lineno}: TYPE for {fam} after its samples")
                types[fam] = typ
                continue
            if re.match(r"^#[ \t]+(HELP|TYPE)\b", line):
                raise Bad(f"line {lineno}: malformed {line.split()[1]} line")
            continue
        m = SAMPLE_RE.match(line)
        if not m:
            raise Bad(f"line {lineno}: not a sample: {line!r}")
        name, labels_text, value_text, _ts = m.groups()
        labels = parse_labels(labels_text, lineno) if labels_text else []
        value = parse_value(value_text, lineno)
        fam = family_of(name, types)
        if fam != current:
            if fam in finished:
                raise Bad(f"line {lineno}: samples of {fam} are not contiguous")
            if current is not None:
                finished.add(current)
            current = fam
        key = (name, tuple(sorted(labels)))
        if key in seen_series:
            raise Bad(f"line {lineno}: duplicate series {name}{labels_text or ''}")
        seen_series.add(key)
        if types.get(fam) == "counter" and value < 0:
            raise Bad(f"line {lineno}: negative counter {name}")
        samples.append((fam, name, labels, value, lineno))

    for fam, typ in types.items():
        if typ == "histogram":
            check_histogram(fam, [s for s in samples if s[0] == fam])
    present = {s[0] for s in samples}
    for fam in require:
        if fam not in present:
            raise Bad(f"required family {fam} is missing")
    return samples


def check_histogram(fam, samples):
    groups = {}
    for _, name, labels, value, lineno in samples:
        rest = tuple(sorted((k, v) for k, v in labels if k != "le"))
        g = groups.setdefault(rest, {"buckets": [], "sum": None, "count": None})
        if name == fam + "_bucket":
            le = [v for k, v in labels if k == "le"]
            if len(le) != 1:
                raise Bad(f"line {lineno}: {name} without an le label")
            g["buckets"].append((parse_value(le[0], lineno), value, lineno))
        elif name == fam + "_sum":
            g["sum"] = value
        elif name == fam + "_count":
            g["count"] = value
        else:
            raise Bad(f"line {lineno}: {name} in histogram {fam}")
    if not groups:
        raise Bad(f"histogram {fam} has no samples")
    for rest, g in groups.items():
        where = f"{fam}{dict(rest) if rest else ''}"
        b = g["buckets"]
        if not b:
            raise Bad(f"{where}: no buckets")
        for (le0, c0, _), (le1, c1, ln) in zip(b, b[1:]):
            if not le1 > le0:
                raise Bad(f"line {ln}: {where}: le {le1} does not increase")
            if c1 < c0:
                raise Bad(f"line {ln}: {where}: bucket count decreases ({c0} -> {c1})")
        if b[-1][0] != math.inf:
            raise Bad(f"{where}: the last bucket is not le=\"+Inf\"")
        if g["count"] is None or g["sum"] is None:
            raise Bad(f"{where}: _count or _sum missing")
        if b[-1][1] != g["count"]:
            raise Bad(f"{where}: +Inf bucket {b[-1][1]} != _count {g['count']}")


def main(argv):
    args, require, dump, path = argv[1:], [], False, None
    while args:
        a = args.pop(0)
        if a == "--require":
            require.append(args.pop(0))
        elif a == "--dump-json":
            dump = True
        else:
            path = a
    text = open(path, encoding="utf-8").read() if path else sys.stdin.read()
    try:
        samples = check(text, require)
    except Bad as e:
        print(f"payload_metrics_prom: {e}", file=sys.stderr)
        return 1
    if dump:
        out = {}
        for _, name, labels, value, _ in samples:
            lab = ",".join(f'{k}="{v}"' for k, v in sorted(labels))
            out[f"{name}{{{lab}}}" if lab else name] = value
        print(json.dumps(out, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
