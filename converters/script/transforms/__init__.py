"""One small LibCST transform per rule; ``converters.script.rules`` lists which run for which target."""
