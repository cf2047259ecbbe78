"""How the course reads the paper: its statements, one declared reading policy, verdicts and their confirmation.

:mod:`~sts_lib.reading.policy` names the axes the paper's words leave open, the wording rules that open them and the
combination rule; :mod:`~sts_lib.reading.thresholds` every threshold with its tolerance band;
:mod:`~sts_lib.reading.statements` records each statement of the paper (its words, its wording, what is measured);
:mod:`~sts_lib.reading.verdicts` the verdict records and the claims that decide a reading;
:mod:`~sts_lib.reading.decide` a statement's verdict (readings combined, held against the bands);
:mod:`~sts_lib.reading.reasons` the number behind it;
:mod:`~sts_lib.reading.confirmation` holds a rule fixed after the runs to fresh seeds;
:mod:`~sts_lib.reading.floor_validation` checks the floor test out of sample. It imports the core only (a claim's
numbers are written by :mod:`sts_lib.claim_text`), never :mod:`sts_lib.presentation`, which shows it; nothing in the
core imports it.
"""
