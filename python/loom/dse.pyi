"""Type stubs of loom.dse (python/src/dse.cc)."""
import os
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

from .accel import Config

def sweep(sweeps: Mapping[str, Sequence[float]], *, base: Optional[Union[Config, str, os.PathLike]] = None,
          layers: str = "all", model: Optional[str] = None, image: int = 224, jobs: int = 1,
          out: Optional[Union[str, os.PathLike]] = None, executor: str = "threads",
          loom: Optional[str] = None, partition: str = "", account: str = "",
          max_running: int = 0) -> List[Dict[str, Any]]: ...
