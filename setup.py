"""Build of pau's native core (pau._core) with pybind11.

Opt-in environment variables:
  PAU_NATIVE=1    add -march=native (never on by default: such builds crash on older CPUs)
  PAU_SANITIZE=1  build with AddressSanitizer and UndefinedBehaviorSanitizer
  PAU_BUILD_JOBS  how many translation units compile at once (default: every core)
"""

import os
import platform
from glob import glob

from pybind11.setup_helpers import ParallelCompile, Pybind11Extension, build_ext, has_flag
from setuptools import setup

VERSION = "0.1.0"

# The translation units compile in parallel, one per core (PAU_BUILD_JOBS overrides); the
# README's first command spends most of its time here.
ParallelCompile("PAU_BUILD_JOBS").install()

compile_args = ["-O3", "-pthread"]
link_args = ["-pthread"]
if os.environ.get("PAU_NATIVE") == "1":
    compile_args.append("-march=native")
if os.environ.get("PAU_SANITIZE") == "1":
    compile_args += ["-fsanitize=address,undefined", "-fno-omit-frame-pointer", "-O1", "-g"]
    link_args += ["-fsanitize=address,undefined"]

ext = Pybind11Extension(
    "pau._core",
    sorted(glob("csrc/*.cpp") + glob("csrc/bindings/*.cpp") + glob("csrc/core/*.cpp")),  # sorted: reproducible builds
    cxx_std=17,
    define_macros=[("PAU_VERSION", f'"{VERSION}"')],
    extra_compile_args=compile_args,
    extra_link_args=link_args,
    depends=sorted(glob("csrc/core/*.hpp") + glob("csrc/bindings/*.hpp")),
)

#: On x86-64, no jump crosses or ends at a 32-byte boundary: on CPUs with Intel's microcode
#: for the JCC erratum (Skylake to Cascade Lake and their Xeons) such jumps run from the
#: legacy decoder, so a hot loop's speed would depend on where the linker put it. The
#: assembler pads instead (GNU as 2.34 and later; skipped where the compiler does not take
#: the flag). Newer CPUs are not affected (docs/architecture.md).
JCC_FLAG = "-Wa,-mbranches-within-32B-boundaries"


class BuildExt(build_ext):
    def build_extensions(self) -> None:
        if platform.machine().lower() in ("x86_64", "amd64") and has_flag(self.compiler, JCC_FLAG):
            for e in self.extensions:
                e.extra_compile_args.append(JCC_FLAG)
        super().build_extensions()


setup(version=VERSION, ext_modules=[ext], cmdclass={"build_ext": BuildExt})
