"""TensorBoard's own readers load loom's event files (reference test, label `reference`).

usage: tensorboard_events.py TOOL WORKDIR   (TOOL: the tensorboard_tool binary)

The raw records (event_file_loader, which checks each record's CRCs), the EventAccumulator's
scalars and text tensor, and the plugin accumulator TensorBoard's server uses must all hold
every value of loom's History, at float32 precision as simple_value stores them.
"""
import glob
import json
import os
import subprocess
import sys

import numpy as np
from tensorboard.backend.event_processing import event_accumulator, event_file_loader
from tensorboard.backend.event_processing import plugin_event_accumulator
from tensorboard.util import tensor_util

tool, work = sys.argv[1], sys.argv[2]
os.makedirs(work, exist_ok=True)
subprocess.run([tool, work], check=True)
logs = os.path.join(work, "logs")
with open(os.path.join(work, "expected.json")) as f:
    expected = json.load(f)
with open(os.path.join(work, "summary.txt")) as f:
    summary = "".join("    " + line + "\n" for line in f.read().splitlines())
history = expected["history"]
metrics = ["loss", "accuracy", "val_loss", "val_accuracy", "lr"]
want = {m: [(e["epoch"], np.float32(e[m])) for e in history] for m in metrics}
want["batch_loss"] = sorted((int(s), np.float32(v)) for s, v in expected["batch_loss"].items())
assert len(history) == 3 and len(want["batch_loss"]) == 4, expected

# The raw events: file_version first, wall times in order. The loader stops at the first record
# whose length or data CRC fails, so reading all of them proves every CRC.
files = glob.glob(os.path.join(logs, "events.out.tfevents.*"))
assert len(files) == 1, files
events = list(event_file_loader.EventFileLoader(files[0]).Load())
assert events[0].file_version == "brain.Event:2", events[0]
times = [e.wall_time for e in events]
assert times == sorted(times) and times[0] > 1.6e9, times
assert len(events) == 2 + 4 + 3 * 6, len(events)

# The classic accumulator: simple_value scalars and the text tensor.
acc = event_accumulator.EventAccumulator(logs, size_guidance={event_accumulator.SCALARS: 0,
                                                               event_accumulator.TENSORS: 0})
acc.Reload()
tags = acc.Tags()
assert sorted(tags["scalars"]) == sorted(metrics + ["batch_loss", "images_per_second"]), tags
for tag, values in want.items():
    got = [(s.step, np.float32(s.value)) for s in acc.Scalars(tag)]
    assert got == values, (tag, got, values)
rates = acc.Scalars("images_per_second")
assert [r.step for r in rates] == [0, 1, 2] and all(r.value > 0 for r in rates), rates
assert tags["tensors"] == ["model_summary"], tags
text = acc.Tensors("model_summary")
assert len(text) == 1 and text[0].step == 0, text
assert tensor_util.make_ndarray(text[0].tensor_proto).item().decode() == summary, text[0]
assert acc.SummaryMetadata("model_summary").plugin_data.plugin_name == "text"
assert "Conv2d" in summary and "Linear" in summary, summary

# The plugin accumulator behind `tensorboard --logdir`: scalars migrate to the scalars plugin.
plugins = plugin_event_accumulator.EventAccumulator(logs, size_guidance={"tensors": 0})
plugins.Reload()
assert set(plugins.ActivePlugins()) >= {"scalars", "text"}, plugins.ActivePlugins()
assert "model_summary" in plugins.PluginTagToContent("text")
for tag, values in want.items():
    got = [(t.step, np.float32(tensor_util.make_ndarray(t.tensor_proto).item())) for t in plugins.Tensors(tag)]
    assert got == values, (tag, got, values)
text = plugins.Tensors("model_summary")[0]
assert tensor_util.make_ndarray(text.tensor_proto).item().decode() == summary

count = sum(len(v) for v in want.values())
print(f"tensorboard events: {count} scalars + images/s x3 + the text summary read back by tensorboard "
      f"{__import__('tensorboard').__version__}")
