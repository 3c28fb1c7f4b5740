"""scripts/ray_wheel_parts.sh, the way Ray's wheel reaches the lent H200 in parts, run here on a synthetic wheel (test
data: a package named ray of 250 KB, split into 100 KB parts): prepare, receive each part into a $HOME of the test's
own, refuse when an earlier part is gone, join, install with --no-deps and name the requirements that are missing."""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "scripts" / "ray_wheel_parts.sh"


def _wheel(folder: Path) -> Path:
    """A valid pure-Python wheel named ray 0.0.0: ray and ray.serve, a 250 KB blob, and requirements (core, the serve
    extra, another extra) of which one exists nowhere."""
    path = folder / "ray-0.0.0-py3-none-any.whl"
    files = {
        "ray/__init__.py": b"__version__ = '0.0.0'\n",
        "ray/serve/__init__.py": b"",
        "ray/blob.bin": os.urandom(250_000),
        "ray-0.0.0.dist-info/METADATA": (
            "Metadata-Version: 2.1\nName: ray\nVersion: 0.0.0\nRequires-Dist: packaging\n"
            "Requires-Dist: pytest ; extra == \"serve\"\n"
            "Requires-Dist: graphlab-test-no-such-package ; extra == \"serve\"\n"
            "Requires-Dist: sphinx ; extra == \"docs\"\n").encode(),
        "ray-0.0.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = "".join(f"{name},,\n" for name in files) + "ray-0.0.0.dist-info/RECORD,,\n"
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data)
        zf.writestr("ray-0.0.0.dist-info/RECORD", record)
    return path


@pytest.fixture
def run(tmp_path):
    home, bin_dir = tmp_path / "home", tmp_path / "bin"
    home.mkdir()
    bin_dir.mkdir()
    (bin_dir / "python3").symlink_to(sys.executable)  # the script's python3: this one, with pip
    env = {**os.environ, "HOME": str(home), "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
           "RAY_PARTS_DIR": str(tmp_path / "ray"), "PART": "100000", "SKIP_DEPS": "1",
           "WHEEL": str(_wheel(tmp_path)), "PYTHONPATH": ""}

    def go(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["bash", str(SCRIPT), *args], env=env, capture_output=True, text=True, timeout=300)

    go.home, go.dir = home, tmp_path / "ray"  # type: ignore[attr-defined]
    return go


def test_the_wheel_travels_in_parts_and_installs_with_its_missing_requirements_named(run):
    made = run("prepare")
    assert made.returncode == 0, made.stderr
    manifest = (run.dir / "MANIFEST").read_text().split("\n")
    parts = [line.split() for line in manifest if line.startswith("part ")]
    assert [p[1] for p in parts] == ["ray.whl.part-00", "ray.whl.part-01", "ray.whl.part-02"]
    assert all(int(p[3]) <= 100_000 for p in parts)
    # what ray and its serve extra require, not the other extras
    assert (run.dir / "requires.txt").read_text().split() == ["packaging", "pytest", "graphlab-test-no-such-package"]

    assert run("receive", "0").returncode == 0
    assert run("receive", "1").returncode == 0
    (run.home / "parts" / "ray.whl.part-00").unlink()              # the machine was given back meanwhile
    gone = run("receive", "2")
    assert gone.returncode == 3 and "part 0" in gone.stderr and "receive 0" in gone.stderr
    for n in ("0", "1", "2"):
        assert run("receive", n).returncode == 0

    missing = run("install")
    assert missing.returncode == 4, missing.stderr
    named = missing.stderr.split("missing: ")[1].split(" (carry")[0]
    assert named == "graphlab-test-no-such-package", missing.stderr                # pytest and packaging are here
    joined = run.home / "ray-wheel" / "ray-0.0.0-py3-none-any.whl"
    wheel_line = next(line.split() for line in manifest if line.startswith("wheel "))
    assert hashlib.sha256(joined.read_bytes()).hexdigest() == wheel_line[2]  # the parts joined are the wheel
    assert (run.home / "site-ray" / "ray" / "blob.bin").stat().st_size == 250_000

    (run.dir / "requires.txt").write_text("packaging\npytest\n")
    done = run("install")
    assert done.returncode == 0, done.stderr
    assert "ray 0.0.0 and ray.serve import from" in done.stdout and str(run.home / "site-ray") in done.stdout


def test_a_part_not_carried_or_out_of_range_is_a_clear_error(run):
    assert run("prepare").returncode == 0
    (run.dir / "parts" / "ray.whl.part-00").unlink()
    no_part = run("receive", "0")
    assert no_part.returncode == 2 and "was not carried" in no_part.stderr
    beyond = run("receive", "7")
    assert beyond.returncode == 2 and "3 parts" in beyond.stderr
    assert run("receive", "x").returncode == 2 and run("nothing").returncode == 2
