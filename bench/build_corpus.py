"""Build the reference corpus for bench/bench_speed.py (nothing here is committed).

Downloads the wheels ray==2.60.0, transformers==5.23.0 and vllm==0.33.0 with
``pip download --no-deps`` into ``bench/corpus/wheels`` and unpacks their ``.py``
files into ``bench/corpus/src/<wheel name>/``. Idempotent: a wheel already downloaded
or unpacked is reused.

    python bench/build_corpus.py            # build (or check) the corpus
    python bench/build_corpus.py --stats    # print files and lines only
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "corpus"
WHEELS = CORPUS / "wheels"
SRC = CORPUS / "src"
PACKAGES = ("ray==2.60.0", "transformers==5.23.0", "vllm==0.33.0")


def _wheel_for(spec: str) -> Path | None:
    name, version = spec.split("==")
    for whl in sorted(WHEELS.glob("*.whl")):
        parts = whl.name.split("-")
        if parts[0].lower().replace("_", "-") == name and parts[1] == version:
            return whl
    return None


def download(spec: str) -> Path:
    whl = _wheel_for(spec)
    if whl is not None:
        return whl
    WHEELS.mkdir(parents=True, exist_ok=True)
    # --only-binary: the corpus is what users install; --python-version pins the
    # wheel tag so the same files come down whatever interpreter runs this script.
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
           "--python-version", "3.11", "--platform", "manylinux2014_x86_64",
           "--platform", "manylinux_2_17_x86_64", "--platform", "manylinux_2_28_x86_64",
           "--platform", "any", "-d", str(WHEELS), spec]
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, timeout=1800)
    whl = _wheel_for(spec)
    if whl is None:
        raise SystemExit(f"pip downloaded no wheel for {spec}")
    return whl


def unpack(whl: Path) -> Path:
    dest = SRC / whl.name.split("-")[0].lower()
    done = dest / ".unpacked"
    if done.exists():
        return dest
    with zipfile.ZipFile(whl) as zf:
        for info in zf.infolist():
            if info.filename.endswith(".py") and not info.is_dir():
                zf.extract(info, dest)
    done.write_text(whl.name + "\n")
    return dest


def files() -> list[Path]:
    """Every corpus file, in a stable order."""
    return sorted(p for p in SRC.rglob("*.py") if p.is_file())


def stats() -> tuple[int, int]:
    n_files = n_lines = 0
    for p in files():
        n_files += 1
        n_lines += p.read_bytes().count(b"\n")
    return n_files, n_lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stats", action="store_true", help="only print the corpus size")
    args = ap.parse_args()
    if not args.stats:
        for spec in PACKAGES:
            print(f"{spec}: {unpack(download(spec)).relative_to(HERE)}", flush=True)
    n_files, n_lines = stats()
    print(f"corpus: {n_files:,} files, {n_lines:,} lines in {SRC.relative_to(HERE.parent)}")


if __name__ == "__main__":
    main()
