"""Progress output of long fits: the one helper every training loop uses.

The ``verbose`` levels mean the same in every estimator:

* ``0`` (the default): silent. Grid searches multiply the output of their
  fits, so nothing is printed unless asked for.
* ``1``: a progress bar with the time left over the loop's steps (epochs,
  trees of a forest, growth levels, bandit rounds) when ``tqdm`` is
  installed (``pip install 'sklearn-difftrees[progress]'``); without tqdm,
  one line per step with the time spent and an estimate of the time left.
* ``2``: adds one line per step with its numbers (training loss, validation
  loss and score per epoch; a member's epochs and score per tree, ...).
* ``3``: also the inner loops (a forest's members, a polytope tree's stumps).

Bars go to ``stderr`` (tqdm's default); lines go to ``stdout`` (through
``tqdm.write`` while a bar is shown, so that the bar stays below them).
"""

import sys
import time

__all__ = ["Progress", "format_seconds"]


def _import_tqdm():
    """tqdm's console bar class, or ``None`` when tqdm is not installed.

    The plain console bar, not ``tqdm.auto``: the notebook widget needs
    ipywidgets and raises without it, and the console bar also renders in a
    notebook's output.
    """
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm


def format_seconds(seconds):
    """``"42s"``, ``"3m07s"`` or ``"1h02m"``."""
    seconds = max(0.0, float(seconds))
    if seconds < 60:
        return f"{seconds:.0f}s" if seconds >= 10 else f"{seconds:.1f}s"
    minutes, sec = divmod(int(round(seconds)), 60)
    if minutes < 60:
        return f"{minutes}m{sec:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def _format_value(value):
    if isinstance(value, float):
        return f"{value:.5f}"
    return str(value)


class Progress:
    """Progress over ``total`` steps of one loop, shown according to ``verbose``.

    Parameters
    ----------
    total : int
        Number of steps planned (an upper bound when the loop may stop early:
        the time left is then an upper bound too).
    desc : str
        What runs (the estimator's name), shown in front of the bar and lines.
    unit : str, default="epoch"
        What a step is ("epoch", "tree", "level", "round", ...).
    verbose : int, default=0
        The estimator's ``verbose`` (see the module docstring).
    """

    def __init__(self, total, *, desc, unit="epoch", verbose=0):
        self.total = int(total)
        self.desc = desc
        self.unit = unit
        self.verbose = int(verbose)
        self.n = 0
        self._start = time.perf_counter()
        self._bar = None
        self._closed = False
        if self.verbose >= 1:
            tqdm = _import_tqdm()
            if tqdm is not None:
                self._bar = tqdm(
                    total=self.total, desc=desc, unit=unit, leave=True, dynamic_ncols=True,
                    file=sys.stderr,
                )

    @property
    def enabled(self):
        return self.verbose >= 1

    def write(self, line):
        """Print ``line`` on stdout, above the bar when one is shown."""
        if self._bar is not None:
            self._bar.write(line, file=sys.stdout)
        else:
            print(line, flush=True)

    def update(self, n=1, *, info=None, note="", step_seconds=None, line=True):
        """Count ``n`` finished steps.

        ``info`` (name -> value) are the step's numbers, printed at
        ``verbose >= 2``. ``note`` is appended to the line; ``step_seconds``
        is the step's duration when known. With ``line=False`` only the bar
        moves (for fine-grained steps, such as bandit rounds, whose lines are
        written at coarser points with ``n=0``).
        """
        if not self.enabled:
            return
        self.n += n
        elapsed = time.perf_counter() - self._start
        if self._bar is not None and n:
            self._bar.update(n)
        if not line or (self._bar is not None and self.verbose < 2):
            return
        line = f"[{self.desc}] {self.unit} {self.n}/{self.total}"
        if self.verbose >= 2 and info:
            line += "".join(f"  {k} {_format_value(v)}" for k, v in info.items())
        line += note
        timing = [] if step_seconds is None else [f"{step_seconds:.2f}s"]
        if self._bar is None and self.n:
            left = elapsed / self.n * max(self.total - self.n, 0)
            timing += [f"{format_seconds(elapsed)} elapsed", f"<= {format_seconds(left)} left"]
        line += f"  ({', '.join(timing)})" if timing else ""
        self.write(line)

    def close(self, message=None):
        """End the display; ``message`` (e.g. "stopped early") is shown last.

        A loop that stops before ``total`` steps fills the bar, so that it
        ends at 100%. Closing twice is harmless.
        """
        if not self.enabled or self._closed:
            return
        self._closed = True
        elapsed = format_seconds(time.perf_counter() - self._start)
        if self._bar is not None:
            if message is not None:
                self._bar.total = self._bar.n
                self._bar.set_postfix_str(message, refresh=False)
            self._bar.close()
            self._bar = None
            return
        tail = f"; {message}" if message else ""
        self.write(f"[{self.desc}] {self.n}/{self.total} {self.unit}s in {elapsed}{tail}")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
