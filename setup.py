"""Ship the committed results/ inside the wheel, as sts_lib/data/results/ (see sts_lib/results.py).

Everything else about the package is declared in pyproject.toml. A clone reads results/ directly;
an installed package (Colab: ``pip install git+...``) reads this copy, made when the wheel is built.
"""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

RESULTS = Path(__file__).resolve().parent / "results"
PATTERNS = ("*.json", "*.png", "README.md")


class BuildWithResults(build_py):
    def run(self):
        super().run()
        target = Path(self.build_lib) / "sts_lib" / "data" / "results"
        target.mkdir(parents=True, exist_ok=True)
        for pattern in PATTERNS:
            for src in sorted(RESULTS.glob(pattern)):
                self.copy_file(str(src), str(target / src.name))
        # The confirmation on fresh seeds (its summary only; the fresh documents stay in the repository).
        # ... and the floor test's validation, which chapter 8 prints.
        for summary in (RESULTS / "confirmation" / "confirmation.json", RESULTS / "validation" / "floor-test.json"):
            if summary.exists():
                (target / summary.parent.name).mkdir(exist_ok=True)
                self.copy_file(str(summary), str(target / summary.parent.name / summary.name))


setup(cmdclass={"build_py": BuildWithResults})
