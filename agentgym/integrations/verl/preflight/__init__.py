"""What runs before a verl training run, never inside one: the checks that a run is ready.

* ``checks`` and ``dryrun``: ``agentgym train RECIPE --dry-run``, the composed config checked and a
  few rows rehearsed through the agent loop's path (no Ray, no GPU);
* ``selftest`` (with ``selftest_tq``, ``selftest_async`` and ``selftest_launch``): ``agentgym verl
  selftest``, verl's real rollout, update, TransferQueue and launcher on CPU with a tiny model;
* ``learning``: the selftest's path run for a dozen steps, a tiny model learning SearchQA-v0 through verl's
  own advantage and loss code, beside controls that must learn less (the learning tests and
  ``examples/learning_curves_verl.py``).

The runtime plugin that verl loads (agent loop, estimator, samplers) lives beside this package, in
``agentgym.integrations.verl``, and imports nothing from it.
"""
