"""The subset of OpenAPI v3 schema validation that the Kubernetes API server applies to custom
resources, written out so that the CRD can be tested without an API server or a JSON-schema
library (neither is a build dependency).

Two parts:
  * structural_problems(schema): the rules apiextensions.k8s.io/v1 imposes on a CRD schema
    (a type on every node, junctors without types, metadata restricted to name/generateName, ...),
    plus a guard against misspelt keywords, which the API server would reject as unknown fields.
  * validate(value, schema): checks an object against a schema the way the API server does with
    strict field validation: unknown fields are errors, except under
    x-kubernetes-preserve-unknown-fields.
"""

import datetime
import re
import sys

try:
    import yaml
except ImportError:
    print("FAIL: python3 has no yaml module: install Debian's python3-yaml (scripts/setup.sh "
          f"does), using {sys.executable}")
    sys.exit(1)

# JSONSchemaProps fields (apiextensions.k8s.io/v1) that a CRD schema may use.
KNOWN_KEYWORDS = {
    "$ref", "$schema", "additionalItems", "additionalProperties", "allOf", "anyOf", "default",
    "definitions", "dependencies", "description", "enum", "example", "exclusiveMaximum",
    "exclusiveMinimum", "externalDocs", "format", "id", "items", "maxItems", "maxLength",
    "maxProperties", "maximum", "minItems", "minLength", "minProperties", "minimum", "multipleOf",
    "not", "nullable", "oneOf", "pattern", "patternProperties", "properties", "required", "title",
    "type", "uniqueItems", "x-kubernetes-embedded-resource", "x-kubernetes-int-or-string",
    "x-kubernetes-list-map-keys", "x-kubernetes-list-type", "x-kubernetes-map-type",
    "x-kubernetes-preserve-unknown-fields", "x-kubernetes-validations",
}
# Forbidden in a structural schema (ref, definitions) or meaningless here; we never use them.
FORBIDDEN_KEYWORDS = {"$ref", "definitions", "dependencies", "patternProperties", "uniqueItems",
                      "additionalItems", "id", "$schema"}
TYPES = {"object", "array", "string", "integer", "number", "boolean"}
JUNCTORS = ("allOf", "anyOf", "oneOf", "not")
# Inside a junctor only value validations are allowed.
FORBIDDEN_IN_JUNCTOR = {"type", "description", "default", "additionalProperties", "nullable",
                        "title", "x-kubernetes-preserve-unknown-fields",
                        "x-kubernetes-int-or-string", "x-kubernetes-embedded-resource",
                        "x-kubernetes-list-type", "x-kubernetes-list-map-keys",
                        "x-kubernetes-map-type"}
INT_OR_STRING_ANYOF = [{"type": "integer"}, {"type": "string"}]
FORMATS = {"int32", "int64", "float", "double", "byte", "date", "date-time", "duration", "uri",
           "email", "hostname", "ipv4", "ipv6", "cidr", "mac", "uuid", "uuid3", "uuid4", "uuid5",
           "password", "binary", "isbn", "isbn10", "isbn13", "creditcard", "ssn", "hexcolor",
           "rgbcolor"}
