"""Hypotheses that check themselves: a condition over live signals.

``expr`` compiles a check once (simpleeval over a vetted AST whose signal
references are replaced by plain names); ``catalogue`` lists the signals;
``signals`` reads their values from the session state per scope;
``verdicts`` turns the condition into supported / refuted / pending /
no data / error each second; ``pack`` loads ``[[hypotheses]]`` files.
Textual-free, like the rest of ``core``.
"""
