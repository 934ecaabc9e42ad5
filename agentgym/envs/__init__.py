"""agentgym's environments. Each subpackage is one env family."""
