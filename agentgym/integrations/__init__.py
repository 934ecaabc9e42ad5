"""Bridges to training frameworks. Each integration imports its framework lazily.

``verl`` and ``trl`` each adapt one trainer; what both play an episode by sits here beside them and
imports neither: ``turns`` (the turn rules), ``stops`` (where a turn ends, ``TurnCut``) and
``search_r1_layout`` (Search-R1's token layout).
"""
