"""The API knowledge the rules apply, as data (in the manner of tf_upgrade_v2's renames tables).

Names are canonical: ``tensorflow.keras.X``, ``keras.X`` and ``tf_keras.X`` all read as
``keras.X``; ``tensorflow.compat.v1.X`` reads as ``tf1.X``; other ``tensorflow.X`` as ``tf.X``.
"""
from __future__ import annotations

# Prefix rewrites that make every spelling of one API the same canonical name (first match wins).
CANONICAL_PREFIXES = [
    ("tensorflow.compat.v1.keras.", "keras."),
    ("tensorflow.compat.v2.keras.", "keras."),
    ("tensorflow.python.keras.", "keras."),
    ("tensorflow.keras.", "keras."),
    ("tf_keras.", "keras."),
    ("keras.src.", "keras."),
    ("keras.optimizers.legacy.", "keras.optimizers."),
    ("keras.optimizers.experimental.", "keras.optimizers."),
    ("tensorflow.optimizers.", "keras.optimizers."),
    ("tensorflow.compat.v1.", "tf1."),
    ("tensorflow.compat.v2.", "tf."),
    ("tensorflow.", "tf."),
]

# Keras optimizer classes -> default learning rate (used when the script passes none).
KERAS_OPTIMIZERS = {
    "keras.optimizers.Adam": "0.001", "keras.optimizers.AdamW": "0.001",
    "keras.optimizers.SGD": "0.01", "keras.optimizers.RMSprop": "0.001",
    "keras.optimizers.Adagrad": "0.001", "keras.optimizers.Adadelta": "0.001",
    "keras.optimizers.Adamax": "0.001", "keras.optimizers.Nadam": "0.001",
    "keras.optimizers.Ftrl": "0.001", "keras.optimizers.Adafactor": "0.001",
    "keras.optimizers.Lion": "0.001",
}
# TF1 optimizers (graph code, Estimator model_fn) -> default learning rate or None if required.
TF1_OPTIMIZERS = {
    f"{ns}.train.{name}": default
    for ns in ("tf1", "tf")
    for name, default in [("AdamOptimizer", "0.001"), ("GradientDescentOptimizer", None),
                          ("MomentumOptimizer", None), ("RMSPropOptimizer", None),
                          ("AdagradOptimizer", None), ("AdadeltaOptimizer", "0.001"),
                          ("FtrlOptimizer", None)]
}
LR_KEYWORDS = ("learning_rate", "lr")
# Setting a rate on a live optimizer (fine-tuning stages, LR-scheduler callbacks): the new value
# needs the same scaling. ``opt.learning_rate.assign(v)`` and ``opt.lr = v`` are read by
# attribute name; these functions take the optimizer attribute and then the value.
LR_SETTERS = {"keras.backend.set_value": 1}

# compile(optimizer="adam") strings -> Keras class name.
STRING_OPTIMIZERS = {
    "adam": "Adam", "adamw": "AdamW", "sgd": "SGD", "rmsprop": "RMSprop", "adagrad": "Adagrad",
    "adadelta": "Adadelta", "adamax": "Adamax", "nadam": "Nadam", "ftrl": "Ftrl",
}

# Learning-rate schedules -> (keyword, position) of the rate to scale.
SCHEDULES = {
    "keras.optimizers.schedules.ExponentialDecay": ("initial_learning_rate", 0),
    "keras.optimizers.schedules.CosineDecay": ("initial_learning_rate", 0),
    "keras.optimizers.schedules.CosineDecayRestarts": ("initial_learning_rate", 0),
    "keras.optimizers.schedules.PolynomialDecay": ("initial_learning_rate", 0),
    "keras.optimizers.schedules.InverseTimeDecay": ("initial_learning_rate", 0),
    "keras.optimizers.schedules.PiecewiseConstantDecay": ("values", 1),
}

# Keras callbacks that write files: rank 0 / the chief only. Value: the path argument.
FILE_CALLBACKS = {
    "keras.callbacks.ModelCheckpoint": ("filepath", 0),
    "keras.callbacks.TensorBoard": ("log_dir", 0),
    "keras.callbacks.CSVLogger": ("filename", 0),
}

# Model constructors (model classes defined in the script count too).
MODEL_CONSTRUCTORS = {"keras.Sequential", "keras.Model", "keras.models.Sequential",
                      "keras.models.Model"}

# Base classes of Keras layers (a model is a layer too).
LAYER_BASES = MODEL_CONSTRUCTORS | {"keras.layers.Layer", "keras.Layer"}

