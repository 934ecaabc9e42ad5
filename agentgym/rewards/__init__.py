"""Reward shapers (composable, declarative, scheduled); see the rewards issue."""
