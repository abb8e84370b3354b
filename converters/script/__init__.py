"""Training-script converter: single-process TF/Keras -> Horovod or tf.distribute.

    from converters.script import convert, ConversionError
    result = convert(source, target="horovod", filename="train.py")
    result.code, result.diff, result.findings, result.analysis, result.changed, result.to_dict()
"""
from converters.script.analysis import Analysis, analyze
from converters.script.api import ConversionResult, convert
from converters.script.errors import ConversionError
from converters.script.findings import Finding
from converters.script.rules import RULES, TARGETS

__all__ = ["convert", "ConversionError", "ConversionResult", "Finding", "Analysis", "analyze",
           "RULES", "TARGETS"]
