"""Bridges to training frameworks. Each integration imports its framework lazily.

``verl`` and ``trl`` each adapt one trainer; what both play an episode by sits here beside them and
imports neither: ``turns`` (the turn rules), ``stops`` (the tokens of a turn to keep, stop strings per engine) and
``search_r1_layout`` (Search-R1's token layout).
"""
