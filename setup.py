"""The compiled kernels of DP-τCC (``dptaucc._native``); everything else is in pyproject.toml.

The extension is optional: without a C compiler the build goes on, and the package runs its
numpy kernels, which give bitwise the same results, only slower on large matrices.
"""

import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

#: flags that keep the C arithmetic the numpy path's, bit for bit: IEEE double operations in
#: the order written (no fast-math, no fused multiply-add). The source uses GCC/Clang vector
#: extensions; other compilers fail on it, and the install goes on without the module.
EXACT_FLAGS = {"unix": ["-O3", "-fno-fast-math", "-ffp-contract=off", "-Wno-psabi"]}


#: the C library's maths, linked so that ``exp`` binds to its current version (unlinked, the
#: loader binds the oldest, glibc's slower compatibility wrapper; the same values)
LIBRARIES = [] if sys.platform == "win32" else ["m"]


class ExactBuildExt(build_ext):
    """build_ext with the exact-arithmetic flags of the compiler in use."""

    def build_extensions(self):
        flags = EXACT_FLAGS.get(self.compiler.compiler_type, [])
        for ext in self.extensions:
            ext.extra_compile_args = [*ext.extra_compile_args, *flags]
        super().build_extensions()


setup(
    ext_modules=[Extension("dptaucc._native", ["dptaucc/_native.c"], libraries=LIBRARIES,
                           optional=True)],
    cmdclass={"build_ext": ExactBuildExt},
)
