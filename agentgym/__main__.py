"""``python -m agentgym``: the ``agentgym`` console script."""

from agentgym.cli import main

if __name__ == "__main__":  # a module walk (tests, docs tools) may import this without running it
    main()
