"""The JSON schema of a pipeline definition (written in YAML). Kept as data, apart from code."""

NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"

PIPELINE_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "tfdesk pipeline",
    "type": "object",
    "additionalProperties": False,
    "required": ["steps"],
    "properties": {
        "name": {"type": "string", "pattern": NAME_PATTERN},
        "description": {"type": "string"},
        "project": {"type": "string", "pattern": NAME_PATTERN},
        "environment": {"type": "string", "pattern": NAME_PATTERN},
        "params": {"type": "object"},
        "steps": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["name"],
                "properties": {
                    "name": {"type": "string", "pattern": NAME_PATTERN},
                    "kind": {"type": "string"},
                    # NAME or NAME:VERSION of a catalog component
                    "component": {"type": "string",
                                  "pattern": r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}(:[1-9][0-9]*)?$"},
                    "with": {"type": "object"},
                    "environment": {"type": "string", "pattern": NAME_PATTERN},
                    # register the step's model output under this catalog name
                    "register": {"type": "string", "pattern": NAME_PATTERN},
                    "timeout": {"type": "number", "exclusiveMinimum": 0},
                },
                "oneOf": [{"required": ["kind"], "not": {"required": ["component"]}},
                          {"required": ["component"], "not": {"required": ["kind"]}}],
            },
        },
    },
}
