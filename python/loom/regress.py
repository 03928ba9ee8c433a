"""Regression runs from Python: loom.regress.run(manifest, out=...) runs a manifest as
`loom regress` does (a local process pool or Slurm; each job's result cached by its inputs and
this build) and returns each job's result as a record."""
import collections
import json
import os

from . import _loom

RegressRun = collections.namedtuple("RegressRun", ["exit_code", "records"])
RegressRun.__doc__ = """exit_code: 0 every job passed, 1 failures, 3 incomplete, 130 interrupted (as `loom regress`);
records: one dict per job of the manifest (name, group, workload, config, backend, status,
message, seconds, attempt, host, metrics, checks)."""


def _find_loom():
    """The `loom` executable beside this package: $LOOM, the build tree's bin/, or the install's."""
    if os.environ.get("LOOM"):
        return os.environ["LOOM"]
    here = os.path.dirname(os.path.abspath(_loom.__file__))
    for rel in ("../../bin/loom", "../../../../bin/loom"):  # build/python/loom, PREFIX/lib/pythonX.Y/site-packages/loom
        path = os.path.normpath(os.path.join(here, rel))
        if os.access(path, os.X_OK):
            return path
    raise _loom.ConfigError("cannot find the loom executable beside the package (loom.regress.run and loom.dse.sweep's "
                            "local and slurm executors run it); give loom=PATH "
                            "or set $LOOM")


def run(manifest, *, out, executor="local", jobs=0, only=(), force=False, loom=None):
    """run(manifest, *, out, executor='local', jobs=0, only=(), force=False, loom=None) -> RegressRun

    Runs the regression manifest (docs/regress.md) into the work folder `out`, on `jobs` local
    processes (0: the cores) or as a Slurm job array (executor='slurm'); `only` keeps the jobs whose
    name contains one of its strings; `force` reruns cached jobs. Reports (report.md, .csv, .xml)
    are written to `out` as by the command line.
    """
    exe = loom or _find_loom()
    if isinstance(only, str):
        only = [only]
    r = _loom.regress.run(os.fspath(manifest), os.fspath(out), executor, int(jobs), list(only), bool(force), exe)
    records = []
    for job in r["jobs"]:
        path = os.path.join(os.fspath(out), "jobs", job["name"], "result.json")
        try:
            with open(path) as f:
                result = json.load(f)
        except (OSError, ValueError):
            result = {"status": "not run"}
        records.append({**job, "status": result.get("status"), "message": result.get("message", ""),
                        "seconds": result.get("seconds"), "attempt": result.get("attempt"),
                        "host": result.get("host"), "metrics": result.get("metrics", {}),
                        "checks": result.get("checks", [])})
    return RegressRun(r["exit_code"], records)
