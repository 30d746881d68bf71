"""Real heavy-tailed series shipped with the package, for ``jb.noise.empirical`` (no download).

- :func:`sp500_returns`: daily simple returns (in %) of ten S&P 500 stocks, 2013-02-11 to 2018-02-06,
  1257 trading days, as bundled with ``river`` (``river.datasets.SP500Stocks``, BSD-3-Clause; the
  prices are the public-domain Kaggle "S&P 500 stock data" set). Excess kurtosis per stock 3.3 (JNJ)
  to 19 (WMT); their Pearson kurtosis 6–22.
- :func:`rand_doctor_visits`: outpatient visits to a doctor per person-year, 20 190 records of the RAND
  Health Insurance Experiment, as bundled with ``statsmodels`` (``statsmodels.datasets.randhie``,
  public domain; Cameron & Trivedi 2005). Mean 2.86, s.d. 4.50, excess kurtosis 42, 31 % zeros.

Each file is the source's own values (``sp500_returns.csv.gz`` is river's file unchanged;
``rand_doctor_visits.csv.gz`` is the ``mdvis`` column of statsmodels' ``randhie.csv``); provenance and
licences are in ``LICENSE-DATA.md`` beside them.
"""

from __future__ import annotations

import functools
import gzip
from importlib import resources

import numpy as np

SP500_TICKERS = ("AAPL", "AMZN", "IBM", "INTC", "JNJ", "JPM", "KO", "MSFT", "WMT", "XOM")


@functools.cache
def _table(filename: str) -> tuple[tuple[str, ...], np.ndarray]:
    with resources.files(__name__).joinpath(filename).open("rb") as raw, gzip.open(raw, "rt") as text:
        header = tuple(text.readline().strip().split(","))
        values = np.loadtxt(text, delimiter=",", dtype=str, ndmin=2)
    return header, values


def sp500_returns(tickers: str | tuple[str, ...] | list[str] | None = None) -> np.ndarray:
    """Daily returns in % `[1257, len(tickers)]` (float64), columns in the order asked; one ticker
    (a string) gives `[1257]`. Default: all ten, in :data:`SP500_TICKERS` order."""
    header, values = _table("sp500_returns.csv.gz")
    one = isinstance(tickers, str)
    wanted = [tickers] if one else list(SP500_TICKERS if tickers is None else tickers)
    unknown = [t for t in wanted if t not in SP500_TICKERS]
    if unknown or not wanted:
        raise ValueError(f"tickers={tickers!r} is invalid: choose from {', '.join(SP500_TICKERS)}")
    out = values[:, [header.index(t) for t in wanted]].astype(np.float64)
    return out[:, 0] if one else out


def sp500_dates() -> np.ndarray:
    """The trading days of :func:`sp500_returns` `[1257]` (``datetime64[D]``)."""
    _, values = _table("sp500_returns.csv.gz")
    return values[:, 0].astype("datetime64[D]")


def rand_doctor_visits() -> np.ndarray:
    """Outpatient doctor visits per person-year `[20190]` (float64 counts, 0–77)."""
    _, values = _table("rand_doctor_visits.csv.gz")
    return values[:, 0].astype(np.float64)


__all__ = ["SP500_TICKERS", "rand_doctor_visits", "sp500_dates", "sp500_returns"]
