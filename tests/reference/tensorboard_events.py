"""TensorBoard's own readers load loom's event files (reference test, label `reference`).

usage: tensorboard_events.py TOOL WORKDIR   (TOOL: the tensorboard_tool binary)

The raw records (event_file_loader, which checks each record's CRCs), the EventAccumulator's
scalars and text tensor, and the plugin accumulator TensorBoard's server uses must all hold
every value of loom's History, at float32 precision as simple_value stores them, laid out as
Keras' TensorBoard callback lays them out: runs train/ and validation/ with the same tags
(epoch_loss, epoch_accuracy), so that one chart draws both; steps are epochs counted from 1.
"""
import glob
import json
import os
import subprocess
import sys

import numpy as np
from tensorboard.backend.event_processing import event_accumulator, event_file_loader
from tensorboard.backend.event_processing import plugin_event_multiplexer
from tensorboard.util import tensor_util

tool, work = sys.argv[1], sys.argv[2]
os.makedirs(work, exist_ok=True)
subprocess.run([tool, work], check=True)
logs = os.path.join(work, "logs")
with open(os.path.join(work, "expected.json")) as f:
    expected = json.load(f)
with open(os.path.join(work, "summary.txt")) as f:
    summary = "".join("    " + line + "\n" for line in f.read().splitlines())
history = expected["history"]  # History::to_json: "epoch" counted from 0
# (run, tag) of each History metric, as Keras names them.
where = {"loss": ("train", "epoch_loss"), "accuracy": ("train", "epoch_accuracy"),
         "lr": ("train", "epoch_learning_rate"), "val_loss": ("validation", "epoch_loss"),
         "val_accuracy": ("validation", "epoch_accuracy")}
want = {where[m]: [(e["epoch"] + 1, np.float32(e[m])) for e in history] for m in where}
want[("train", "batch_loss")] = sorted((int(s), np.float32(v))
                                       for s, v in expected["batch_loss"].items())
assert len(history) == 3 and len(want[("train", "batch_loss")]) == 4, expected
assert sorted(os.listdir(logs)) == ["train", "validation"], os.listdir(logs)

# The raw events: file_version first, wall times in order. The loader stops at the first record
# whose length or data CRC fails, so reading all of them proves every CRC.
for run, count in [("train", 2 + 4 + 3 * 4), ("validation", 1 + 3 * 2)]:
    files = glob.glob(os.path.join(logs, run, "events.out.tfevents.*"))
    assert len(files) == 1, files
    events = list(event_file_loader.EventFileLoader(files[0]).Load())
    assert events[0].file_version == "brain.Event:2", events[0]
    times = [e.wall_time for e in events]
    assert times == sorted(times) and times[0] > 1.6e9, times
    assert len(events) == count, (run, len(events))

# The classic accumulator, one per run: simple_value scalars and the text tensor.
accs = {}
for run in ["train", "validation"]:
    acc = event_accumulator.EventAccumulator(os.path.join(logs, run),
                                             size_guidance={event_accumulator.SCALARS: 0,
                                                            event_accumulator.TENSORS: 0})
    acc.Reload()
    accs[run] = acc
assert sorted(accs["train"].Tags()["scalars"]) == sorted(
    ["epoch_loss", "epoch_accuracy", "epoch_learning_rate", "batch_loss",
     "epoch_images_per_second"]), accs["train"].Tags()
assert sorted(accs["validation"].Tags()["scalars"]) == ["epoch_accuracy", "epoch_loss"]
for (run, tag), values in want.items():
    got = [(s.step, np.float32(s.value)) for s in accs[run].Scalars(tag)]
    assert got == values, (run, tag, got, values)
rates = accs["train"].Scalars("epoch_images_per_second")
assert [r.step for r in rates] == [1, 2, 3] and all(r.value > 0 for r in rates), rates
tags = accs["train"].Tags()
assert tags["tensors"] == ["model_summary"], tags
text = accs["train"].Tensors("model_summary")
assert len(text) == 1 and text[0].step == 0, text
assert tensor_util.make_ndarray(text[0].tensor_proto).item().decode() == summary, text[0]
assert accs["train"].SummaryMetadata("model_summary").plugin_data.plugin_name == "text"
assert "Conv2d" in summary and "Linear" in summary, summary

# The multiplexer behind `tensorboard --logdir` finds both runs, and the plugin accumulator
# each run's scalars in the scalars plugin: one chart per tag, with a line per run.
multiplexer = plugin_event_multiplexer.EventMultiplexer()
multiplexer.AddRunsFromDirectory(logs)
multiplexer.Reload()
assert sorted(multiplexer.Runs()) == ["train", "validation"], multiplexer.Runs()
for (run, tag), values in want.items():
    plugins = multiplexer.GetAccumulator(run)
    assert "scalars" in plugins.ActivePlugins(), plugins.ActivePlugins()
    got = [(t.step, np.float32(tensor_util.make_ndarray(t.tensor_proto).item()))
           for t in plugins.Tensors(tag)]
    assert got == values, (run, tag, got, values)
text = multiplexer.GetAccumulator("train").Tensors("model_summary")[0]
assert tensor_util.make_ndarray(text.tensor_proto).item().decode() == summary

count = sum(len(v) for v in want.values())
print(f"tensorboard events: {count} scalars in train/ and validation/ + images/s x3 + the text "
      f"summary read back by tensorboard "
      f"{__import__('tensorboard').__version__}")
