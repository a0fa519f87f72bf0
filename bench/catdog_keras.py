#!/usr/bin/env python3
"""The seed's Keras program, run by Keras itself (tf-keras + tensorflow-cpu), as a yardstick.

The seed model as written (Conv2D(32, 3, 3) -> strides 3, MaxPooling2D, Flatten, Dense 128,
Dense 1 sigmoid), Adam, binary cross-entropy, ImageDataGenerator(rescale=1/255, shear_range=0.2,
zoom_range=0.2, horizontal_flip=True), flow_from_directory at 64x64, batch 32, 25 epochs.
Prints the validation accuracy of each epoch and `validation accuracy: A` for the last one.
Needs a venv with tf-keras, tensorflow-cpu, scipy and pillow (not part of loom's build).

    python3 bench/catdog_keras.py --data ../shared/data/cats_dogs --seed 1
"""
import argparse
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

import tf_keras as keras  # noqa: E402
from tf_keras.preprocessing.image import ImageDataGenerator  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", default="../shared/data/cats_dogs")
    p.add_argument("--epochs", type=int, default=25)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--interpolation", default="nearest", help="flow_from_directory's resize")
    args = p.parse_args()
    keras.utils.set_random_seed(args.seed)

    model = keras.Sequential([
        keras.layers.Conv2D(32, 3, 3, input_shape=(64, 64, 3), activation="relu"),
        keras.layers.MaxPooling2D(pool_size=(2, 2)),
        keras.layers.Flatten(),
        keras.layers.Dense(128, activation="relu"),
        keras.layers.Dense(1, activation="sigmoid"),
    ])
    model.compile(optimizer="adam", loss="binary_crossentropy", metrics=["accuracy"])
    train_gen = ImageDataGenerator(rescale=1.0 / 255, shear_range=0.2, zoom_range=0.2, horizontal_flip=True)
    val_gen = ImageDataGenerator(rescale=1.0 / 255)
    flow = dict(target_size=(64, 64), batch_size=32, class_mode="binary", interpolation=args.interpolation)
    train = train_gen.flow_from_directory(f"{args.data}/train", seed=args.seed, **flow)
    val = val_gen.flow_from_directory(f"{args.data}/val", shuffle=False, **flow)
    start = time.perf_counter()
    history = model.fit(train, epochs=args.epochs, validation_data=val, verbose=2)
    accuracy = history.history["val_accuracy"][-1]
    print(f"validation accuracy: {accuracy:.4f} wall {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
