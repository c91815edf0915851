"""Only what pyproject.toml cannot say: install ``runtime_guard-autoload.pth`` at the top of
site-packages, so ``RUNTIME_GUARD=1`` activates the loop-stall watchdog with no code change.
(``data-files`` would land under ``sys.prefix``, not site-packages.)"""

import os

from setuptools import setup
from setuptools.command.build_py import build_py

PTH = "runtime_guard-autoload.pth"
PTH_SOURCE = os.path.join("runtime_guard", "data", PTH)


class build_py_with_pth(build_py):
    def run(self):
        super().run()
        self.copy_file(PTH_SOURCE, os.path.join(self.build_lib, PTH), preserve_mode=False)

    def get_outputs(self, include_bytecode=True):
        return [*super().get_outputs(include_bytecode), os.path.join(self.build_lib, PTH)]


setup(cmdclass={"build_py": build_py_with_pth})
