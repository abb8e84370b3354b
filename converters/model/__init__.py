"""Model conversion: SavedModel / Keras -> ONNX, TensorRT, TF-TRT; validated and benchmarked.

Bot-side modules (intake, savedmodel_pb, tensorrt manifests, validate, report) need no
TensorFlow. Everything that loads a model runs in the runner environment through
``python -m converters.model.worker SPEC.json`` (see worker.py).
"""