RFC3339 = re.compile(
    r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")
INT_RANGES = {"int32": (-2**31, 2**31 - 1), "int64": (-2**63, 2**63 - 1)}


def load_yaml_documents(text):
    """Loads YAML as kubectl does: YAML 1.1 scalars, timestamps kept as strings (kubectl converts
    YAML to JSON, where a timestamp is a string)."""
    def stringify(value):
        if isinstance(value, (datetime.datetime, datetime.date)):
            return value.isoformat().replace("+00:00", "Z")
        if isinstance(value, dict):
            return {stringify(k): stringify(v) for k, v in value.items()}
        if isinstance(value, list):
            return [stringify(v) for v in value]
        return value
    return [stringify(doc) for doc in yaml.safe_load_all(text)]


# --- structural rules ----------------------------------------------------------------------------

def structural_problems(schema):
    problems = []
    _check_node(schema, "<root>", problems, root=True)
    metadata = schema.get("properties", {}).get("metadata")
    if metadata is not None:
        if metadata.get("type") != "object":
            problems.append("metadata: must be of type object")
        for name, prop in metadata.get("properties", {}).items():
            if name not in ("name", "generateName"):
                problems.append(f"metadata.{name}: only name and generateName may be restricted")
            allowed = {"type", "description", "maxLength", "minLength", "pattern"}
            for key in prop:
                if key not in allowed:
                    problems.append(f"metadata.{name}: {key} is not allowed on metadata")
        for key in metadata:
            if key not in ("type", "properties", "description"):
                problems.append(f"metadata: {key} is not allowed on metadata")
    return problems


def _check_node(node, path, problems, root=False, in_junctor=False):
    if not isinstance(node, dict):
        problems.append(f"{path}: a schema must be a mapping, got {type(node).__name__}")
        return
    for key in node:
        if key not in KNOWN_KEYWORDS:
            problems.append(f"{path}: unknown schema keyword {key!r}")
        elif key in FORBIDDEN_KEYWORDS:
            problems.append(f"{path}: {key} is not allowed in a structural schema")
    if in_junctor:
        for key in node:
            if key in FORBIDDEN_IN_JUNCTOR:
                problems.append(f"{path}: {key} is not allowed inside allOf/anyOf/oneOf/not")
    else:
        int_or_string = node.get("x-kubernetes-int-or-string") is True
        preserve = node.get("x-kubernetes-preserve-unknown-fields") is True
        if "type" not in node and not (int_or_string or preserve):
            problems.append(f"{path}: every node of a structural schema needs a type")
        if "type" in node and node["type"] not in TYPES:
            problems.append(f"{path}: unknown type {node['type']!r}")
        if int_or_string and "type" in node:
            problems.append(f"{path}: x-kubernetes-int-or-string must not have a type")
        if root and node.get("type") != "object":
            problems.append(f"{path}: the root must be of type object")
    if "default" in node:
        # Policy, not a Kubernetes rule: the parser owns defaults (see the CRD's header).
        problems.append(f"{path}: no defaults in this CRD; the parser applies them")
    if "properties" in node and "additionalProperties" in node:
        problems.append(f"{path}: properties and additionalProperties are mutually exclusive")
    if "format" in node and node["format"] not in FORMATS:
        problems.append(f"{path}: unknown format {node['format']!r}")
    if "pattern" in node:
        try:
            re.compile(node["pattern"])
        except re.error as error:
            problems.append(f"{path}: pattern does not compile: {error}")
    for field in ("minimum", "maximum"):
        if field in node and not _is_number(node[field]):
            problems.append(f"{path}: {field} must be a number")
    for field in ("exclusiveMinimum", "exclusiveMaximum"):
        if field in node and not isinstance(node[field], bool):
            problems.append(f"{path}: {field} is a boolean in apiextensions.k8s.io/v1")
    if "enum" in node:
        if not isinstance(node["enum"], list) or not node["enum"]:
            problems.append(f"{path}: enum must be a non-empty list")
        elif "type" in node:
            for value in node["enum"]:
                if validate(value, {"type": node["type"]}, path):
                    problems.append(f"{path}: enum value {value!r} is not a {node['type']}")
    properties = node.get("properties", {})
    for name in node.get("required", []) if not in_junctor else []:
        if name not in properties:
            problems.append(f"{path}: required field {name!r} is not declared in properties")
    for name, prop in properties.items():
        _check_node(prop, f"{path}.{name}", problems, in_junctor=in_junctor)
    if isinstance(node.get("additionalProperties"), dict):
        _check_node(node["additionalProperties"], f"{path}.<value>", problems,
                    in_junctor=in_junctor)
    if "items" in node:
        _check_node(node["items"], f"{path}[]", problems, in_junctor=in_junctor)
    if node.get("type") == "array" and "items" not in node and not in_junctor:
        problems.append(f"{path}: an array needs items")
    list_type = node.get("x-kubernetes-list-type")
    if list_type == "map":
        keys = node.get("x-kubernetes-list-map-keys") or []
        items = node.get("items", {})
        if not keys:
            problems.append(f"{path}: list-type map needs x-kubernetes-list-map-keys")
        for key in keys:
            if key not in items.get("properties", {}):
                problems.append(f"{path}: map key {key!r} is not a property of the items")
            if key not in items.get("required", []):
                problems.append(f"{path}: map key {key!r} must be required")
    for junctor in JUNCTORS:
        if junctor not in node:
            continue
        branches = node[junctor] if junctor != "not" else [node[junctor]]
        if node.get("x-kubernetes-int-or-string") and junctor == "anyOf":
            if node["anyOf"] != INT_OR_STRING_ANYOF:
                problems.append(f"{path}: int-or-string anyOf must be [integer, string]")
            continue
        for i, branch in enumerate(branches):
            branch_path = f"{path}.{junctor}[{i}]"
            _check_node(branch, branch_path, problems, in_junctor=True)
            # A field a junctor talks about must also be declared outside it.
            for name in list(branch.get("properties", {})) + list(branch.get("required", [])):
                if name not in properties:
                    problems.append(f"{branch_path}: {name!r} is not declared in the node's "
                                    "properties")


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# --- validation ----------------------------------------------------------------------------------

def validate(value, schema, path="", root_metadata=False):
    """Returns the list of problems of `value` against `schema` (empty: valid)."""
    problems = []
    _validate(value, schema, path, problems, root_metadata)
    return problems


def _type_ok(value, type_name):
    if type_name == "object":
        return isinstance(value, dict)
    if type_name == "array":
        return isinstance(value, list)
    if type_name == "string":
        return isinstance(value, str)
    if type_name == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if type_name == "number":
        return _is_number(value)
    if type_name == "boolean":
        return isinstance(value, bool)
    return False


def _describe(value):
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "null" if value is None else type(value).__name__


def _validate(value, schema, path, problems, root_metadata=False):
    where = path or "<root>"
    if value is None:
        if not schema.get("nullable", False):
            problems.append(f"{where}: must not be null")
        return
    if schema.get("x-kubernetes-int-or-string"):
        if not (_type_ok(value, "integer") or _type_ok(value, "string")):
            problems.append(f"{where}: expected an integer or a string, got {_describe(value)}")
            return
    if "type" in schema and not _type_ok(value, schema["type"]):
        problems.append(f"{where}: expected {schema['type']}, got {_describe(value)} {value!r}")
        return
    if "enum" in schema and value not in schema["enum"]:
        problems.append(f"{where}: {value!r} is not one of {schema['enum']}")
    if _is_number(value):
        fmt = schema.get("format")
        if fmt in INT_RANGES and not INT_RANGES[fmt][0] <= value <= INT_RANGES[fmt][1]:
            problems.append(f"{where}: {value} is out of the {fmt} range")
        if "minimum" in schema:
            low = schema["minimum"]
            if schema.get("exclusiveMinimum") and value <= low:
                problems.append(f"{where}: {value} must be greater than {low}")
            elif value < low:
                problems.append(f"{where}: {value} is below the minimum {low}")
        if "maximum" in schema:
            high = schema["maximum"]
            if schema.get("exclusiveMaximum") and value >= high:
                problems.append(f"{where}: {value} must be less than {high}")
            elif value > high:
                problems.append(f"{where}: {value} is above the maximum {high}")
    if isinstance(value, str):
        if "minLength" in schema and len(value) < schema["minLength"]:
            problems.append(f"{where}: shorter than {schema['minLength']} characters")
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            problems.append(f"{where}: longer than {schema['maxLength']} characters")
        if "pattern" in schema and not re.search(schema["pattern"], value):
            problems.append(f"{where}: {value!r} does not match {schema['pattern']}")
        if schema.get("format") == "date-time" and not RFC3339.match(value):
            problems.append(f"{where}: {value!r} is not an RFC 3339 date-time")
    if isinstance(value, list):
        if "minItems" in schema and len(value) < schema["minItems"]:
            problems.append(f"{where}: fewer than {schema['minItems']} items")
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            problems.append(f"{where}: more than {schema['maxItems']} items")
        if "items" in schema:
            for i, item in enumerate(value):
                _validate(item, schema["items"], f"{path}[{i}]", problems)
        list_type = schema.get("x-kubernetes-list-type")
        if list_type == "map":
            keys = schema.get("x-kubernetes-list-map-keys", [])
            seen = set()
            for i, item in enumerate(value):
                key = tuple(item.get(k) for k in keys) if isinstance(item, dict) else None
                if key in seen:
                    problems.append(f"{where}[{i}]: duplicate entry for key {key}")
                seen.add(key)
        elif list_type == "set":
            if len({repr(v) for v in value}) != len(value):
                problems.append(f"{where}: duplicate items in a set")
    if isinstance(value, dict):
        if "minProperties" in schema and len(value) < schema["minProperties"]:
            problems.append(f"{where}: fewer than {schema['minProperties']} fields")
        if "maxProperties" in schema and len(value) > schema["maxProperties"]:
            problems.append(f"{where}: more than {schema['maxProperties']} fields")
        for name in schema.get("required", []):
            if name not in value:
                problems.append(f"{where}: required field {name!r} is missing")
        properties = schema.get("properties", {})
        additional = schema.get("additionalProperties")
        preserve = schema.get("x-kubernetes-preserve-unknown-fields", False)
        for name, item in value.items():
            child = f"{path}.{name}" if path else str(name)
            if name in properties:
                _validate(item, properties[name], child, problems,
                          root_metadata=(path == "" and name == "metadata"))
            elif isinstance(additional, dict):
                _validate(item, additional, child, problems)
            elif additional is True or preserve or root_metadata:
                # ObjectMeta is the API server's own: labels, annotations, uid and the rest are
                # never pruned by a CRD schema.
                continue
            elif schema.get("type") == "object" or properties:
                problems.append(f"{child}: unknown field (declared: "
                                f"{', '.join(sorted(properties)) or 'none'})")
    for junctor in ("allOf", "anyOf", "oneOf"):
        if junctor not in schema:
            continue
        if junctor == "anyOf" and schema.get("x-kubernetes-int-or-string"):
            continue
        matches = [not validate(value, branch, path) for branch in schema[junctor]]
        if junctor == "allOf" and not all(matches):
            problems.append(f"{where}: does not match every allOf branch")
        if junctor == "anyOf" and not any(matches):
            problems.append(f"{where}: matches no anyOf branch")
        if junctor == "oneOf" and matches.count(True) != 1:
            detail = "none" if matches.count(True) == 0 else "several"
            problems.append(f"{where}: must match exactly one of {_branches(schema[junctor])}, "
                            f"matches {detail}")
    if "not" in schema and not validate(value, schema["not"], path):
        problems.append(f"{where}: matches a schema it must not match")


def _branches(branches):
    names = []
    for branch in branches:
        names.append("+".join(branch.get("required", [])) or "<branch>")
    return ", ".join(names)
