"""Type stubs of loom.regress (python/loom/regress.py over python/src/regress.cc)."""
import os
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Union

class RegressRun(NamedTuple):
    exit_code: int
    records: List[Dict[str, Any]]

def run(manifest: Union[str, os.PathLike], *, out: Union[str, os.PathLike], executor: str = "local", jobs: int = 0,
        only: Sequence[str] = ..., force: bool = False, loom: Optional[str] = None) -> RegressRun: ...
