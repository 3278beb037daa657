#!/usr/bin/env python3
"""Checks META.json against the PGXN Meta Spec 1.0.0 and dlock.control.

Usage: check-meta.py META.json VERSION [DIST_DIR]

VERSION is dlock.control's default_version (`make -s print-version`): the
distribution's version and that of every extension it provides must equal
it. With DIST_DIR, every file META.json names must exist under it.
Exit 0 when valid; otherwise 1, one line per fault on stderr.
"""
import json
import os
import re
import sys

SEMVER = (r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
          r"(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?")
# A version range: clauses of an optional operator and a version, by commas.
RANGE = r"(([=!]=|[<>]=?)\s*)?" + SEMVER
TERM = re.compile(r"[^/\\\s\x00-\x1f\x7f]{2,}")
TAG = re.compile(r"[^/\\\x00-\x1f\x7f]{2,255}")
LICENSES = {
    "agpl_3", "apache_1_1", "apache_2_0", "artistic_1", "artistic_2", "bsd",
    "freebsd", "gfdl_1_2", "gfdl_1_3", "gpl_1", "gpl_2", "gpl_3", "lgpl_2_1",
    "lgpl_3_0", "mit", "mozilla_1_0", "mozilla_1_1", "openssl", "perl_5",
    "postgresql", "qpl_1_0", "ssleay", "sun", "zlib", "open_source",
    "restricted", "unrestricted", "unknown"}
REQUIRED = ["name", "version", "abstract", "maintainer", "license",
            "provides", "meta-spec"]
OPTIONAL = ["description", "generated_by", "tags", "no_index", "prereqs",
            "release_status", "resources"]
PHASES = {"configure", "build", "test", "runtime", "develop"}
RELATIONSHIPS = {"requires", "recommends", "suggests", "conflicts"}

faults = []


def fault(where, what):
    faults.append(f"{where}: {what}")


def custom(key):
    return re.fullmatch(r"[xX]_.+", key) is not None


def nonempty_string(where, value):
    if not isinstance(value, str) or not value:
        fault(where, "must be a non-empty string")
        return False
    return True


def check_keys(where, obj, allowed):
    for key in obj:
        if key not in allowed and not custom(key):
            fault(where, f"unknown key {key!r}")


def check_maintainer(value):
    if isinstance(value, list):
        if not value or len(set(map(str, value))) != len(value):
            fault("maintainer", "must be a non-empty list of distinct names")
        for i, item in enumerate(value):
            nonempty_string(f"maintainer[{i}]", item)
    else:
        nonempty_string("maintainer", value)


def check_license(value):
    if isinstance(value, str):
        if value not in LICENSES:
            fault("license", f"{value!r} is not a license of the spec")
    elif isinstance(value, list) and value:
        for item in value:
            if item not in LICENSES:
                fault("license", f"{item!r} is not a license of the spec")
    elif isinstance(value, dict) and value:
        for name, uri in value.items():
            if not isinstance(uri, str) or not re.match(r"[A-Za-z][A-Za-z0-9+.-]*:", uri):
                fault(f"license.{name}", "must be a URI")
    else:
        fault("license", "must be a license name, a list of them or an object")


def check_provides(value, version, dist_dir):
    if not isinstance(value, dict) or not value:
        fault("provides", "must be an object naming at least one extension")
        return
    for name, ext in value.items():
        where = f"provides.{name}"
        if not TERM.fullmatch(name):
            fault(where, "the name must be a term (2+ characters, no space or slash)")
        if not isinstance(ext, dict):
            fault(where, "must be an object")
            continue
        check_keys(where, ext, {"file", "version", "abstract", "docfile"})
        for key in ("file", "version"):
            if key not in ext:
                fault(where, f"lacks {key!r}")
        if "version" in ext and ext["version"] != version:
            fault(f"{where}.version", f"{ext['version']!r}, but dlock.control says {version!r}")
        if "abstract" in ext:
            nonempty_string(f"{where}.abstract", ext["abstract"])
        for key in ("file", "docfile"):
            if key not in ext or not nonempty_string(f"{where}.{key}", ext[key]):
                continue
            path = ext[key]
            if path.startswith("/") or "\\" in path or ".." in path.split("/"):
                fault(f"{where}.{key}", "must be a relative Unix path inside the distribution")
            elif dist_dir and not os.path.isfile(os.path.join(dist_dir, path)):
                fault(f"{where}.{key}", f"{path} is not in the distribution")