# Calls that create variables (or layers that will) besides model constructors: under
# tf.distribute they belong in the strategy's scope too.
VARIABLE_CREATOR_PREFIXES = ("keras.layers.", "keras.applications.", "keras.Input",
                             "keras.models.load_model", "keras.models.clone_model",
                             "keras.saving.load_model", "tf.Variable", "keras.metrics.")

# Keras loss classes: "keras.losses." + a capitalised name.
LOSS_PREFIX = "keras.losses."
# Keras metric classes: "keras.metrics." + a capitalised name.
METRIC_PREFIX = "keras.metrics."

# Where input pipelines start; Horovod shards right after these.
DATASET_SOURCES = {
    "tf.data.Dataset.from_tensor_slices", "tf.data.Dataset.from_tensors",
    "tf.data.Dataset.list_files", "tf.data.TFRecordDataset", "tf.data.TextLineDataset",
    "tf1.data.Dataset.from_tensor_slices", "tf1.data.TFRecordDataset",
}

# Sources whose length is known when the script runs (in-memory data).
IN_MEMORY_SOURCES = {"tf.data.Dataset.from_tensor_slices", "tf.data.Dataset.from_tensors",
                     "tf1.data.Dataset.from_tensor_slices"}

# Saving calls: method names on a model/checkpoint, and functions with the path argument.
SAVE_METHODS = {"save": ("filepath", 0), "save_weights": ("filepath", 0)}
SAVE_FUNCTIONS = {
    "tf.saved_model.save": ("export_dir", 1),
    "keras.models.save_model": ("filepath", 1),
    "keras.saving.save_model": ("filepath", 1),
}
# Receivers whose .save() is not TensorFlow's (numpy, pandas, plotting...).
NON_TF_RECEIVERS = {"np", "numpy", "pickle", "json", "joblib", "torch", "plt", "pd", "fig",
                    "Image", "img", "figure"}

# Libraries whose objects also have .fit()/.save(): calls on names built from these are not Keras.
NON_KERAS_LIBRARIES = ("sklearn", "xgboost", "lightgbm", "catboost", "statsmodels", "scipy",
                       "numpy", "pandas", "joblib", "torch")

# TF1 graph-mode training entry points.
TF1_SESSIONS = {"tf1.Session", "tf.Session", "tf1.InteractiveSession", "tf.InteractiveSession",
                "tf1.train.MonitoredTrainingSession",
                "tf.train.MonitoredTrainingSession", "tf1.train.MonitoredSession",
                "tf1.train.SingularMonitoredSession"}
STOP_HOOKS = {"tf1.train.StopAtStepHook": ("last_step", "num_steps"),
              "tf.train.StopAtStepHook": ("last_step", "num_steps"),
              "tf.estimator.StopAtStepHook": ("last_step", "num_steps")}

# Keras 3-only APIs: their presence means the script needs Keras 3 (Horovod cannot serve it).
KERAS3_ONLY_PREFIXES = ("keras.ops", "keras.random", "keras.config", "keras.tree",
                        "keras.export", "keras.distribution", "keras.layers.TorchModuleWrapper",
                        "keras.layers.JaxLayer", "keras.layers.FlaxLayer", "keras.quantizers")

# Public names that exist in Keras 3 only (TF >= 2.16 / keras 3.x; in no Keras 2 release), read
# from the KB and checked against it (tests/converters/test_convert_tables_kb.py): a script using one
# cannot run on Keras 2, whatever it imports.
KERAS3_ONLY_NAMES = {f"keras.{name}" for name in (
    "Variable", "DTypePolicy", "StatelessScope", "name_scope", "device", "Function", "version",
    "RematScope", "remat", "utils.PyDataset", "utils.Config", "callbacks.SwapEMAWeights",
    "layers.Pipeline", "layers.RMSNormalization", "layers.RandomColorJitter",
    "layers.MelSpectrogram", "layers.STFTSpectrogram", "layers.Solarization",
    "layers.Equalization", "layers.AutoContrast", "layers.RandomGrayscale",
    "layers.MaxNumBoundingBoxes", "optimizers.Lamb", "optimizers.Muon",
    "optimizers.LossScaleOptimizer", "losses.Tversky", "losses.Dice", "losses.CTC",
    "losses.Circle", "metrics.ConcordanceCorrelation", "metrics.PearsonCorrelation",
    "saving.KerasFileEditor", "visualization.draw_bounding_boxes", "initializers.STFT")}

# Known runtime limits of Keras 3 on current TF, each with its upstream issue: a conversion that
# would meet one is refused before it starts.
KERAS3_LIMITS = {
    "fit_under_mwms": {
        "what": ("Keras 3 model.fit() under MultiWorkerMirroredStrategy fails (\"Attempt to convert "
                 "a value (PerReplica...)\", checked on TF 2.21 / Keras 3.12 with two workers)"),
        "upstream": "keras-team/keras#20585"},
}

