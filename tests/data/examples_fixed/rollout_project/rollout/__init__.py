"""Example rollout project used by shutdown-lint's README and tests."""
