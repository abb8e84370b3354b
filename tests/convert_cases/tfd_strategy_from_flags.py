import tensorflow as tf
from official.common import distribute_utils


def run(flags_obj):
    strategy = distribute_utils.get_distribution_strategy(
        distribution_strategy=flags_obj.distribution_strategy, num_gpus=flags_obj.num_gpus)
    strategy_scope = distribute_utils.get_strategy_scope(strategy)
    with strategy_scope:
        model = tf.keras.Sequential([tf.keras.layers.Dense(10)])
        model.compile(optimizer="sgd", loss="mse")
    model.fit(dataset, epochs=1)
