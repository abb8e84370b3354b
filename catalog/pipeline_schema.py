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
        "cache": {"type": "boolean"},  # every step may be reused (pipeline_graph.step_key)
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
                    # the steps it waits for (steps above it); with any after:, the pipeline
                    # is a graph (catalog/pipeline_graph.py)
                    "after": {"oneOf": [{"type": "string", "pattern": NAME_PATTERN},
                                        {"type": "array", "uniqueItems": True,
                                         "items": {"type": "string", "pattern": NAME_PATTERN}}]},
                    "retries": {"type": "integer", "minimum": 0, "maximum": 5},
                    # what the step's job writes in its folder, for later steps to read:
                    # NAME -> path relative to the folder (catalog/step_outputs.py)
                    "outputs": {"type": "object", "additionalProperties": {"type": "string"}},
                    "cache": {"type": "boolean"},
                },
                "oneOf": [{"required": ["kind"], "not": {"required": ["component"]}},
                          {"required": ["component"], "not": {"required": ["kind"]}}],
            },
        },
    },
}
