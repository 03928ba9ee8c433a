"""Type stubs of loom.dse (python/src/dse.cc)."""
import os
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

from .accel import Config

def sweep(sweeps: Mapping[str, Sequence[Union[float, str]]], *, base: Optional[Union[Config, str, os.PathLike]] = None,
          layers: str = "all", model: Optional[str] = None, image: int = 224, jobs: int = 1,
          out: Optional[Union[str, os.PathLike]] = None, executor: str = "threads",
          loom: Optional[str] = None, partition: str = "", account: str = "",
          max_running: int = 0, energy_table: str = "asic-45nm", accuracy_inputs: Optional[int] = None,
          objectives: Sequence[str] = ("cycles", "area"), part: str = "xc7z020", fits: Optional[str] = None,
          min_accuracy: Optional[float] = None, max_energy: Optional[float] = None) -> List[Dict[str, Any]]: ...
