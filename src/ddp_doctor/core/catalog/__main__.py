"""``python -m ddp_doctor.core.catalog --markdown | --thresholds``: print the generated docs."""

import sys

from ddp_doctor.core.catalog.docs import _main

sys.exit(_main())
