"""Bridges to training frameworks. Each integration imports its framework lazily."""
