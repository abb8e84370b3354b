"""Which rule runs for which target and training style, in order. Rules as data: adding a
recipe step is one line here plus one small transform."""
from __future__ import annotations

from dataclasses import dataclass

from converters.script.transforms.callbacks import HorovodCallbacks
from converters.script.transforms.chief_reads import ChiefReads
from converters.script.transforms.custom_loop import (DistributeSteps, PerExampleLoss, ScaleLoss,
                                                     VariablesAsNumbers)
from converters.script.transforms.file_callbacks import ChiefCallbackPaths, Rank0Callbacks
from converters.script.transforms.fit_args import QuietWorkers, SplitSteps
from converters.script.transforms.global_batch import GlobalBatch
from converters.script.transforms.horovod_inputs import AdaptWholeData, ShardArrays, ShardBuilders
from converters.script.transforms.rank0_files import Rank0Writes
from converters.script.transforms.xla import NoXLA, NoXLAForStrategy
from converters.script.transforms.gradient_tape import BroadcastAfterFirstStep, DistributedTape
from converters.script.transforms.learning_rate import ScaleLearningRate
from converters.script.transforms.optimizer import LoadedOptimizer, WrapOptimizer
from converters.script.transforms.same_shuffle import SameShuffle
from converters.script.transforms.saving import ChiefSaves, Rank0Saves
from converters.script.transforms.scope import StrategyScope
from converters.script.transforms.setup import HorovodSetup, StrategySetup
from converters.script.transforms.sharding import ShardDatasets
from converters.script.transforms.tf1 import FeedDictData, SessionBroadcast, TF1Hooks
from converters.script.transforms.tfd_io import (ChiefWrites, CollectiveSaves, ElementShards,
                                                 LoadFromChief, LocalPredict, WorkerBatches)
from converters.script.transforms.tfd_losses import LossSites
from converters.script.transforms.tfd_steps import EvalStepLoss, InlineSteps, TrainStepLoss
from converters.script.transforms.tfd_strategy import MultiWorkerStrategy, OwnStrategy
from core.vocabulary import SCRIPT_TARGETS as TARGETS

ALL = frozenset({"keras_fit", "custom_loop", "tf1_session", "estimator"})
# Not a style of its own: a fit() whose model overrides train_step with a GradientTape.
TRAIN_STEP = "train_step"
# Not a style either: a script written for MirroredStrategy (tf-distribute only). Its scope,
# global batch and strategy.run are there already: only these rules apply to it.
MIRRORED = "mirrored"
MIRRORED_RULES = frozenset({"TFD005", "TFD012", "TFD021", "TFD022", "TFD030", "TFD031", "TFD032",
                            "TFD033", "TFD034", "TFD035", "TFD052", "TFD001"})


@dataclass(frozen=True)
class Rule:
    id: str
    target: str
    styles: frozenset
    transform: type
    summary: str


def _r(id, target, styles, transform, summary):
    return Rule(id, target, frozenset(styles) if styles != ALL else ALL, transform, summary)


