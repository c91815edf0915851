"""A package whose blocking calls are typed only by declarations (issue 28): lines ending in
``# blocking`` are blocking calls in a coroutine, lines ending in ``# ok`` near misses."""
