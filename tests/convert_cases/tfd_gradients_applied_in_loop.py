import tensorflow as tf

model = tf.keras.Sequential([tf.keras.layers.Dense(3)])
optimizer = tf.keras.optimizers.SGD(0.1)
loss_object = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)


def grad(model, inputs, targets):
    with tf.GradientTape() as tape:
        loss_value = loss_object(targets, model(inputs, training=True))
    return loss_value, tape.gradient(loss_value, model.trainable_variables)


def main():
    for epoch in range(2):
        for x, y in train_dataset:
            loss_value, grads = grad(model, x, y)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))


main()