RULES: list[Rule] = [
    # --- Horovod: the documented recipe, step by step -------------------------------------
    # first: its barriers go in before other rules regroup statements
    _r("HVD033", "horovod", ALL, ChiefReads,
       "reads of rank 0's files wait for them (or run on rank 0); shared data files by rank 0"),
    _r("HVD010", "horovod", ALL, ScaleLearningRate, "learning rate (and schedules) x hvd.size()"),
    _r("HVD011", "horovod", {"keras_fit", "tf1_session", "estimator"}, WrapOptimizer,
       "optimizer wrapped in hvd.DistributedOptimizer (string optimizers too)"),
    _r("HVD013", "horovod", {"keras_fit"}, LoadedOptimizer,
       "models loaded with load_model come back with the optimizer wrapped (hvd.load_model)"),
    _r("HVD012", "horovod", {"keras_fit", "custom_loop"}, NoXLA,
       "jit_compile turned off (XLA has no kernel for Horovod's allreduce)"),
    _r("HVD020", "horovod", {"keras_fit"}, HorovodCallbacks,
       "BroadcastGlobalVariablesCallback(0), MetricAverageCallback() first"),
    _r("HVD021", "horovod", {"keras_fit"}, Rank0Callbacks, "file-writing callbacks on rank 0 only"),
    _r("HVD022", "horovod", {"keras_fit"}, QuietWorkers, "verbose output on rank 0 only"),
    _r("HVD023", "horovod", {"keras_fit"}, SplitSteps, "steps_per_epoch divided by hvd.size()"),
    _r("HVD030", "horovod", ALL, Rank0Saves, "model.save / checkpoints on rank 0 only"),
    _r("HVD031", "horovod", ALL, Rank0Writes,
       "summary writers, image dumps, plots and rmtree on rank 0 only"),
    _r("HVD040", "horovod", ALL, ShardDatasets, "datasets sharded by rank"),
    _r("HVD041", "horovod", {"keras_fit"}, ShardArrays, "arrays given to fit() split by rank"),
    _r("HVD042", "horovod", ALL, ShardBuilders,
       "image/text_dataset_from_directory, make_csv_dataset and tfds.load sharded by rank"),
    _r("HVD043", "horovod", ALL, AdaptWholeData,
       "adapt() of preprocessing layers sees all the data on every rank"),
    _r("HVD044", "horovod", {"keras_fit", "custom_loop"}, SameShuffle,
       "np.random.permutation/shuffle drawn alike on every worker (unless NumPy is seeded)"),
    _r("HVD050", "horovod", {"custom_loop", TRAIN_STEP}, DistributedTape,
       "hvd.DistributedGradientTape (opened as one when gradients are taken inside the block)"),
    _r("HVD051", "horovod", {"custom_loop"}, BroadcastAfterFirstStep,
       "broadcast variables after the first step"),
    _r("HVD060", "horovod", {"tf1_session", "estimator"}, TF1Hooks,
       "BroadcastGlobalVariablesHook, rank-0 checkpoints, fewer steps"),
    _r("HVD061", "horovod", {"tf1_session"}, SessionBroadcast,
       "broadcast after global_variables_initializer"),
    _r("HVD063", "horovod", {"tf1_session"}, FeedDictData,
       "feed_dict batches: each worker must feed its own (checked by hand)"),
    # module-level setup goes last: it runs when the whole module is left
    _r("HVD001", "horovod", ALL, HorovodSetup, "import Horovod, hvd.init(), one GPU per local rank"),
    # --- tf.distribute.MultiWorkerMirroredStrategy ---------------------------------------
    _r("TFD035", "tf-distribute", {"keras_fit", "custom_loop"}, ChiefReads,
       "reads of the chief's files wait for them (or run on the chief); shared data files too"),
    _r("TFD004", "tf-distribute", {"keras_fit", "custom_loop"}, OwnStrategy,
       "a strategy picked through a helper (distribute_utils) refused: it would be a second one"),
    _r("TFD005", "tf-distribute", {MIRRORED}, MultiWorkerStrategy,
       "MirroredStrategy (one machine) -> the MultiWorkerMirroredStrategy created at start"),
    _r("TFD012", "tf-distribute", {"keras_fit", "custom_loop"}, NoXLAForStrategy,
       "jit_compile turned off (XLA cannot compile the all-reduce on CPU workers)"),
    _r("TFD010", "tf-distribute", {"keras_fit", "custom_loop"}, StrategyScope,
       "model and optimizer built in strategy.scope()"),
    _r("TFD020", "tf-distribute", {"keras_fit", "custom_loop"}, GlobalBatch,
       "global batch = per-worker batch x replicas"),
    _r("TFD023", "tf-distribute", {"keras_fit", "custom_loop"}, WorkerBatches,
       "dataset builders and fit() on arrays: batch per worker, global batch x replicas"),
    _r("TFD025", "tf-distribute", {"keras_fit", "custom_loop"}, ElementShards,
       "datasets read from files split by element across workers (one process's batches)"),
    _r("TFD024", "tf-distribute", {"keras_fit", "custom_loop"}, SameShuffle,
       "np.random.permutation/shuffle drawn alike on every worker (unless NumPy is seeded)"),
    _r("TFD021", "tf-distribute", {"keras_fit"}, ChiefCallbackPaths,
       "file-writing callbacks write for real on the chief only"),
    _r("TFD022", "tf-distribute", {"keras_fit"}, QuietWorkers, "verbose output on the chief only"),
    _r("TFD030", "tf-distribute", {"keras_fit", "custom_loop"}, ChiefSaves,
       "saves land at the real path on the chief only"),
    _r("TFD031", "tf-distribute", {"keras_fit", "custom_loop"}, ChiefWrites,
       "summary writers, image dumps, plots and rmtree on the chief only"),
    _r("TFD032", "tf-distribute", {"keras_fit", "custom_loop"}, LoadFromChief,
       "weights loaded after training come from the chief; chief-only model files refused"),
    _r("TFD034", "tf-distribute", {"keras_fit", "custom_loop"}, CollectiveSaves,
       "saves made on one worker only refused (saving is collective)"),
    _r("TFD033", "tf-distribute", {"keras_fit", "custom_loop"}, LocalPredict,
       "predict() after training run by each worker on all of its input"),
    _r("TFD046", "tf-distribute", {TRAIN_STEP}, TrainStepLoss,
       "train_step loss as this replica's share of the global-batch loss (compiled_loss as is)"),
    _r("TFD047", "tf-distribute", {TRAIN_STEP}, EvalStepLoss,
       "test_step loss objects evaluated per replica"),
    _r("TFD053", "tf-distribute", {"custom_loop"}, InlineSteps,
       "training steps written inline in a loop refused (strategy.run needs a function)"),
    _r("TFD045", "tf-distribute", {"custom_loop"}, PerExampleLoss,
       "Keras loss objects return per-example losses"),
    _r("TFD048", "tf-distribute", {"keras_fit", "custom_loop"}, LossSites,
       "loss objects called in layers (per-replica mean) and in steps (global-batch share)"),
    _r("TFD050", "tf-distribute", {"custom_loop"}, ScaleLoss,
       "loss averaged over the global batch / divided by the replicas"),
    _r("TFD051", "tf-distribute", {"custom_loop"}, DistributeSteps,
       "steps through strategy.run on a distributed dataset"),
    _r("TFD052", "tf-distribute", {"custom_loop"}, VariablesAsNumbers,
       "int(ckpt.step) reads the (mirrored) variable through .numpy()"),
    _r("TFD001", "tf-distribute", ALL, StrategySetup, "MultiWorkerMirroredStrategy first"),
]


def rules_for(target: str, styles) -> list[Rule]:
    styles = set(styles)
    return [r for r in RULES if r.target == target and r.styles & styles]
