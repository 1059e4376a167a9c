"""Validates custom resources against the openAPIV3Schema of their CustomResourceDefinition,
strictly: every object schema that lists `properties` and neither allows
`additionalProperties` nor sets `x-kubernetes-preserve-unknown-fields` rejects unknown
fields (what `kubectl apply --validate=strict` and the API server's field validation do),
`x-kubernetes-int-or-string` takes an integer or a string, and manifests are read with PyYAML
(YAML 1.1, as kubectl's go-yaml v2 reads them).

usage: crd_validate.py CRD.yaml [CRD.yaml ...] -- MANIFEST.yaml [MANIFEST.yaml ...]
Prints one line per problem; exit 1 when any, 2 on a usage or load failure, 0 otherwise.
"""
import sys

import jsonschema
import yaml


def strict(schema):
    if isinstance(schema, dict):
        out = {k: strict(v) for k, v in schema.items()}
        if out.pop("x-kubernetes-int-or-string", False):
            out.setdefault("anyOf", [{"type": "integer"}, {"type": "string"}])
        if (
            "properties" in out
            and "additionalProperties" not in out
            and not out.get("x-kubernetes-preserve-unknown-fields", False)
        ):
            out["additionalProperties"] = False
        return out
    if isinstance(schema, list):
        return [strict(v) for v in schema]
    return schema


def main(argv):
    if "--" not in argv:
        print(__doc__, file=sys.stderr)
        return 2
    cut = argv.index("--")
    schemas = {}
    for path in argv[:cut]:
        with open(path) as f:
            for crd in yaml.safe_load_all(f):
                if not crd:
                    continue
                group = crd["spec"]["group"]
                kind = crd["spec"]["names"]["kind"]
                for v in crd["spec"]["versions"]:
                    schema = strict(v["schema"]["openAPIV3Schema"])
                    schemas[(f"{group}/{v['name']}", kind)] = schema
    problems = 0
    checked = 0
    for path in argv[cut + 1 :]:
        with open(path) as f:
            docs = [d for d in yaml.safe_load_all(f) if d is not None]
        for doc in docs:
            key = (doc.get("apiVersion"), doc.get("kind"))
            schema = schemas.get(key)
            if schema is None:
                continue
            checked += 1
            v = jsonschema.Draft7Validator(schema)
            for e in sorted(v.iter_errors(doc), key=lambda e: list(e.absolute_path)):
                where = ".".join(str(p) for p in e.absolute_path) or "<root>"
                print(f"{path}: {key[1]} {where}: {e.message}")
                problems += 1
    print(f"checked {checked} custom resources, {problems} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
