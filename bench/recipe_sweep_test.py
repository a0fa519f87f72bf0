"""bench/recipe_sweep.py with a stand-in trainer: each variant's flags reach the command, the table
carries the time to the target, the best epoch, the first epoch's end, the convolution search's
seconds and the last ms/step, model files are removed, an unknown variant is refused and a spent
budget skips what is left.
  python3 bench/recipe_sweep_test.py
"""
import contextlib
import io
import json
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import recipe_sweep  # noqa: E402

# Prints two epochs; reaches 0.9 in the second only when given --lr (so the flags must arrive);
# writes the model file it is told to, as loom-catdog does.
TRAINER = ("import sys; a = sys.argv; out = a[a.index('--out') + 1]; open(out, 'w').write('m'); "
           "open(out + '.ckpt', 'w').write('c'); fast = '--lr' in a; "
           "print('loom-catdog: header', flush=True); "
           "[print(f'Epoch {e}/2 47/47 - 1s - {20 - e}ms/step - 1 img/s - loss 0.5 - "
           "val_accuracy {0.8 + (0.05 if fast else 0.01) * e:.4f}', flush=True) for e in (1, 2)]; "
           "print('loom-catdog: convolution algorithms chosen for 42 shapes and passes in 3.25 s "
           "(timed: --conv-benchmark)', flush=True)")


class RecipeSweep(unittest.TestCase):
    def run_sweep(self, out, *args):
        text = io.StringIO()
        with contextlib.redirect_stdout(text):
            rc = recipe_sweep.main(["--out", out, *args, "--", sys.executable, "-c", TRAINER])
        return rc, text.getvalue()

    def test_flags_arrive_and_the_table_says_what_happened(self):
        with tempfile.TemporaryDirectory() as out:
            rc, text = self.run_sweep(out, "--only", "fast", "lr-0.004")
            self.assertEqual(rc, 0)
            rows = [json.loads(line) for line in open(os.path.join(out, "sweep.jsonl"))]
            self.assertEqual([r["variant"] for r in rows], ["fast", "lr-0.004"])
            self.assertIsNone(rows[0]["seconds_to_target"])
            self.assertEqual(rows[1]["epoch_at_target"], 2)
            self.assertEqual((rows[1]["best_epoch"], rows[1]["ms_per_step"], rows[1]["search_s"]), (2, 18.0, 3.25))
            self.assertLess(rows[1]["first_epoch_s"], rows[1]["wall_s"])
            self.assertIn("| lr-0.004 | `--lr 0.004` | 0 |", text)
            self.assertRegex(text, r"\| 0\.9000 \(2\) \| \d+\.\d \| 3\.25 \| 18 \|")  # first epoch s varies
            for name in ("fast", "lr-0.004"):
                self.assertTrue(os.path.exists(os.path.join(out, name, "seed_1.log")))
                self.assertFalse([f for f in os.listdir(os.path.join(out, name)) if "safetensors" in f])

    def test_epochs_without_validation_still_time_the_first_epoch_and_the_steps(self):
        lines = [(0.5, "loom-catdog: header"),
                 (1.5, "Epoch 1/3 step 10/47 - ETA 1s - 9.00ms/step - 1 img/s - loss 0.6"),
                 (2.0, "Epoch 1/3 47/47 - 1s - 9.00ms/step - 1 img/s - loss 0.6"),
                 (2.6, "Epoch 2/3 47/47 - 0s - 6.00ms/step - 1 img/s - loss 0.5 - val_accuracy 0.8500"),
                 (3.1, "Epoch 3/3 47/47 - 0s - 5.50ms/step - 1 img/s - loss 0.4")]
        facts = recipe_sweep.epoch_facts(lines)
        self.assertEqual((facts["first_epoch_s"], facts["ms_per_step"], facts["best_epoch"]), (2.0, 5.5, 2))

    def test_a_spent_budget_skips_the_rest(self):
        with tempfile.TemporaryDirectory() as out:
            rc, text = self.run_sweep(out, "--budget", "5", "--only", "fast")
            self.assertEqual(rc, 0)
            self.assertIn("not run: the budget ran out", text)

    def test_an_unknown_variant_is_refused(self):
        with tempfile.TemporaryDirectory() as out, contextlib.redirect_stderr(io.StringIO()) as err:
            with self.assertRaises(SystemExit):
                recipe_sweep.main(["--out", out, "--only", "nonsense", "--", "true"])
            self.assertIn("no variant 'nonsense'", err.getvalue())


if __name__ == "__main__":
    unittest.main()