def check_prereqs(value):
    if not isinstance(value, dict) or not value:
        fault("prereqs", "must be an object naming at least one phase")
        return
    check_keys("prereqs", value, PHASES)
    for phase, rels in value.items():
        if custom(phase):
            continue
        if not isinstance(rels, dict) or not rels:
            fault(f"prereqs.{phase}", "must be an object naming a relationship")
            continue
        check_keys(f"prereqs.{phase}", rels, RELATIONSHIPS)
        for rel, deps in rels.items():
            where = f"prereqs.{phase}.{rel}"
            if custom(rel):
                continue
            if not isinstance(deps, dict) or not deps:
                fault(where, "must be an object naming at least one prerequisite")
                continue
            for dep, rng in deps.items():
                if not TERM.fullmatch(dep):
                    fault(where, f"{dep!r} is not a term")
                if rng == 0:
                    continue
                if not isinstance(rng, str) or not re.fullmatch(
                        RANGE + r"(\s*,\s*" + RANGE + r")*", rng):
                    fault(f"{where}.{dep}", f"{rng!r} is not a version range")


def check_meta_spec(value):
    if not isinstance(value, dict):
        fault("meta-spec", "must be an object")
        return
    check_keys("meta-spec", value, {"version", "url"})
    if not isinstance(value.get("version"), str) or not re.fullmatch(
            r"1\.0\.\d+", value["version"]):
        fault("meta-spec.version", "must be 1.0.x")
    if "url" in value and value["url"] not in (
            "https://pgxn.org/meta/spec.txt", "http://pgxn.org/meta/spec.txt"):
        fault("meta-spec.url", "must be the spec's address")


def check(meta, version, dist_dir):
    if not isinstance(meta, dict):
        fault("top level", "must hold an object")
        return
    check_keys("top level", meta, set(REQUIRED + OPTIONAL))
    for key in REQUIRED:
        if key not in meta:
            fault("top level", f"lacks the required key {key!r}")
    if "name" in meta and not (isinstance(meta["name"], str)
                               and TERM.fullmatch(meta["name"])):
        fault("name", "must be a term (2+ characters, no space or slash)")
    if "version" in meta:
        if not isinstance(meta["version"], str) or not re.fullmatch(SEMVER, meta["version"]):
            fault("version", "must be a semantic version")
        elif meta["version"] != version:
            fault("version", f"{meta['version']!r}, but dlock.control says {version!r}")
    for key in ("abstract", "description", "generated_by"):
        if key in meta:
            nonempty_string(key, meta[key])
    if "maintainer" in meta:
        check_maintainer(meta["maintainer"])
    if "license" in meta:
        check_license(meta["license"])
    if "provides" in meta:
        check_provides(meta["provides"], version, dist_dir)
    if "meta-spec" in meta:
        check_meta_spec(meta["meta-spec"])
    if "prereqs" in meta:
        check_prereqs(meta["prereqs"])
    if "tags" in meta:
        tags = meta["tags"]
        if (not isinstance(tags, list) or not tags or len(set(map(str, tags))) != len(tags)
                or not all(isinstance(t, str) and TAG.fullmatch(t) for t in tags)):
            fault("tags", "must be distinct strings of 2-255 characters, no slash")
    if meta.get("release_status", "stable") not in ("stable", "testing", "unstable"):
        fault("release_status", "must be stable, testing or unstable")
    if "resources" in meta:
        res = meta["resources"]
        if not isinstance(res, dict) or not ({"homepage", "bugtracker", "repository"} & set(res)):
            fault("resources", "must name a homepage, bugtracker or repository")
        else:
            check_keys("resources", res, {"homepage", "bugtracker", "repository"})


def main(argv):
    if len(argv) not in (3, 4) or not argv[2]:
        print("usage: check-meta.py META.json VERSION [DIST_DIR]", file=sys.stderr)
        return 2
    try:
        with open(argv[1], encoding="utf-8") as f:
            meta = json.load(f)
    except (OSError, ValueError) as e:
        print(f"{argv[1]}: {e}", file=sys.stderr)
        return 1
    check(meta, argv[2], argv[3] if len(argv) == 4 else None)
    for line in faults:
        print(f"{argv[1]}: {line}", file=sys.stderr)
    return 1 if faults else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