# tf.distribute strategies that train on one machine in one process.
SINGLE_MACHINE_STRATEGIES = {"tf.distribute.MirroredStrategy"}

# Keras 3 optimizer methods that apply gradients (Keras 2 has only apply_gradients / minimize).
KERAS3_OPTIMIZER_METHODS = ("apply", "stateless_apply")

# Preprocessing layers whose state is a vocabulary (Keras 2.15 keeps it in handlers that are
# listed among model.variables but are not variables: Horovod's broadcast callback fails on
# them), plus the other adapt()-able layers; adapt() must see the same data on every rank.
LOOKUP_LAYERS = {f"keras.layers.{ns}{name}" for ns in ("", "experimental.preprocessing.")
                 for name in ("StringLookup", "IntegerLookup", "TextVectorization")}
ADAPT_LAYERS = LOOKUP_LAYERS | {f"keras.layers.{ns}{name}" for ns in ("", "experimental.preprocessing.")
                                for name in ("Normalization", "Discretization")}

# TF1 variable initializer ops (graph code): Horovod broadcasts right after they run.
TF1_INITIALIZERS = {"tf1.global_variables_initializer", "tf.global_variables_initializer",
                    "tf1.initialize_all_variables", "tf.initialize_all_variables"}

# Dataset builders that read a folder or an array and return batched datasets (Keras): Horovod
# shards their batches by rank. Value: whether they shuffle unless told not to (then every rank
# needs the same seed, or the shards would not split one order between them).
DATASET_BUILDERS = {
    "keras.utils.image_dataset_from_directory": True,
    "keras.preprocessing.image_dataset_from_directory": True,
    "keras.utils.text_dataset_from_directory": True,
    "keras.preprocessing.text_dataset_from_directory": True,
    "keras.utils.audio_dataset_from_directory": True,
    "keras.utils.timeseries_dataset_from_array": False,
    "keras.preprocessing.timeseries_dataset_from_array": False,
}
# tf.data readers that batch (and by default shuffle) records themselves: sharded by rank like
# the builders above. Value: (keyword of their shuffle seed, position of batch_size).
BATCHING_READERS = {f"{tf}.data.experimental.{name}": ("shuffle_seed", 1)
                    for tf in ("tf", "tf1")
                    for name in ("make_csv_dataset", "make_batched_features_dataset")}
# tf.data sources no rule shards (a generator, a range, a saved dataset, other record formats):
# Horovod gives a warning naming them, since every worker would read all of it while the
# learning rate is scaled. Classes ending in "Dataset" under tf.data count too.
UNSHARDED_DATASET_SOURCES = {f"{tf}.data.{name}" for tf in ("tf", "tf1") for name in (
    "Dataset.from_generator", "Dataset.range", "Dataset.load", "experimental.load",
    "experimental.CsvDataset", "experimental.SqlDataset", "FixedLengthRecordDataset")}
# NumPy's global-generator shuffles (drawn alike on every worker unless the script seeds NumPy).
NUMPY_SHUFFLES = {"numpy.random.permutation", "numpy.random.shuffle"}
NUMPY_SEEDS = {"numpy.random.seed"}
# TensorFlow Datasets: split strings sharded with tfds.even_splits.
TFDS_LOADS = {"tensorflow_datasets.load"}
SEED_FOR_SHARDS = "1337"

# Calls that write files beside the model (summaries, image dumps) or delete them: rank 0 only
# under Horovod. Functions by canonical name; methods by name (fig.savefig). Not
# tf.io.write_file: scripts also write their input data with it, which every rank then reads.
RANK0_WRITE_FUNCTIONS = {
    "shutil.rmtree", "tf.io.gfile.rmtree", "keras.utils.save_img",
    "keras.preprocessing.image.save_img", "matplotlib.pyplot.savefig", "cv2.imwrite",
    "imageio.imwrite", "keras.utils.plot_model",
    "tf1.gfile.DeleteRecursively", "tf.gfile.DeleteRecursively",
}
RANK0_WRITE_METHODS = {"savefig"}
# img = array_to_img(x); img.save(path): image dumps through what these return.
IMAGE_MAKERS = {"keras.utils.array_to_img", "keras.preprocessing.image.array_to_img",
                "PIL.Image.fromarray"}
# TF1 summary writers: the other ranks write to a scratch folder (the writer object is used).
TF1_SUMMARY_WRITERS = {"tf1.summary.FileWriter": ("logdir", 0), "tf.summary.FileWriter": ("logdir", 0)}
# Summary writers: a no-op writer on the other ranks (code that writes through it keeps working).
SUMMARY_WRITERS = {"tf.summary.create_file_writer": "tf.summary.create_noop_writer()"}

