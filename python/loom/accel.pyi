"""Type stubs of loom.accel (python/src/accel.cc)."""
from typing import Any, Dict

class Config:
    name: str
    batch: int
    block_in: int
    block_out: int
    inp_bits: int
    wgt_bits: int
    acc_bits: int
    out_bits: int
    inp_buffer_bytes: int
    wgt_buffer_bytes: int
    acc_buffer_bytes: int
    out_buffer_bytes: int
    uop_buffer_bytes: int
    def __init__(self) -> None: ...
    @staticmethod
    def load(path: str) -> "Config": ...
    @staticmethod
    def from_json(text: str) -> "Config": ...
    def to_json(self) -> str: ...
    def to_dict(self) -> Dict[str, Any]: ...
    def validate(self) -> None: ...
    def save(self, path: str) -> None: ...
    def area(self, packed_gemm: bool = True) -> Dict[str, float]: ...
