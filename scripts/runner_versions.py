"""Print the TensorFlow, Keras and Horovod versions of the interpreter running this, as JSON.
The runner build scripts store it as versions.json next to the environment, so tfdesk records
a runtime's versions without starting it (catalog/environments.py reads the file)."""
import json
import sys
from importlib import metadata


def version(*names):
    for name in names:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return ""


json.dump({"tf_version": version("tensorflow", "tensorflow-cpu", "tensorflow-gpu"),
           "keras_version": version("keras", "tf-keras"), "horovod_version": version("horovod"),
           "python": "%d.%d.%d" % sys.version_info[:3]}, sys.stdout)
print()
