"""Accelerator design-space sweeps from Python (loom.dse.sweep); the compiled half is
loom._loom.dse, built with the DSE library."""
import os

from ._loom import dse as _dse
from .regress import _find_loom

__all__ = ["sweep"]


def sweep(sweeps, *, base=None, layers="all", model=None, image=224, jobs=1, out=None, executor="threads",
          loom=None, partition="", account="", max_running=0):
    """sweep(sweeps, *, base=None, layers='all', model=None, image=224, jobs=1, out=None,
    executor='threads', loom=None, partition='', account='', max_running=0) -> list of dicts

    The cross product of `sweeps` ({parameter: [values]}) over `base`, each point timed by the
    performance model with its area estimated; one record per point. executor 'threads' runs the
    points in this process; 'local' and 'slurm' run each as a cached dse-point job of a `loom
    regress` run in out/regress (a local process pool, or a Slurm job array with `partition`,
    `account` and `max_running`), its workers the `loom` executable beside the package, $LOOM, or
    `loom`.
    """
    exe = ""
    if executor != "threads":
        exe = loom or _find_loom()
    return _dse.sweep(sweeps, base=base, layers=layers, model=model, image=image, jobs=jobs,
                      out=None if out is None else os.fspath(out), executor=executor, loom=exe, partition=partition,
                      account=account, max_running=max_running)

