"""Regenerate finality_client/_generated from docs/openapi.json with
openapi-python-client (pinned in pyproject's `generate` extra), or with
`--check` fail when the committed code differs from what the document
generates (CI runs that)."""

import filecmp
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SPEC = HERE.parent.parent / "docs" / "openapi.json"
TARGET = HERE / "finality_client" / "_generated"


def generate(into: Path) -> None:
    subprocess.run(
        [
            sys.executable, "-m", "openapi_python_client", "generate",
            "--path", str(SPEC),
            "--config", str(HERE / "generator.yaml"),
            "--meta", "none",
            "--output-path", str(into),
            "--overwrite",
        ],
        check=True,
        stdout=subprocess.DEVNULL,
    )


def differences(a: Path, b: Path) -> list:
    cmp = filecmp.dircmp(a, b, ignore=["__pycache__"])
    out = [f"only in {a.name}: {n}" for n in cmp.left_only]
    out += [f"only in the generated: {n}" for n in cmp.right_only]
    out += [str(a / n) for n in cmp.diff_files]
    for sub in cmp.common_dirs:
        out += differences(a / sub, b / sub)
    return out


def main() -> int:
    if "--check" in sys.argv:
        with tempfile.TemporaryDirectory() as tmp:
            fresh = Path(tmp) / "_generated"
            generate(fresh)
            diff = differences(TARGET, fresh)
            if diff:
                print("clients/python is not generated from docs/openapi.json; run "
                      "`python clients/python/generate.py`:", *diff, sep="\n  ")
                return 1
        print("clients/python: generated code matches docs/openapi.json")
        return 0
    if TARGET.exists():
        shutil.rmtree(TARGET)
    generate(TARGET)
    return 0


if __name__ == "__main__":
    sys.exit(main())
