#!/bin/sh
# A yosys that answers -V as the real one ($LOOM_TEST_YOSYS) does and refuses any synthesis: the
# hw-report record tests see whether a synthesis was asked for without spending minutes on one.
if [ "$1" = "-V" ]; then exec "$LOOM_TEST_YOSYS" -V; fi
echo "yosys_version_only.sh: asked for a synthesis"
exit 1
