"""Where and when a reported number was measured (demo and benchmark scripts).

Scores of gradient-trained trees move with the CPU's floating point, and
times with its speed, so every generated table says on which CPU and at
what date it was produced. Generated tables live between markers in the
documents, so that a script can regenerate them in place:
``<!-- KEY:begin ... -->`` / ``<!-- KEY:end -->``.
"""

import datetime
import os
import platform
import subprocess
from pathlib import Path

__all__ = ["cpu_model", "machine_line", "replace_marked_section"]


def cpu_model():
    """The CPU's model name (``lscpu``, else ``/proc/cpuinfo``, else the platform)."""
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                return line.split(":", 1)[1].strip()
    except (OSError, subprocess.CalledProcessError):
        pass
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_line():
    """``"CPU: <model> (<n> logical CPUs, <arch>), <UTC date and time>"``."""
    now = datetime.datetime.now(datetime.timezone.utc)
    return (f"CPU: {cpu_model()} ({os.cpu_count()} logical CPUs, {platform.machine()}), "
            f"{now:%Y-%m-%d %H:%M} UTC")


def replace_marked_section(path, key, text):
    """Replace the text between the ``key`` markers of ``path`` by ``text``.

    Raises ``ValueError`` when the file lacks the markers (they are placed
    by hand, where the generated block belongs).
    """
    begin = f"<!-- {key}:begin"
    end = f"<!-- {key}:end -->"
    p = Path(path)
    doc = p.read_text()
    if begin not in doc or end not in doc:
        raise ValueError(f"{path} has no '{begin} ... -->' / '{end}' markers.")
    head, rest = doc.split(begin, 1)
    first_line, _ = rest.split("\n", 1)
    _, tail = rest.split(end, 1)
    p.write_text(f"{head}{begin}{first_line}\n{text.strip()}\n{end}{tail}")
