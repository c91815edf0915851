"""The runtime distribution (``shutdown-lint-runtime``): only what its pyproject.toml cannot say: install ``runtime_guard-autoload.pth`` at the top of
site-packages, so ``RUNTIME_GUARD=1`` activates the loop-stall watchdog with no code change.
(``data-files`` would land under ``sys.prefix``, not site-packages.)

Regular wheels get the file from ``build_lib``. Editable installs (``pip install -e .``, PEP 660)
put only what is written straight into the unpacked wheel at the top of site-packages: setuptools
configures ``install.install_lib`` to be that directory while it builds an editable wheel, so in
``editable_mode`` the .pth is copied there.
"""

import os

from setuptools import setup
from setuptools.command.build_py import build_py

PTH = "runtime_guard-autoload.pth"
PTH_SOURCE = os.path.join("runtime_guard", "data", PTH)


class build_py_with_pth(build_py):
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            wheel_root = self.get_finalized_command("install").install_lib
            if wheel_root:
                self.copy_file(PTH_SOURCE, os.path.join(wheel_root, PTH), preserve_mode=False)
            return
        self.copy_file(PTH_SOURCE, os.path.join(self.build_lib, PTH), preserve_mode=False)

    def get_outputs(self, include_bytecode=True):
        outputs = super().get_outputs(include_bytecode)
        if getattr(self, "editable_mode", False):
            return outputs
        return [*outputs, os.path.join(self.build_lib, PTH)]


setup(cmdclass={"build_py": build_py_with_pth})
