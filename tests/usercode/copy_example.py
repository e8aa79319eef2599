"""examples/copy_service.py loaded as a module (examples/ is not a package)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def load_copy_service() -> ModuleType:
    """The example module, registered as ``copy_service`` (its dataclasses look it up)."""
    spec = importlib.util.spec_from_file_location("copy_service",
                                                  ROOT / "examples" / "copy_service.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["copy_service"] = mod
    spec.loader.exec_module(mod)
    return mod
