"""How many BLAS threads the local engine's vector products run on.

An exact nearest search is one float32 matrix-vector product (BLAS ``sgemv``), and NumPy's
BLAS (OpenBLAS in its wheels) splits one product over every core. A search running alone
gains from that; several searches at once do not: each product asks the one process-wide
pool of BLAS threads for every core, so four concurrent callers on two cores run eight
threads and wait on each other, and their throughput falls to about half a lone caller's
(``benchmarks/bench_concurrency.py``).

So the products go through :func:`blas_product`, one gate per process (the BLAS thread count
is process-wide, whatever engine asks):

- while products overlap (a product starts while another runs), BLAS runs on **one thread**
  a product: the concurrent callers spread over the cores, each product on one;
- after :data:`ALONE_STREAK` products in a row that overlapped no other, the thread count in
  force before is restored, and a product alone uses every core again.

The count changes only between products (a product that arrives while another runs on every
core waits for it to finish, a product's length at most), never while one of the engine's
products runs: OpenBLAS's thread count is one process-wide setting, and changing it while
another thread is inside BLAS is not safe (``threadpoolctl`` issues #176 and #205). BLAS calls
made by other code in the process at the same time are not coordinated: they see the count
the gate has set. The count is set with ``threadpoolctl`` (its ``ThreadpoolController.limit``
on the ``blas`` API, and the limiter's ``restore_original_limits``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

logger = logging.getLogger(__name__)

ALONE_STREAK = 8
"""Products in a row that overlapped no other, after which a product alone runs on every core
again (the BLAS thread count in force before the gate set one)."""


class BlasGate:
    """The process's gate on BLAS threads (see the module doc); :func:`blas_product` uses the
    one instance, :data:`BLAS_GATE`.

    Args:
        limit: sets BLAS to one thread and returns an object whose
            ``restore_original_limits()`` undoes it (default: ``threadpoolctl``'s, on the
            ``blas`` API); a test passes its own to watch the changes. When it fails
            (``threadpoolctl`` missing from an install that predates it, a BLAS it cannot
            drive), the gate logs a warning once and lets every product through from then on:
            slower with concurrent callers, never a failed search.
    """

    def __init__(self, limit: Any = None) -> None:
        self._condition = threading.Condition()
        self._running = 0
        self._waiting = 0
        self._overlaps = 0  # how many times a product started beside another
        self._alone = 0  # products in a row that overlapped no other
        self._limiter: Any = None  # the one-thread limit in force, or None
        self._limit = limit
        self._controller: Any = None
        self._disabled = False

    @property
    def one_thread(self) -> bool:
        """Whether BLAS is held to one thread now."""
        return self._limiter is not None

    @property
    def running(self) -> int:
        """Products running now."""
        return self._running

    @property
    def waiting(self) -> int:
        """Products waiting for one that runs on every core to finish."""
        return self._waiting

    def restore(self) -> None:
        """Restore the BLAS thread count in force before the gate set one, unless a product
        runs (then the gate restores it later, after :data:`ALONE_STREAK` products alone)."""
        with self._condition:
            if self._limiter is not None and not self._running:
                self._limiter.restore_original_limits()
                self._limiter = None

    def _set_one_thread(self) -> None:
        try:
            if self._limit is not None:
                self._limiter = self._limit()
                return
            if self._controller is None:
                from threadpoolctl import ThreadpoolController

                self._controller = ThreadpoolController()
            self._limiter = self._controller.limit(limits=1, user_api="blas")
        except Exception as error:  # any failure: products go through ungated
            self._disabled = True
            self._condition.notify_all()
            logger.warning(
                "cannot set the BLAS thread count (%s): concurrent searches share BLAS's own "
                "threads; install threadpoolctl (the local extra's) to hold each to one",
                " ".join(str(error).split()) or type(error).__name__,
            )

    @contextmanager
    def product(self) -> Iterator[None]:
        """Run the block (one BLAS product, or a few) under the gate."""
        if self._disabled:
            yield
            return
        with self._condition:
            overlapped = self._running > 0
            if overlapped:
                self._overlaps += 1
                self._alone = 0
                # one running on every core: wait for it, then both run on one thread each
                self._waiting += 1
                while self._running and self._limiter is None and not self._disabled:
                    self._condition.wait()
                self._waiting -= 1
                if self._limiter is None and not self._disabled:
                    self._set_one_thread()
            elif self._limiter is not None and self._alone >= ALONE_STREAK:
                self._limiter.restore_original_limits()
                self._limiter = None
            self._running += 1
            overlaps = self._overlaps
        try:
            yield
        finally:
            with self._condition:
                self._running -= 1
                if overlapped or self._overlaps != overlaps:
                    self._alone = 0
                else:
                    self._alone += 1
                if not self._running:
                    self._condition.notify_all()


BLAS_GATE = BlasGate()
"""The process's one gate: the BLAS thread count is process-wide."""


def blas_product() -> Any:
    """A context manager around one of the engine's BLAS products: see the module doc."""
    return BLAS_GATE.product()
