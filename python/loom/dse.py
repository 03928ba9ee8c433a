"""Accelerator design-space sweeps from Python (loom.dse.sweep); the compiled half is
loom._loom.dse, built with the DSE library."""
import os

from ._loom import dse as _dse
from .regress import _find_loom

__all__ = ["sweep"]


def sweep(sweeps, *, base=None, layers="all", model=None, image=224, jobs=1, out=None, executor="threads",
          loom=None, partition="", account="", max_running=0, energy_table="asic-45nm", accuracy_inputs=None,
          objectives=("cycles", "area"), part="xc7z020", fits=None, min_accuracy=None, max_energy=None):
    """sweep(sweeps, *, base=None, layers='all', model=None, image=224, jobs=1, out=None,
    executor='threads', loom=None, partition='', account='', max_running=0, energy_table='asic-45nm',
    accuracy_inputs=None, objectives=('cycles', 'area'), part='xc7z020', fits=None, min_accuracy=None,
    max_energy=None) -> list of dicts

    The cross product of `sweeps` ({parameter: [values]}, "precision": ["w8a8", "w4a8", ...] among
    them) over `base`, each point timed by the performance model with its area and its energy per
    inference by `energy_table` (docs/energy.md), a model's accuracy measured on `accuracy_inputs`
    inputs (default 16); the front over two or three `objectives` (cycles, energy, area, asic_area,
    accuracy) within the constraints `fits` (a part that every point must fit; `part`: the part the
    area shares are of), `min_accuracy` and `max_energy` (uJ); one record per point. executor
    'threads' runs the points in this process; 'local' and 'slurm' run each as a cached dse-point
    job of a `loom regress` run in out/regress (a local process pool, or a Slurm job array with
    `partition`, `account` and `max_running`), its workers the `loom` executable beside the
    package, $LOOM, or `loom`.
    """
    exe = ""
    if executor != "threads":
        exe = loom or _find_loom()
    return _dse.sweep(sweeps, base=base, layers=layers, model=model, image=image, jobs=jobs,
                      out=None if out is None else os.fspath(out), executor=executor, loom=exe, partition=partition,
                      account=account, max_running=max_running, energy_table=energy_table,
                      accuracy_inputs=accuracy_inputs, objectives=list(objectives), part=part, fits=fits,
                      min_accuracy=min_accuracy, max_energy=max_energy)