# Loads of files a save wrote: path argument (keyword, position).
LOAD_FUNCTIONS = {
    "keras.models.load_model": ("filepath", 0),
    "keras.saving.load_model": ("filepath", 0),
    "tf.saved_model.load": ("export_dir", 0),
}
LOAD_METHODS = {"load_weights": ("filepath", 0)}

# Signs that a script is already distributed.
HOROVOD_MODULES = ("horovod",)
STRATEGIES = {"tf.distribute.MultiWorkerMirroredStrategy", "tf.distribute.MirroredStrategy",
              "tf.distribute.TPUStrategy", "tf.distribute.experimental.MultiWorkerMirroredStrategy",
              "tf.distribute.experimental.ParameterServerStrategy",
              "tf.distribute.ParameterServerStrategy"}

# --- Files only the chief writes, and what reads them (converters/script/chief_files.py) -----
# Writes that land on the chief alone once converted (besides FILE_CALLBACKS, SAVE_FUNCTIONS and
# SAVE_METHODS): function -> (keyword, position) of the path.
CHIEF_FILE_WRITERS = {
    "tf.summary.create_file_writer": ("logdir", 0), "tf1.summary.FileWriter": ("logdir", 0),
    "tf.train.CheckpointManager": ("directory", 1), "keras.utils.save_img": ("path", 0),
    "keras.preprocessing.image.save_img": ("path", 0), "keras.utils.plot_model": ("to_file", 1),
    "matplotlib.pyplot.savefig": ("fname", 0), "cv2.imwrite": ("filename", 0),
    "imageio.imwrite": ("uri", 0),
}
CHIEF_WRITE_METHODS = {"savefig": ("fname", 0)}
# Data files every worker would write alike (the same records, at the same path): written by
# the chief only (a with block), and read by the others from the chief's copy.
DATA_WRITERS = {"tf.io.TFRecordWriter": ("path", 0), "tf1.python_io.TFRecordWriter": ("path", 0)}
# Functions that make a path from a path (the dataflow follows them); PATH_JOINS add parts,
# PATH_KEEPS keep the same path (the others give a path somewhere under it).
PATH_FUNCTIONS = {"os.path.join", "os.path.abspath", "os.path.normpath", "os.path.realpath",
                  "os.path.expanduser", "os.path.dirname", "os.fspath", "str", "pathlib.Path",
                  "pathlib.PurePath", "tf.io.gfile.join", "tf.train.latest_checkpoint",
                  "tf1.train.latest_checkpoint", "glob.glob", "tf.io.gfile.glob", "sorted",
                  "list", "tuple"}
# ... of which these look at the files (a listing): reads themselves.
PATH_READS = {"tf.train.latest_checkpoint", "tf1.train.latest_checkpoint", "glob.glob",
              "tf.io.gfile.glob"}
PATH_METHODS = {"joinpath", "resolve", "absolute", "format", "with_suffix", "with_name",
                "expanduser"}
PATH_JOINS = {"os.path.join", "tf.io.gfile.join", "joinpath"}
PATH_KEEPS = {"str", "os.fspath", "pathlib.Path", "pathlib.PurePath", "os.path.normpath",
              "resolve", "absolute", "expanduser"}
# Calls that take a path without touching the files there (printing it, making the folder).
NOT_FILE_READS = {"print", "len", "repr", "isinstance", "max", "min", "sorted", "sum", "any",
                  "all", "enumerate", "zip", "list", "tuple", "set", "dict", "map", "filter",
                  "os.makedirs", "os.mkdir",
                  "tf.io.gfile.makedirs", "tf.print", "logging.info", "logging.warning",
                  "logging.debug", "logging.error", "absl.logging.info"}
NOT_FILE_READ_METHODS = {"append", "extend", "mkdir", "startswith", "endswith", "split",
                         "replace", "info", "warning", "debug", "error", "strip", "rstrip"}
# Reads made for their own sake by file utilities (copying the logs, listing a folder): run on
# the chief only, like the write (any other read waits for the chief's files instead).
GUARDED_READ_MODULES = {"shutil", "os", "glob", "pathlib", "subprocess", "zipfile", "tarfile"}
# tf.data sources that read files: tf.distribute splits them by element across workers.
FILE_DATASETS = {f"{tf}.data.{name}" for tf in ("tf", "tf1") for name in (
    "TFRecordDataset", "TextLineDataset", "FixedLengthRecordDataset", "experimental.CsvDataset")}
