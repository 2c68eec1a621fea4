"""The machinery under the public API: the provider, its lanes, the policy, counters, checks."""
