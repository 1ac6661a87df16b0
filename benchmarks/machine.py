"""A description of the machine and library versions a run measured."""

from __future__ import annotations

import os
import platform
from importlib import metadata
from pathlib import Path

from google.protobuf.internal import api_implementation


def _cpu_model() -> str:
    """The CPU model name from ``/proc/cpuinfo`` (Linux), else what ``platform`` knows."""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text(errors="replace").splitlines():
            if line.startswith("model name"):
                return line.partition(":")[2].strip()
    return platform.processor() or platform.machine()


def _version(*distributions: str) -> str:
    """The installed version of the first of ``distributions`` that is installed."""
    for name in distributions:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return "not installed"


def machine_info() -> dict[str, str]:
    """CPU, cores, OS, load, and the versions of Python and the libraries the contenders use."""
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    info = {
        "cpu": _cpu_model(),
        "cores": f"{os.cpu_count()} logical, {usable} usable",
        "os": platform.platform(terse=True),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "numpy": _version("numpy"),
        "protobuf": f"{_version('protobuf')} ({api_implementation.Type()})",
        "tensorflow": _version("tensorflow-cpu", "tensorflow"),
        "tfrecord (vahidk)": _version("tfrecord"),
    }
    if hasattr(os, "getloadavg"):
        info["load average at start"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    return info
