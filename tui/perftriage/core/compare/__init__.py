"""Before/after: did the change help? (``perftriage compare``, the cockpit's
baseline, the report's first table).

- :mod:`.slices` — ``NAME``, ``NAME#N``, ``NAME@FROM-TO`` and the window they name;
- :mod:`.recording` — one pass over the events: per-second readings per metric,
  host and GPU, and the timelines of what else may have changed;
- :mod:`.stats` — medians, Mann–Whitney U (scipy.stats), the effect gate, verdicts;
- :mod:`.changepoints` — where a series changes level (phases, straddling warnings);
- :mod:`.profile_diff` — step time, idle and kernels per step between two captures;
- :mod:`.changes` — server arguments, versions, hypotheses between the slices;
- :mod:`.compare` — the comparison (the documented JSON shape);
- :mod:`.render` — the same as text and Markdown.
"""
