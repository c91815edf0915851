import pytest

from rg_testutil import run_code

pytestmark = pytest.mark.timeout(120)


def test_import_is_cheap_and_lazy() -> None:
    r = run_code("""
        import sys
        import runtime_guard
        assert 'ray' not in sys.modules and 'torch' not in sys.modules, 'heavy import'
        assert 'asyncio' not in sys.modules
        for name in runtime_guard.__all__:
            if name not in ('ray', 'torch'):
                getattr(runtime_guard, name)
        assert 'ray' not in sys.modules and 'torch' not in sys.modules
        print('OK')
    """)
    assert r.returncode == 0, r.stderr
    assert "OK" in r.stdout


def test_submodules_reachable_as_attributes() -> None:
    r = run_code("""
        import runtime_guard
        assert callable(runtime_guard.ray.interruptible_get)
        assert callable(runtime_guard.torch.install_distributed_teardown)
        print('OK')
    """, timeout=120)
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("extra", ["ray", "torch"])
def test_missing_extra_names_pip_install(extra: str) -> None:
    r = run_code(f"""
        import sys
        sys.modules[{extra!r}] = None  # simulate the extra not being installed
        import runtime_guard
        try:
            getattr(runtime_guard, {extra!r})
        except ImportError as e:
            print('MSG', e)
    """)
    assert f"pip install 'shutdown-lint-runtime[{extra}]'" in r.stdout, r.stdout + r.stderr


def test_pth_hook_is_inert_without_env() -> None:
    r = run_code("""
        import sys
        import runtime_guard._pth_hook
        assert 'runtime_guard.watchdog' not in sys.modules and 'asyncio' not in sys.modules
        print('OK')
    """)
    assert "OK" in r.stdout, r.stderr
