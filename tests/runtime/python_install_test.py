#!/usr/bin/env python3
"""`pip install <package>/python` into a fresh virtual environment: a wheel builds
from (a copy of) the emitted folder, installs there, and the environment imports
attnforge and its native module from its own site-packages, with no PYTHONPATH.
Offline: setuptools comes from this Python (no build isolation), and nothing
else is fetched."""
import os
import shutil
import subprocess
import sys
import tempfile


def main(package_python):
    with tempfile.TemporaryDirectory() as tmp:
        source = os.path.join(tmp, "python")
        shutil.copytree(package_python, source, ignore=shutil.ignore_patterns(".build"))
        wheels = os.path.join(tmp, "wheels")
        subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-build-isolation",
                        "--no-deps", "--no-index", "--wheel-dir", wheels, source], check=True)
        [wheel] = os.listdir(wheels)
        # A wheel with a built extension is tagged for this Python and platform.
        assert "none-any" not in wheel, wheel
        env = os.path.join(tmp, "env")
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", env], check=True)
        python = os.path.join(env, "bin", "python")
        subprocess.run([sys.executable, "-m", "pip", "--python", python, "install", "--quiet",
                        "--no-index", "--no-deps", os.path.join(wheels, wheel)], check=True)
        clean = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        shown = subprocess.run(
            [python, "-c", "import attnforge; print(attnforge.__file__); "
             "print(len(attnforge.available_kernels()))"],
            env=clean, cwd=tmp, capture_output=True, text=True, check=True).stdout.split()
        assert shown[0].startswith(env), shown
        assert int(shown[1]) > 0, shown
    print("installed and imported:", wheel)


if __name__ == "__main__":
    main(sys.argv[1])
