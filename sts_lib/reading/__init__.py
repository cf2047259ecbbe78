"""How the course reads the paper: its statements, one declared reading policy, verdicts and their confirmation.

:mod:`~sts_lib.reading.policy` names the axes the paper's words leave open and the combination rule;
:mod:`~sts_lib.reading.statements` records each statement of the paper (its words, what is measured, which readings
its words admit); :mod:`~sts_lib.reading.verdicts` gives a statement's verdict from the committed result documents;
:mod:`~sts_lib.reading.confirmation` holds a rule fixed after the runs to fresh seeds. It imports the core (and
:mod:`sts_lib.presentation.report` for a claim's words); nothing in the core imports it.
"""
