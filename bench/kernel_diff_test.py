"""bench/kernel_diff.py on two small files in ncu's CSV format (bench/testdata/ncu_*.csv, made
for the test): names shortened, units converted, the kernel only one side has found, per-step
figures, and a file that is not ncu's refused.
  python3 bench/kernel_diff_test.py
"""
import contextlib
import io
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kernel_diff  # noqa: E402

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "testdata")
PLAIN, DDP = os.path.join(DATA, "ncu_plain.csv"), os.path.join(DATA, "ncu_ddp.csv")


class KernelDiff(unittest.TestCase):
    def test_names_lose_return_type_and_arguments_but_keep_templates(self):
        self.assertEqual(kernel_diff.short_name("void cudnn::conv_fwd<float, 4>(cudnn::Params, int)"),
                         "cudnn::conv_fwd<float, 4>")
        self.assertEqual(kernel_diff.short_name("f<(int)4>(int)"), "f<(int)4>")
        self.assertEqual(kernel_diff.short_name("bare_kernel"), "bare_kernel")
        # loom's namespaces, which ncu printed differently in two runs, are dropped.
        self.assertEqual(kernel_diff.short_name("void loom::<unnamed>::copy_kernel<float, float>(int)"),
                         kernel_diff.short_name("void detail::<unnamed>::copy_kernel<float, float>(int)"))
        self.assertEqual(kernel_diff.short_name("loom::<unnamed>::k<loom::Add<float>>"), "k<Add<float>>")
        self.assertEqual(len(kernel_diff.short_name("k" * 200)), 90)

    def test_units_become_microseconds_and_progress_lines_are_skipped(self):
        kernels = kernel_diff.read_kernels(PLAIN)
        self.assertEqual([name for name, _ in kernels],
                         ["cudnn::conv_fwd<float, 4>", "relu_kernel<float>", "adam_kernel"])
        self.assertAlmostEqual(kernels[0][1], 12.5)
        self.assertAlmostEqual(kernels[1][1], 2.048)  # 2,048 ns

    def test_the_added_kernel_comes_first_and_equal_ones_are_left_out(self):
        rows = kernel_diff.diff_rows(kernel_diff.group(kernel_diff.read_kernels(PLAIN)),
                                     kernel_diff.group(kernel_diff.read_kernels(DDP)))
        self.assertEqual([r[0] for r in rows], ["dist::flat_copy_kernel"])
        self.assertEqual(rows[0][1:4], (0, 0.0, 1))

    def test_per_step_figures_divide_by_the_steps(self):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            kernel_diff.main([PLAIN, DDP, "--steps", "2", "--labels", "graph", "graph_ddp"])
        text = out.getvalue()
        self.assertIn("| `dist::flat_copy_kernel` | 0 | 0.0 | 0.5 | 15.6 | +15.6 |", text)
        self.assertIn("| **all kernels, per step** | 1.5 | 9.3 | 2 | 24.9 | +15.7 |", text)

    def test_a_file_without_ncu_columns_is_refused_by_name(self):
        with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as f:
            f.write('"a","b"\n"1","2"\n')
        try:
            with self.assertRaises(SystemExit) as e:
                kernel_diff.read_kernels(f.name)
            self.assertIn("Kernel Name", str(e.exception))
            self.assertIn(f.name, str(e.exception))
        finally:
            os.unlink(f.name)


if __name__ == "__main__":
    unittest.main()
