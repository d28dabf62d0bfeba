"""tools_path: puts the tools/ folders on sys.path, so that the tests import the scripts they test by name."""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
for _wing in ("dev", "fleet", "gpu", "measure", "stories"):
    _path = os.path.join(ROOT, "tools", _wing)
    if _path not in sys.path:
        sys.path.insert(0, _path)
