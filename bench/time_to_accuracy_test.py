"""bench/time_to_accuracy.py: the first epoch line at the target from timed loom-catdog lines, the
summary over seeds, and a whole run of a stand-in command that prints such lines.
  python3 bench/time_to_accuracy_test.py
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import time_to_accuracy as tta  # noqa: E402

LINES = [(0.5, "loom-catdog: data d, model resnet18, device cuda"),
         (2.0, "Epoch 1/3 47/47 - 1s - 9ms/step - 1 img/s - loss 0.6 - accuracy 0.7 - val_loss 0.5 - val_accuracy 0.8123"),
         (3.0, "Epoch 2/3 47/47 - 1s - 9ms/step - 1 img/s - loss 0.4 - accuracy 0.9 - val_loss 0.3 - val_accuracy 0.9000"),
         (4.0, "Epoch 3/3 47/47 - 1s - 9ms/step - 1 img/s - loss 0.3 - accuracy 0.95 - val_loss 0.2 - val_accuracy 0.9250"),
         (4.1, "validation accuracy: 0.9990 (loss 0.2)")]


class TimeToAccuracy(unittest.TestCase):
    def test_first_epoch_at_the_target(self):
        hit, best = tta.first_reach(LINES, 0.9)
        self.assertEqual(hit, (3.0, 2, 0.9))
        self.assertEqual(best, 0.925)  # the summary line after the epochs is not an epoch

    def test_never_reached(self):
        hit, best = tta.first_reach(LINES, 0.95)
        self.assertIsNone(hit)
        self.assertEqual(best, 0.925)

    def test_summary(self):
        runs = [{"seconds_to_target": 8.0}, {"seconds_to_target": 10.0}, {"seconds_to_target": None}]
        s = tta.summary(runs, 0.9)
        self.assertEqual((s["runs"], s["reached"], s["mean_s"], s["min_s"], s["max_s"]), (3, 2, 9.0, 8.0, 10.0))
        self.assertAlmostEqual(s["stdev_s"], 1.414, places=3)

    def test_a_whole_run(self):
        # A stand-in trainer: prints its seed's epochs, reaching 0.9 in the second for seed 2 only.
        script = ("import sys; s = int(sys.argv[sys.argv.index('--seed') + 1]); "
                  "open(sys.argv[sys.argv.index('--out') + 1], 'w').write('model'); "
                  "[print(f'Epoch {e}/2 1/1 - val_accuracy {0.85 + 0.03 * e * (s - 1):.4f}', flush=True) "
                  "for e in (1, 2)]")
        with tempfile.TemporaryDirectory() as out:
            text = subprocess.run([sys.executable, os.path.join(HERE, "time_to_accuracy.py"), "--seeds", "1", "2",
                                   "--out", out, "--", sys.executable, "-c", script],
                                  check=True, capture_output=True, text=True).stdout
            rows = [json.loads(line) for line in text.splitlines()]
            self.assertEqual([r["seed"] for r in rows[:2]], [1, 2])
            self.assertIsNone(rows[0]["seconds_to_target"])
            self.assertEqual(rows[1]["epoch_at_target"], 2)
            self.assertEqual(rows[2]["reached"], 1)
            self.assertTrue(os.path.exists(os.path.join(out, "seed_2.log")))
            self.assertFalse(os.path.exists(os.path.join(out, "seed_2.safetensors")))  # deleted after the run
            subprocess.run([sys.executable, os.path.join(HERE, "time_to_accuracy.py"), "--seeds", "3", "--keep-models",
                            "--out", out, "--", sys.executable, "-c", script], check=True, capture_output=True)
            self.assertTrue(os.path.exists(os.path.join(out, "seed_3.safetensors")))


if __name__ == "__main__":
    unittest.main()
