"""verl's ``verl.plugins`` entry point: registers agentgym's pieces in every process that imports verl.

verl imports this module while ``import verl`` runs, in the driver and in each Ray worker (the
trainer, the agent-loop workers), so the registries are filled where verl looks them up:

* the ``agentgym`` agent loop (``agent_loop``), selected by the rows' ``agent_name``;
* the ``vspo`` advantage estimator (``estimator``), selected by ``algorithm.adv_estimator=vspo``.

The VSPO replay buffer is not registered here: verl loads it from
``trainer.v1.sampler.custom_sampler`` (``pkg://agentgym.integrations.verl.sampler``).
verl swallows exceptions raised by plugins (it logs them at debug level), so ``agentgym train
--dry-run`` checks that both registrations are in place.
"""

from agentgym.integrations.verl import agent_loop, estimator  # noqa: F401

__all__: list[str] = []
