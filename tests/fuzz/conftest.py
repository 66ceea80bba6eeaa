"""Hypothesis profiles for the parser fuzz tests.

`ci` (the default, what `make test` runs): a fixed number of derandomized examples per
parser, so the suite is fast and gives the same inputs on every machine. `fuzz` (`make fuzz`,
HYPOTHESIS_PROFILE=fuzz): many more examples from a fresh random seed each run. Neither writes
an example database into the repository; a failure prints the input, which then becomes an
explicit @example or a plain regression test.
"""

from __future__ import annotations

import os
from typing import Any

from hypothesis import HealthCheck, Phase, settings

_COMMON: dict[str, Any] = {
    "deadline": None,
    "database": None,
    "suppress_health_check": [
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
    ],
}
settings.register_profile("ci", max_examples=60, derandomize=True, **_COMMON)
settings.register_profile(
    "fuzz",
    max_examples=int(os.environ.get("FUZZ_EXAMPLES", "2000")),
    derandomize=False,
    print_blob=True,
    **_COMMON,
)
# dev: the ci examples without shrinking, to see every crash quickly while fixing them
settings.register_profile(
    "dev",
    max_examples=60,
    derandomize=True,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    **_COMMON,
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
