"""pip install --no-build-isolation ./python: setuptools drives memloom's CMake build (nothing
is downloaded) and packages memloom, memfabric_hybrid, pylibwholegraph and the extension, with
memloom's libraries in memloom/lib and memloom-run in memloom/bin.

MEMLOOM_CMAKE_BUILD_DIR names an existing CMake build of this tree to reuse (it is brought up to
date, not reconfigured); otherwise a fresh one is made under python/build/."""

import glob
import os
import re
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def project_version():
    with open(os.path.join(ROOT, "CMakeLists.txt")) as cmake:
        return re.search(r"project\(memloom VERSION ([0-9.]+)", cmake.read()).group(1)


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build_dir = os.environ.get("MEMLOOM_CMAKE_BUILD_DIR")
        if build_dir:
            build_dir = os.path.abspath(build_dir)
        else:
            build_dir = os.path.join(os.path.abspath(self.build_temp), "cmake")
            subprocess.check_call([
                "cmake", "-S", ROOT, "-B", build_dir, "-G", "Ninja",
                "-DCMAKE_BUILD_TYPE=Release", "-DMEMLOOM_BUILD_TESTS=OFF",
                "-DMEMLOOM_BUILD_BENCH=OFF", "-DMEMLOOM_BUILD_EXAMPLES=OFF",
                "-DMEMLOOM_BUILD_PYTHON=ON", f"-DPython3_EXECUTABLE={sys.executable}"])
        jobs = os.environ.get("MEMLOOM_JOBS", "2")
        subprocess.check_call(["cmake", "--build", build_dir, "-j", jobs, "--target",
                               "memloom_python", "memloom-run"])
        # Install into a staging prefix (inside the CMake build): installed files carry
        # relative run paths, so they work from wherever pip puts them.
        staging = os.path.join(build_dir, "python-staging")
        shutil.rmtree(staging, ignore_errors=True)
        subprocess.check_call(["cmake", "--install", build_dir, "--prefix", staging],
                              stdout=subprocess.DEVNULL)
        (module,) = glob.glob(os.path.join(staging, "lib*", "python3*", "*-packages",
                                           "_memloom_native*.so"))
        target = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copy2(module, target)
        package = os.path.join(os.path.dirname(target), "memloom")
        os.makedirs(os.path.join(package, "lib"), exist_ok=True)
        os.makedirs(os.path.join(package, "bin"), exist_ok=True)
        for library in glob.glob(os.path.join(staging, "lib*", "libmemloom*.so*")):
            shutil.copy2(library, os.path.join(package, "lib"), follow_symlinks=False)
        shutil.copy2(os.path.join(staging, "bin", "memloom-run"), os.path.join(package, "bin"))


setup(
    name="memloom",
    version=project_version(),
    description="memloom: WholeMemory and MemFabric over one memory fabric (with the "
                "memfabric_hybrid and pylibwholegraph.torch drop-ins)",
    packages=["memloom", "memfabric_hybrid", "pylibwholegraph", "pylibwholegraph.torch"],
    package_dir={"": "."},
    ext_modules=[Extension("_memloom_native", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    python_requires=">=3.9",
    zip_safe=False,
)
